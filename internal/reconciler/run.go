package reconciler

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Main is `terraform-provider-kmshealth reconcile [flags]`; it returns the
// process exit code.
func Main(version string, args []string) int {
	var o Options
	if !incluster.ParseFlags("reconcile", args, &o) {
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "kmshealth-reconciler", "version", version)
	return incluster.RunUntilSignal(log, "reconciler", func(ctx context.Context) error { return Run(ctx, o, version, log) })
}

// Run runs the reconciler until ctx ends, then releases the Lease.
func Run(ctx context.Context, o Options, version string, log *slog.Logger) error {
	m := newMetrics()
	cfg, err := incluster.RESTConfig(o.Kubeconfig, "kmshealth-reconciler/"+version)
	if err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(kube.CountRequests(m.countRequests))
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	agg, err := aggregator.NewForConfig(cfg)
	if err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiregv1.AddToScheme(scheme)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: core.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	events := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "kmshealth-reconciler"})

	ctl := newCABundleController(core, agg, events, m, o.FieldManager, log)
	defer ctl.shutdown()
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kmshealth_cabundle_source_watches",
		Help: "Source Secrets/ConfigMaps watched (one field-selected watch per object named by an APIService).",
	}, func() float64 { return float64(ctl.sources.count()) }))
	ctl.start(ctx)
	ready := ctl.hasSynced
	var kms *kmsAggregator
	if o.KMSAggregator {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		meta, err := metadata.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if kms, err = newKMSAggregator(dyn, meta, o, m, log); err != nil {
			return err
		}
		defer kms.shutdown()
		kms.start(ctx)
		ready = func() bool { return ctl.hasSynced() && kms.hasSynced() }
	}

	if err := incluster.Serve(ctx, o.HealthProbeBindAddress, healthMux(ready), log); err != nil {
		return err
	}
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	if err := incluster.Serve(ctx, o.MetricsBindAddress, metricsMux, log); err != nil {
		return err
	}
	log.Info("started", "leaderElect", o.LeaderElect, "identity", o.Identity)

	lead := func(ctx context.Context) {
		m.leader.Set(1)
		defer m.leader.Set(0)
		if kms != nil {
			go kms.run(ctx)
		}
		ctl.run(ctx, o.Workers)
	}
	if !o.LeaderElect {
		lead(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(o.LeaseName, o.Namespace),
		Client:     core.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	// Losing the lease (e.g. while the API server restarts) makes this
	// replica a candidate again instead of exiting: its caches stay warm.
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   o.LeaseDuration,
			RenewDeadline:   o.RenewDeadline,
			RetryPeriod:     o.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            o.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					log.Info("became leader", "identity", o.Identity)
					lead(ctx)
				},
				OnStoppedLeading: func() { log.Info("stopped leading", "identity", o.Identity) },
				OnNewLeader:      func(id string) { log.Info("leader", "identity", id) },
			},
		})
	}
	return nil
}

func healthMux(ready func() bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

func metaFor(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}
