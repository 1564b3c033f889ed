package reporter

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) Options {
	t.Helper()
	t.Setenv("NODE_NAME", "")
	var o Options
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestValidate(t *testing.T) {
	ok := []string{"--node-name=cp-1", "--kms-socket=unix:///var/run/kmsplugin/kms-1.sock"}
	tests := []struct {
		name string
		args []string
		want []string // substrings of the error; none means valid
	}{
		{"defaults with one socket", ok, nil},
		{"two sockets", append(ok, "--kms-socket=unix:///var/run/kmsplugin/kms-2.sock"), nil},
		{"socket dir", []string{"--node-name=cp-1", "--socket-dir=/var/run/kmsplugin"}, nil},
		{"custom target", append(ok, "--target=operator.openshift.io/v1/kubeapiservers/cluster"), nil},
		{"no node name", []string{"--kms-socket=unix:///var/run/kmsplugin/kms-1.sock"}, []string{"--node-name: required", "NODE_NAME"}},
		{"bad node name", []string{"--node-name=CP_1", "--socket-dir=/x"}, []string{"--node-name"}},
		{"no socket", []string{"--node-name=cp-1"}, []string{"--kms-socket or --socket-dir"}},
		{"both", append(ok, "--socket-dir=/var/run/kmsplugin"), []string{"use one, not both"}},
		{"socket outside the pattern", []string{"--node-name=cp-1", "--kms-socket=unix:///tmp/kms-1.sock"}, []string{"--kms-socket", `kms-(\d+)\.sock`}},
		{"socket not a URL", []string{"--node-name=cp-1", "--kms-socket=/var/run/kmsplugin/kms-1.sock"}, []string{"--kms-socket"}},
		{"duplicate keyID", append(ok, "--kms-socket=unix:///var/run/kmsplugin/kms-01.sock"), []string{"keyID 1 is already given"}},
		{"interval too short", append(ok, "--interval=1s", "--read-timeout=500ms", "--write-timeout=500ms"), []string{"--interval=1s: must be at least 5s"}},
		{"read timeout not under interval", append(ok, "--interval=5s", "--read-timeout=5s", "--write-timeout=1s"), []string{"--read-timeout=5s"}},
		{"write timeout not under interval", append(ok, "--interval=8s", "--write-timeout=10s"), []string{"--write-timeout=10s"}},
		{"default timeouts fit the shortest interval", append(ok, "--interval=5s"), nil},
		{"bad target", append(ok, "--target=kmshealths/cluster"), []string{"--target", "group/version/resource/name"}},
		{"typed report format", append(ok, "--report-format=openshift-typed", "--target=operator.openshift.io/v1/kubeapiservers/cluster"), nil},
		{"bad report format", append(ok, "--report-format=typed"), []string{"--report-format", `"typed" is not a report format`, `"conditions"`, `"openshift-typed"`}},
		{"bad address", append(ok, "--health-probe-bind-address=8082"), []string{"--health-probe-bind-address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.args...)
			err := o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSocketsOrdered(t *testing.T) {
	o := parse(t, "--node-name=cp-1", "--kms-socket=unix:///var/run/kmsplugin/kms-10.sock", "--kms-socket=unix:///var/run/kmsplugin/kms-2.sock")
	s, err := o.sockets()
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || s[0].KeyID != "2" || s[1].KeyID != "10" || s[0].Path != "/var/run/kmsplugin/kms-2.sock" {
		t.Errorf("sockets %+v, want kms-2 then kms-10", s)
	}
}
