package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
)

// ManagerOptions configure the controller-runtime Manager that runs the
// controllers.
type ManagerOptions struct {
	Config *rest.Config
	Scheme *runtime.Scheme

	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	Identity       string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration

	// Metrics serves /metrics (incluster.ServeMetrics);
	// HealthProbeBindAddress serves /healthz and /readyz over HTTP ("0"
	// disables it).
	Metrics                incluster.MetricsOptions
	HealthProbeBindAddress string

	// Workers is the number of concurrent reconciles per controller.
	Workers int

	// OnSynced, if set, is called each time every controller's watches
	// have listed after new ones started (at start: readiness; then when
	// the record grows), from a goroutine of its own: the end of a burst
	// of lists, after which the process is idle.
	OnSynced func()
}

// maxTolerableExpiredLease is how long past its lease the leader may go
// without a renewal before /healthz fails (client-go's own tolerance for
// the components' leader-election health check).
const maxTolerableExpiredLease = 20 * time.Second

// Run runs the controllers until ctx ends. Their watches run for the life
// of the process on every replica; their reconcile loops run in a
// controller-runtime Manager only while this replica leads. A replica that
// loses the lease (e.g. while the API server restarts) does not exit: it
// starts a new Manager and campaigns again, with its watches still warm.
//
// /healthz, /readyz and /metrics are served for the life of the process
// too, from controller-runtime's health checks and metrics registry and
// behind its authentication and authorization filter, by servers with read
// and write timeouts (the Manager's own servers have none) that never
// rebind when a term ends.
func Run(ctx context.Context, o ManagerOptions, controllers ...*Controller) error {
	listed := make(chan struct{}, 1)
	signal := func() {
		select {
		case listed <- struct{}{}:
		default: // one pending signal stands for any number
		}
	}
	for _, c := range controllers {
		c.start(ctx, signal)
	}
	var lock *renewLock
	if o.LeaderElect {
		var err error
		if lock, err = newRenewLock(o); err != nil {
			return err
		}
	}
	if err := serveHealth(ctx, o.HealthProbeBindAddress, lock, controllers); err != nil {
		return err
	}
	if err := incluster.ServeMetrics(ctx, o.Metrics, o.Config, Registry, metricsGuard); err != nil {
		return err
	}
	if o.OnSynced != nil {
		go whenSynced(ctx, controllers, listed, o.OnSynced)
	}
	for term := 0; ; term++ {
		mgr, err := newManager(o, lock, controllers, term > 0)
		if err != nil {
			return err
		}
		err = mgr.Start(ctx)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shut down as asked: whatever Start says, it is not a failure
		}
		if err == nil || !strings.Contains(err.Error(), "leader election lost") {
			return err
		}
		lock.lost()
		klog.InfoS("Lost the lease; campaigning again with the watches still running", "lease", o.LeaseNamespace+"/"+o.LeaseName, "identity", o.Identity)
	}
}

// whenSynced calls f whenever, after a watch's first list (a signal on
// listed), every controller's watches have listed, until ctx ends.
func whenSynced(ctx context.Context, controllers []*Controller, listed <-chan struct{}, f func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-listed:
		}
		synced := true
		for _, c := range controllers {
			synced = synced && c.Synced()
		}
		if synced {
			f()
		}
	}
}

// newManager builds the Manager of one term of candidacy: leader election
// and the controllers' reconcile loops. It serves nothing itself.
func newManager(o ManagerOptions, lock *renewLock, controllers []*Controller, again bool) (manager.Manager, error) {
	opts := manager.Options{
		Scheme:                        o.Scheme,
		Logger:                        klog.NewKlogr(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                o.LeaderElect,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		GracefulShutdownTimeout:       ptr.To(15 * time.Second),
	}
	if lock != nil {
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := manager.New(o.Config, opts)
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	for _, c := range controllers {
		if err := c.register(mgr, o.Workers, again); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// register adds the controller's reconcile loop to mgr: a controller-
// runtime controller whose one source is the controller's watches.
func (c *Controller) register(mgr manager.Manager, workers int, again bool) error {
	rec := mgr.GetEventRecorder("kmshealth-reconciler")
	ctl, err := ctrlcontroller.NewTyped[string](c.name, mgr, ctrlcontroller.TypedOptions[string]{
		MaxConcurrentReconciles: workers,
		// A new term re-creates the controller under the same name.
		SkipNameValidation: ptr.To(again),
		Reconciler: reconcile.TypedFunc[string](func(ctx context.Context, key string) (reconcile.Result, error) {
			return c.reconcile(ctx, key, rec)
		}),
	})
	if err != nil {
		return fmt.Errorf("controller %s: %w", c.name, err)
	}
	return ctl.Watch(watchSource{c.watches})
}

// watchSource feeds the events of a controller's watches into the queue of
// the current term's controller.
type watchSource struct{ w *watches }

func (s watchSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) error {
	detach := s.w.attach(q.Add)
	go func() {
		<-ctx.Done()
		detach()
	}()
	return nil
}

func (s watchSource) String() string { return s.w.String() }

// renewLock is the Lease lock, watched for renewals: the leader-election
// health check fails when this replica leads but has not renewed its lease
// for a lease duration plus a tolerance, i.e. when it can no longer lead.
type renewLock struct {
	resourcelock.Interface
	leaseDuration time.Duration

	mu      sync.Mutex
	leading bool
	renewed time.Time
}

func newRenewLock(o ManagerOptions) (*renewLock, error) {
	cfg := rest.CopyConfig(o.Config)
	cfg = rest.AddUserAgent(cfg, "leader-election")
	// One hung request must not cost the lease.
	cfg.Timeout = max(o.RenewDeadline/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	l, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaseNamespace, o.LeaseName, core, coord,
		resourcelock.ResourceLockConfig{Identity: o.Identity})
	if err != nil {
		return nil, err
	}
	return &renewLock{Interface: l, leaseDuration: o.LeaseDuration}, nil
}

func (l *renewLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	l.record(r, err)
	return err
}

func (l *renewLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	l.record(r, err)
	return err
}

func (l *renewLock) record(r resourcelock.LeaderElectionRecord, err error) {
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = r.HolderIdentity == l.Identity()
	if l.leading {
		l.renewed = time.Now()
	}
}

func (l *renewLock) lost() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = false
}

// check is the leader-election health check.
func (l *renewLock) check(*http.Request) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leading {
		return nil
	}
	if late := time.Since(l.renewed) - l.leaseDuration; late > maxTolerableExpiredLease {
		return errors.New("the lease was last renewed " + time.Since(l.renewed).Round(time.Second).String() + " ago")
	}
	return nil
}

// serveHealth serves /healthz (a ping and, with leader election, the
// leader-election check) and /readyz (every controller's watches listed)
// with controller-runtime's health handler. "0" disables it.
func serveHealth(ctx context.Context, addr string, lock *renewLock, controllers []*Controller) error {
	live := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	if lock != nil {
		live.Checks["leader-election"] = lock.check
	}
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}
	for _, c := range controllers {
		ready.Checks[c.name] = func(*http.Request) error {
			if !c.Synced() {
				return fmt.Errorf("%s: watches not listed yet", c.name)
			}
			return nil
		}
	}
	mux := http.NewServeMux()
	for path, h := range map[string]http.Handler{"/healthz": live, "/readyz": ready} {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h)) // one check: /healthz/ping
	}
	return incluster.Serve(ctx, addr, mux)
}
