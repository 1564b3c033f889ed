// Command cainjector runs cert-manager's CA injector (the released module
// github.com/cert-manager/cert-manager, package pkg/controller/cainjector:
// its reconcilers, sources, indexers and watches, unchanged) for the
// benchmark's peer row (`go run ./internal/cmd/bench peer`).
//
// Why a wrapper: cert-manager's command lives in the nested module
// github.com/cert-manager/cert-manager/cmd/cainjector, which the Go module
// proxy does not serve (no version of it is listed). Its Run is a
// controller-runtime Manager plus cainjector.RegisterAllInjectors; this main
// builds the same Manager with the same options that shape memory and
// requests (Secrets never cached by the client, only their metadata
// watched, leader election on a Lease with cainjector's default timings)
// and registers the same injectors. What it leaves out is what the bench
// does not use: the config-file loader, feature gates, pprof and a TLS
// metrics listener.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
)

type options struct {
	kubeconfig     string
	leaderElect    bool
	leaseNamespace string
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
	metricsAddress string
	certificates   bool
	apiServices    bool
	webhooks       bool
	crds           bool
	namespace      string
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("cainjector", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig (required)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run leader election on a Lease, as cainjector does by default")
	fs.StringVar(&o.leaseNamespace, "leader-election-namespace", "kube-system", "namespace of the leader-election Lease")
	// cert-manager's defaults for its components' leader election.
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 60*time.Second, "Lease duration")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 40*time.Second, "renew deadline")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 15*time.Second, "retry period")
	fs.StringVar(&o.metricsAddress, "metrics-listen-address", "0", "metrics address; 0 disables the listener")
	fs.BoolVar(&o.certificates, "enable-certificates-data-source", false, "watch cert-manager Certificates (needs cert-manager's CRDs)")
	fs.BoolVar(&o.apiServices, "enable-apiservices-injectable", true, "inject into APIServices")
	fs.BoolVar(&o.webhooks, "enable-webhooks-injectable", false, "inject into mutating and validating webhook configurations")
	fs.BoolVar(&o.crds, "enable-customresourcedefinitions-injectable", false, "inject into CRD conversion webhooks")
	fs.StringVar(&o.namespace, "namespace", "", "only watch this namespace (empty: all)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.kubeconfig == "" {
		return o, fmt.Errorf("-kubeconfig is required: the path of a kubeconfig for the API server")
	}
	return o, nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "cainjector:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "cainjector:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	ctrl.SetLogger(zap.New())
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.UserAgent = "cainjector"
	// As ctrl.GetConfigOrDie, which the command uses: no client-side rate
	// limit (client-go's default, 5 requests per second, would queue the
	// injector's own GETs and applies).
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kscheme.AddToScheme, cmscheme.AddToScheme, apiext.AddToScheme, apireg.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}
	var namespaces map[string]cache.Config
	if o.namespace != "" {
		namespaces = map[string]cache.Config{o.namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Cache:  cache.Options{ReaderFailOnMissingInformer: true, DefaultNamespaces: namespaces},
		// As cainjector: a Secret is read from the API server when needed,
		// never held in a cache (its watch is metadata-only).
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		LeaderElection:                o.leaderElect,
		LeaderElectionNamespace:       o.leaseNamespace,
		LeaderElectionID:              "cert-manager-cainjector-leader-election",
		LeaderElectionReleaseOnCancel: true,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddress},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    o.namespace,
		EnableCertificatesDataSource: o.certificates,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   o.webhooks,
			cainjector.ValidatingWebhookConfigurationName: o.webhooks,
			cainjector.APIServiceName:                     o.apiServices,
			cainjector.CustomResourceDefinitionName:       o.crds,
		},
	}); err != nil {
		return fmt.Errorf("register injectors: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
