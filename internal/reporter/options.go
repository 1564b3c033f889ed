// Package reporter is the `report` mode of the provider binary: on one
// control-plane node, probe every local KMS v2 plugin each tick and write
// the node's KMSHealthReporter_<node> condition on the target object. It
// starts without the API server, keeps probing through outages and drops a
// write it cannot deliver instead of queueing it.
package reporter

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// Options are the report mode's flags. Validate runs before anything starts.
type Options struct {
	Kubeconfig             string
	NodeName               string
	Sockets                []string // --kms-socket, repeatable
	SocketDir              string
	Interval               time.Duration
	ReadTimeout            time.Duration
	WriteTimeout           time.Duration
	Target                 string
	ReportFormat           string
	HealthProbeBindAddress string
	Metrics                incluster.MetricsOptions
}

// AddFlags registers the flags on fs, with defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means in-cluster configuration")
	fs.StringVar(&o.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name, from the downward API (default $NODE_NAME)")
	fs.StringArrayVar(&o.Sockets, "kms-socket", nil, "a KMS v2 plugin endpoint, unix:///var/run/kmsplugin/kms-<keyID>.sock; repeat for each plugin")
	fs.StringVar(&o.SocketDir, "socket-dir", "", "probe every kms-<keyID>.sock in this directory instead of --kms-socket (listed each tick)")
	fs.DurationVar(&o.Interval, "interval", kmshealth.DefaultInterval, "probe and write every interval, with 10% jitter")
	fs.DurationVar(&o.ReadTimeout, "read-timeout", 0, "timeout of each plugin's Status call; 0 follows --interval (5s at the default 30s, a quarter of a shorter interval)")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", 0, "timeout of each condition write, a write that misses it is dropped; 0 follows --interval (10s at the default 30s, half a shorter interval)")
	fs.StringVar(&o.Target, "target", kmshealth.DefaultTarget().String(), "group/version/resource/name of the cluster-scoped object whose status.conditions receive the report")
	fs.StringVar(&o.ReportFormat, "report-format", string(kmshealth.FormatConditions), fmt.Sprintf("how the report is written on the target: %q (a KMSHealthReporter_<node> condition in status.conditions) or %q (OpenShift's status.encryptionStatus.healthReports entries, for an operator.openshift.io/v1 target such as kubeapiservers/cluster)", kmshealth.FormatConditions, kmshealth.FormatOpenShiftTyped))
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8082", `address for /healthz; "0" disables it`)
	o.Metrics.AddFlags(fs, "0")
}

// Validate reports every bad flag at once, each naming the flag.
func (o *Options) Validate() error {
	var errs []error
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		}
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name: required (set NODE_NAME from the downward API: fieldRef spec.nodeName)"))
	} else if err := kmshealth.ValidateNodeName(o.NodeName); err != nil {
		errs = append(errs, fmt.Errorf("--node-name: %w", err))
	}
	switch {
	case len(o.Sockets) == 0 && o.SocketDir == "":
		errs = append(errs, fmt.Errorf("--kms-socket or --socket-dir: one is required, e.g. --kms-socket=unix://%s/kms-1.sock", kmshealth.SocketDir))
	case len(o.Sockets) > 0 && o.SocketDir != "":
		errs = append(errs, errors.New("--kms-socket and --socket-dir: use one, not both"))
	}
	if err := kmshealth.CheckSockets(o.Sockets); err != nil {
		errs = append(errs, fmt.Errorf("--kms-socket: %w", err))
	}
	flags := map[kmshealth.Timing]string{kmshealth.Interval: "--interval", kmshealth.ReadTimeout: "--read-timeout", kmshealth.WriteTimeout: "--write-timeout"}
	for _, e := range kmshealth.CheckTimings(o.Interval, o.readTimeout(), o.writeTimeout()) {
		errs = append(errs, fmt.Errorf("%s=%w", flags[e.Timing], e.Err))
	}
	if _, err := kmshealth.ParseTarget(o.Target); err != nil {
		errs = append(errs, fmt.Errorf("--target: %w", err))
	}
	if _, err := kmshealth.ParseReportFormat(o.ReportFormat); err != nil {
		errs = append(errs, fmt.Errorf("--report-format: %w", err))
	}
	for flagName, addr := range map[string]string{"health-probe-bind-address": o.HealthProbeBindAddress, "metrics-bind-address": o.Metrics.BindAddress} {
		if err := incluster.ValidateBindAddress(flagName, addr); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readTimeout is --read-timeout, or the default that fits --interval.
func (o *Options) readTimeout() time.Duration {
	if o.ReadTimeout == 0 {
		r, _ := kmshealth.DefaultTimeouts(o.Interval)
		return r
	}
	return o.ReadTimeout
}

// writeTimeout is --write-timeout, or the default that fits --interval.
func (o *Options) writeTimeout() time.Duration {
	if o.WriteTimeout == 0 {
		_, w := kmshealth.DefaultTimeouts(o.Interval)
		return w
	}
	return o.WriteTimeout
}

// sockets returns the sockets to probe this tick.
func (o *Options) sockets() ([]kmshealth.Socket, error) {
	if o.SocketDir != "" {
		return kmshealth.SocketsInDir(o.SocketDir)
	}
	out := make([]kmshealth.Socket, 0, len(o.Sockets))
	for _, s := range o.Sockets {
		sock, err := kmshealth.ParseSocket(s)
		if err != nil {
			return nil, err
		}
		out = append(out, sock)
	}
	kmshealth.SortSockets(out)
	return out, nil
}
