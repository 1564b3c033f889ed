package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	apiregclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	apireglisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// Event reasons, documented for alerting.
const (
	ReasonRestored      = "CABundleRestored"
	ReasonSourceMissing = "CABundleSourceMissing"
	ReasonSourceInvalid = "CABundleSourceInvalid"
	ReasonNotApplicable = "CABundleNotApplicable"
	ReasonApplyFailed   = "CABundleApplyFailed"
)

// caBundleController keeps every APIService annotated with
// cabundle.SourceAnnotation equal to its source. It reacts to watch events
// only: an APIService change, or a change of the one source object it names.
type caBundleController struct {
	apiservices  apiregclient.APIServicesGetter
	factory      aggregatorinformers.SharedInformerFactory
	informer     cache.SharedIndexInformer
	lister       apireglisters.APIServiceLister
	queue        workqueue.TypedRateLimitingInterface[string]
	sources      *sourceWatches
	events       record.EventRecorder
	metrics      *metrics
	fieldManager string
	log          *slog.Logger
	ctx          atomic.Pointer[context.Context] // lifetime of source watches
}

func newCABundleController(core kubernetes.Interface, agg aggregator.Interface, events record.EventRecorder, m *metrics, fieldManager string, log *slog.Logger) *caBundleController {
	factory := aggregatorinformers.NewSharedInformerFactory(agg, 0) // no resync: events only
	apis := factory.Apiregistration().V1().APIServices()
	c := &caBundleController{
		apiservices:  agg.ApiregistrationV1(),
		factory:      factory,
		informer:     apis.Informer(),
		lister:       apis.Lister(),
		queue:        workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "cabundle"}),
		events:       events,
		metrics:      m,
		fieldManager: fieldManager,
		log:          log,
	}
	c.sources = newSourceWatches(core, c.queue.Add)
	enqueue := func(obj any) {
		if svc, ok := obj.(*apiregv1.APIService); ok {
			c.queue.Add(svc.Name)
		} else if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			c.queue.Add(d.Key)
		}
	}
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: enqueue,
	})
	return c
}

// start runs the informers (on every replica, so a new leader starts warm).
func (c *caBundleController) start(ctx context.Context) {
	c.ctx.Store(&ctx)
	c.factory.Start(ctx.Done())
}

func (c *caBundleController) hasSynced() bool { return c.informer.HasSynced() }

// run processes the queue until ctx ends: only the leader calls it.
func (c *caBundleController) run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return
	}
	// Everything may have drifted while another replica led: look at all.
	for _, key := range c.informer.GetStore().ListKeys() {
		c.queue.Add(key)
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

func (c *caBundleController) shutdown() { c.queue.ShutDown() }

func (c *caBundleController) worker(ctx context.Context) {
	for {
		name, quit := c.queue.Get()
		if quit {
			return
		}
		err := c.reconcile(ctx, name)
		if err != nil {
			c.queue.AddRateLimited(name)
			utilruntime.HandleErrorWithContext(ctx, err, "reconcile APIService caBundle", "apiservice", name)
		} else {
			c.queue.Forget(name)
		}
		c.queue.Done(name)
		if ctx.Err() != nil {
			return
		}
	}
}

// reconcile compares and, on drift only, applies. Problems with the source
// are reported (Event + metric) and leave the live bundle alone: garbage is
// never written, and retrying cannot fix it — the next source event will.
func (c *caBundleController) reconcile(ctx context.Context, name string) error {
	svc, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.sources.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	annotation, ok := svc.Annotations[cabundle.SourceAnnotation]
	if !ok {
		c.sources.forget(name)
		return nil
	}
	src, err := cabundle.ParseSource(annotation)
	if err != nil {
		c.sources.forget(name)
		c.fail(svc, ReasonSourceInvalid, "invalid_annotation", err)
		return nil
	}
	watch := c.sources.use(*c.ctx.Load(), name, src)
	if !watch.synced() {
		return nil // the watch's first list enqueues this APIService again
	}
	bundle, exists := read(watch, src)
	if !exists {
		c.fail(svc, ReasonSourceMissing, "source_missing",
			fmt.Errorf("%s %s/%s or its key %q does not exist; the live caBundle is left as it is", src.Kind, src.Namespace, src.Name, src.Key))
		return nil
	}
	if _, findings := cabundle.Inspect(bundle, time.Now()); cabundle.HasErrors(findings) {
		c.fail(svc, ReasonSourceInvalid, "source_invalid",
			fmt.Errorf("%s holds no valid CA bundle (%w); the live caBundle is left as it is", src, cabundle.FirstError(findings)))
		return nil
	}
	if err := cabundle.CheckAPIService(svc); err != nil {
		c.fail(svc, ReasonNotApplicable, "not_applicable", err)
		return nil
	}
	// The annotation is ours, so the field is ours: force past whoever
	// overwrote it.
	_, wrote, err := cabundle.Ensure(ctx, c.apiservices, svc, bundle, src, cabundle.ApplyOptions{FieldManager: c.fieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.fail(svc, ReasonApplyFailed, "apply", err)
		return err
	}
	c.metrics.synced()
	if wrote {
		c.metrics.corrections.Inc()
		c.events.Eventf(svc, corev1.EventTypeNormal, ReasonRestored, "Restored spec.caBundle from %s (sha256 %.16s)", src, cabundle.Fingerprint(bundle))
		c.log.Info("restored caBundle", "apiservice", name, "source", src.String(), "sha256", cabundle.Fingerprint(bundle))
	}
	return nil
}

func (c *caBundleController) fail(svc *apiregv1.APIService, reason, metricReason string, err error) {
	c.metrics.errors.WithLabelValues(metricReason).Inc()
	c.events.Event(svc, corev1.EventTypeWarning, reason, err.Error())
	c.log.Warn("caBundle not reconciled", "apiservice", svc.Name, "reason", reason, "error", err.Error())
}
