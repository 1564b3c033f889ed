package reconciler

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	valid := func() Options {
		var o Options
		o.Bind(flag.NewFlagSet("t", flag.ContinueOnError))
		o.Namespace = "kmshealth-system"
		return o
	}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr []string // substrings, each naming the flag
	}{
		{name: "defaults are valid", mutate: func(*Options) {}},
		{name: "metrics disabled", mutate: func(o *Options) { o.MetricsBindAddress = "0" }},
		{name: "bad namespace", mutate: func(o *Options) { o.Namespace = "Not_OK" }, wantErr: []string{`--namespace="Not_OK"`}},
		{name: "namespace ignored without leader election", mutate: func(o *Options) { o.Namespace = "Not_OK"; o.LeaderElect = false }},
		{name: "lease timings out of order", mutate: func(o *Options) { o.RenewDeadline = 20 * time.Second }, wantErr: []string{"--leader-elect-lease-duration (15s) > --leader-elect-renew-deadline (20s)"}},
		{name: "zero retry period", mutate: func(o *Options) { o.RetryPeriod = 0 }, wantErr: []string{"--leader-elect-retry-period (0s) > 0"}},
		{name: "address without port", mutate: func(o *Options) { o.HealthProbeBindAddress = "localhost" }, wantErr: []string{`--health-probe-bind-address="localhost"`}},
		{name: "missing kubeconfig file", mutate: func(o *Options) { o.Kubeconfig = "/does/not/exist" }, wantErr: []string{"--kubeconfig: stat /does/not/exist"}},
		{name: "no workers", mutate: func(o *Options) { o.Workers = 0 }, wantErr: []string{"--workers=0"}},
		{name: "empty field manager", mutate: func(o *Options) { o.FieldManager = "" }, wantErr: []string{`--field-manager=""`}},
		{
			name:    "every problem at once",
			mutate:  func(o *Options) { o.Workers, o.FieldManager, o.MetricsBindAddress = 0, "", "x" },
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
