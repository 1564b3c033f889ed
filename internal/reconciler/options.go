// Package reconciler is the `reconcile` mode of the provider binary: watch-
// driven controllers that keep what the provider applied true between
// applies, behind leader election, with health probes and Prometheus
// metrics. The controllers call the same internal/<concern> functions, with
// the same field manager, as the Terraform resources.
package reconciler

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Options are the reconcile mode's flags. Validate runs before anything
// starts.
type Options struct {
	Kubeconfig             string
	Namespace              string // where the leader-election Lease lives
	LeaderElect            bool
	LeaseName              string
	LeaseDuration          time.Duration
	RenewDeadline          time.Duration
	RetryPeriod            time.Duration
	Identity               string
	Metrics                incluster.MetricsOptions
	HealthProbeBindAddress string
	FieldManager           string
	Workers                int
	// RecordConfigMap names the ConfigMap in Namespace that records what
	// the reconciler keeps (kmshealth_reconciler writes it): the input of
	// every pattern but the KMS aggregator; "" keeps none of it.
	RecordConfigMap string
	// The patterns' own flags (patterns.go).
	patternOptions
}

// DefaultNamespace is used when neither --namespace nor POD_NAMESPACE is set.
const DefaultNamespace = "kmshealth-system"

// DefaultRecordConfigMap is the record kmshealth_reconciler writes under
// its default name.
const DefaultRecordConfigMap = "kmshealth-reconciler-record"

// AddFlags registers the flags on fs, with defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = DefaultNamespace
	}
	host, _ := os.Hostname()
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means in-cluster configuration")
	fs.StringVar(&o.Namespace, "namespace", ns, "namespace of the leader-election Lease and the record (default $POD_NAMESPACE)")
	fs.StringVar(&o.RecordConfigMap, "record-configmap", DefaultRecordConfigMap, `ConfigMap in --namespace that records what to keep (caBundles and their sources, TLS profile ConfigMaps, rbac proxy sidecars), written by kmshealth_reconciler; "" keeps none of them`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader on a Lease; only the leader writes")
	fs.StringVar(&o.LeaseName, "leader-elect-lease-name", "kmshealth-reconciler", "name of the leader-election Lease")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a lease is valid without renewal; a dead leader is replaced within this")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it steps down")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "interval between leader-election attempts")
	fs.StringVar(&o.Identity, "leader-elect-identity", host+"_"+fmt.Sprint(os.Getpid()), "this replica's identity in the Lease")
	o.Metrics.AddFlags(fs, ":8443")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", `address for /healthz and /readyz; "0" disables it`)
	fs.StringVar(&o.FieldManager, "field-manager", cabundle.DefaultFieldManager, "server-side apply field manager of the caBundles kept (APIServices, webhooks, CRD conversion): the field_manager of the kmshealth_*_cabundle resources; every other pattern writes as "+kube.FieldManager+", as its resource does")
	fs.IntVar(&o.Workers, "workers", 2, "concurrent reconciles")
	for _, p := range Patterns {
		if p.AddFlags != nil {
			p.AddFlags(o, fs)
		}
	}
	// Before the record became every pattern's input, the TLS profile and
	// rbac proxy controllers took their lists as flags. A Deployment of
	// that shape keeps running during the roll to the new one: accepted,
	// ignored and hidden for one release.
	for _, name := range RetiredFlags {
		fs.StringSlice(name, nil, "ignored: what to keep is read from --record-configmap")
		_ = fs.MarkDeprecated(name, "what to keep is read from --record-configmap; this flag is ignored and will be removed")
	}
}

// RetiredFlags are accepted and ignored (see AddFlags).
var RetiredFlags = []string{"tls-profile-configmaps", "rbac-proxy-configmaps"}

// Validate reports every bad flag at once, each naming the flag.
func (o *Options) Validate() error {
	var errs []error
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		}
	}
	if o.LeaderElect || o.RecordConfigMap != "" { // the Lease and the record live there
		for _, m := range validation.IsDNS1123Label(o.Namespace) {
			errs = append(errs, fmt.Errorf("--namespace=%q: %s", o.Namespace, m))
		}
	}
	if o.LeaderElect {
		for _, m := range validation.IsDNS1123Subdomain(o.LeaseName) {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-name=%q: %s", o.LeaseName, m))
		}
		if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) > --leader-elect-renew-deadline (%s) > --leader-elect-retry-period (%s) > 0 must hold",
				o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
		}
		if o.Identity == "" {
			errs = append(errs, errors.New("--leader-elect-identity: must not be empty"))
		}
	}
	for flagName, addr := range map[string]string{"metrics-bind-address": o.Metrics.BindAddress, "health-probe-bind-address": o.HealthProbeBindAddress} {
		if err := incluster.ValidateBindAddress(flagName, addr); err != nil {
			errs = append(errs, err)
		}
	}
	if o.RecordConfigMap != "" {
		for _, m := range validation.IsDNS1123Subdomain(o.RecordConfigMap) {
			errs = append(errs, fmt.Errorf("--record-configmap=%q: %s", o.RecordConfigMap, m))
		}
	}
	if o.FieldManager == "" || len(o.FieldManager) > 128 {
		errs = append(errs, fmt.Errorf("--field-manager=%q: must be 1 to 128 characters", o.FieldManager))
	}
	for _, p := range Patterns {
		if p.Validate != nil {
			errs = append(errs, p.Validate(o)...)
		}
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers=%d: must be at least 1", o.Workers))
	}
	return errors.Join(errs...)
}
