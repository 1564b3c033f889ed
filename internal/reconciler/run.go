package reconciler

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// Main is `terraform-provider-kmshealth reconcile [flags]`; it returns the
// process exit code.
func Main(version string, args []string) int {
	var o Options
	if code := incluster.Parse("reconcile", args, &o); code >= 0 {
		return code
	}
	lessHeadroom()
	if soft := limitMemory("/"); soft > 0 {
		klog.InfoS("Soft memory limit from the container's", "GOMEMLIMIT", soft, "share", memoryLimitShare)
	}
	ctrllog.SetLogger(klog.NewKlogr())
	klog.InfoS("Starting", "component", "kmshealth-reconciler", "version", version)
	return incluster.RunUntilSignal("reconciler", func(ctx context.Context) error { return Run(ctx, o, version) })
}

// gcPercent is the reconciler's GOGC unless the environment sets one.
// Its heap is nearly all long-lived — a stream and a cached object per
// kept object — and it allocates almost nothing while idle, so the
// collector's headroom above the live heap (100% by default, all of it
// in RSS once reached) is memory a kept object pays for and CPU it does
// not save: at 25% a collection comes after a quarter as much
// allocation, a few per restore at most, and more while a burst of lists
// (start, a grown record) decodes. At 1,000 kept, 25 against 50 in one
// paired run: RssAnon 34.6 against 46.4 MiB (BENCHMARKS.md "Reconciler
// memory at 1,000 kept"; ARCHITECTURE.md "What a watch costs").
const gcPercent = 25

// lessHeadroom sets gcPercent unless GOGC is set.
func lessHeadroom() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// requests counts what this process sends to the API server, by verb and
// resource (controller-runtime's rest_client_requests_total has neither
// the resource nor WATCH apart from GET).
var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kmshealth_kube_api_requests_total",
	Help: "Requests this process sent to the Kubernetes API server, by verb (WATCH separated from GET/LIST) and resource.",
}, []string{"verb", "resource"})

func init() { controller.MustRegister(requests) }

// Clients are the API clients the controllers use. The typed ones are
// built by package clientset with only the groups the patterns call, never
// a whole kubernetes.Clientset: a binary that builds none links none of the
// other groups' client code (BENCHMARKS.md, "Slim in-cluster build").
type Clients struct {
	Config     *rest.Config
	Core       clientset.Core
	Aggregator clientset.Aggregator
	Dynamic    dynamic.Interface
	Metadata   metadata.Interface
	// Raw is the unversioned REST client the dynamic and metadata kinds'
	// watches read (controller.NewRawClient); Dynamic is built on it.
	Raw        rest.Interface
	Extensions clientset.Extensions
}

func newClients(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(kube.CountRequests(func(verb, resource string) { requests.WithLabelValues(verb, resource).Inc() }))
	c := &Clients{Config: cfg}
	var err error
	if c.Core, err = clientset.NewCore(cfg); err != nil {
		return nil, err
	}
	if c.Aggregator, err = clientset.NewAggregator(cfg); err != nil {
		return nil, err
	}
	raw, err := controller.NewRawClient(cfg)
	if err != nil {
		return nil, err
	}
	c.Raw, c.Dynamic = raw, dynamic.New(raw)
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Extensions, err = clientset.NewExtensions(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs the reconciler until ctx ends, then releases the Lease: one
// controller for each of Patterns that o enables.
func Run(ctx context.Context, o Options, version string) error {
	cfg, err := incluster.RESTConfig(o.Kubeconfig, "kmshealth-reconciler/"+version)
	if err != nil {
		return err
	}
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	var controllers []*controller.Controller
	var enablers []string
	for _, p := range Patterns {
		if !slices.Contains(enablers, p.EnabledBy) {
			enablers = append(enablers, p.EnabledBy)
		}
		if !p.Enabled(o) {
			continue
		}
		ctl, err := p.New(c, o)
		if err != nil {
			return fmt.Errorf("%s controller: %w", p.Name, err)
		}
		controllers = append(controllers, ctl)
	}
	if len(controllers) == 0 {
		last := len(enablers) - 1
		return fmt.Errorf("nothing to reconcile: set %s or %s", strings.Join(enablers[:last], ", "), enablers[last])
	}
	klog.InfoS("Started", "leaderElect", o.LeaderElect, "identity", o.Identity, "controllers", len(controllers))
	return controller.Run(ctx, controller.ManagerOptions{
		Config:                 c.Config,
		Scheme:                 scheme(),
		LeaderElect:            o.LeaderElect,
		LeaseNamespace:         o.Namespace,
		LeaseName:              o.LeaseName,
		Identity:               o.Identity,
		LeaseDuration:          o.LeaseDuration,
		RenewDeadline:          o.RenewDeadline,
		RetryPeriod:            o.RetryPeriod,
		Metrics:                o.Metrics,
		HealthProbeBindAddress: o.HealthProbeBindAddress,
		Workers:                o.Workers,
		OnSynced:               releaseBinaryPages,
	}, controllers...)
}

// releaseBinaryPages runs at the end of each burst of lists (at start,
// and when the record grows), when every watch has listed
// (controller.ManagerOptions.OnSynced) and the process goes back to idle:
// it unmaps the pages of the binary that initialisation and the lists
// touched (incluster.ReleaseBinaryPages), and what the reconciler runs on
// from then on is mapped again as it is touched. (Returning the lists'
// garbage to the OS too, debug.FreeOSMemory, was measured: RssAnon was
// back where it was after ten restores and 20 s idle.)
func releaseBinaryPages() {
	n, err := incluster.ReleaseBinaryPages()
	if err != nil {
		klog.ErrorS(err, "Could not release the binary's pages; going on")
		return
	}
	klog.V(2).InfoS("Released the binary's pages after the watches listed", "releasedMappingBytes", n)
}

// scheme knows every kind an Event can be about (each pattern's Subject:
// APIServices, webhook configurations, CRDs, ConfigMaps, Deployments,
// StatefulSets and DaemonSets), and no other: the Manager needs it for
// nothing else, and client-go's scheme of every built-in group, which
// the process already holds twice (client-go's and controller-runtime's
// own copy, built at initialisation), would be a third copy of about a
// MiB of maps (BENCHMARKS.md "Reconciler memory at 1,000 kept").
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, admissionregistrationv1.AddToScheme,
		apiregv1.AddToScheme, apiextensionsv1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}
