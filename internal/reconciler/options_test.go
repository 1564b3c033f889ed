package reconciler

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestRetiredFlagsAccepted: a Deployment written before the record became
// every pattern's input passes the TLS and rbac proxy lists as flags; the
// new binary must start with them during the roll (and ignore them).
func TestRetiredFlagsAccepted(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--tls-profile-configmaps=app/tls", "--rbac-proxy-configmaps=app/kmshealth-rbac-proxy-deployment-api"}); err != nil {
		t.Fatalf("the retired flags do not parse: %v", err)
	}
	o.Namespace = "kmshealth-system"
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate() with the retired flags = %v, want nil", err)
	}
	for _, name := range RetiredFlags {
		if f := fs.Lookup(name); f == nil || !f.Hidden || f.Deprecated == "" {
			t.Errorf("--%s: want a hidden, deprecated flag, got %+v", name, f)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	valid := func() Options {
		var o Options
		o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
		o.Namespace = "kmshealth-system"
		return o
	}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr []string // substrings, each naming the flag
	}{
		{name: "defaults are valid", mutate: func(*Options) {}},
		{name: "metrics disabled", mutate: func(o *Options) { o.Metrics.BindAddress = "0" }},
		{name: "bad namespace", mutate: func(o *Options) { o.Namespace = "Not_OK" }, wantErr: []string{`--namespace="Not_OK"`}},
		{name: "namespace ignored without leader election or record", mutate: func(o *Options) { o.Namespace = "Not_OK"; o.LeaderElect = false; o.RecordConfigMap = "" }},
		{name: "namespace holds the record", mutate: func(o *Options) { o.Namespace = "Not_OK"; o.LeaderElect = false }, wantErr: []string{`--namespace="Not_OK"`}},
		{name: "bad record name", mutate: func(o *Options) { o.RecordConfigMap = "Bad_Name" }, wantErr: []string{`--record-configmap="Bad_Name"`}},
		{name: "lease timings out of order", mutate: func(o *Options) { o.RenewDeadline = 20 * time.Second }, wantErr: []string{"--leader-elect-lease-duration (15s) > --leader-elect-renew-deadline (20s)"}},
		{name: "zero retry period", mutate: func(o *Options) { o.RetryPeriod = 0 }, wantErr: []string{"--leader-elect-retry-period (0s) > 0"}},
		{name: "address without port", mutate: func(o *Options) { o.HealthProbeBindAddress = "localhost" }, wantErr: []string{`--health-probe-bind-address="localhost"`}},
		{name: "missing kubeconfig file", mutate: func(o *Options) { o.Kubeconfig = "/does/not/exist" }, wantErr: []string{"--kubeconfig: stat /does/not/exist"}},
		{name: "no workers", mutate: func(o *Options) { o.Workers = 0 }, wantErr: []string{"--workers=0"}},
		{name: "empty field manager", mutate: func(o *Options) { o.FieldManager = "" }, wantErr: []string{`--field-manager=""`}},
		{
			name:    "every problem at once",
			mutate:  func(o *Options) { o.Workers, o.FieldManager, o.Metrics.BindAddress = 0, "", "x" },
			wantErr: []string{"--workers=0", `--field-manager=""`, `--metrics-bind-address="x"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mutate(&o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

// TestCommandLine runs the real mode's command-line handling: stray
// arguments are an error naming them, and a boolean flag never swallows
// the next argument.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"stray argument", []string{"--workers=4", "extra"}, []string{`unexpected argument(s) "extra"`}},
		{"stray argument after a space-separated value", []string{"--workers", "4", "extra"}, []string{`"extra"`}},
		{"boolean with a separate value", []string{"--leader-elect", "false", "--workers=4"}, []string{`unexpected argument(s) "false"`, "never --name false"}},
		{"unknown flag", []string{"--no-such-flag"}, []string{"unknown flag: --no-such-flag"}},
		{"bad logging format", []string{"--logging-format=xml"}, []string{"logging"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReconcileMain$")
			cmd.Env = append(os.Environ(), "KMSHEALTH_HELPER_ARGS="+strings.Join(tt.args, "\x1f"))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2; output:\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output %q does not contain %q", out, w)
				}
			}
		})
	}
}

// TestHelperReconcileMain is the child process of TestCommandLine: it runs
// Main with the arguments it is given and exits with its code.
func TestHelperReconcileMain(t *testing.T) {
	args, ok := os.LookupEnv("KMSHEALTH_HELPER_ARGS")
	if !ok {
		return // not a child: nothing to do
	}
	os.Exit(Main("test", strings.Split(args, "\x1f")))
}
