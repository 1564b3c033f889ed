package reconciler

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// The aggregator has one work item: the target object.
const aggregatorKey = "target"

var nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// kmsAggregator rolls the reporters' per-node conditions on the target up
// into KMSPluginsDegraded and removes the conditions of deleted Nodes.
//
// Ownership: each KMSHealthReporter_<node> entry belongs to that node's
// reporter (field manager kms-health-reporter-<hash>); the aggregator owns
// only KMSPluginsDegraded (field manager kmshealth) and never applies a
// reporter's entry. It deletes a reporter entry only when that Node no
// longer exists, by a JSON patch that tests the entry first.
//
// It is driven by watches: the target object (one object, field-selected),
// Node metadata, and — for the default target — the KMSHealth CRD itself, so
// a cluster without the reporter costs one idle watch and no polling. The
// only timer is the moment the freshest report turns stale.
type kmsAggregator struct {
	target       kmshealth.Target
	maxStaleness time.Duration
	expected     labels.Selector // Nodes that should report
	dyn          dynamic.Interface
	log          *slog.Logger
	queue        workqueue.TypedRateLimitingInterface[string]
	now          func() time.Time

	handler  cache.ResourceEventHandler // of the target's informer
	nodes    cache.SharedIndexInformer
	crds     cache.SharedIndexInformer // nil for a custom target
	mu       sync.Mutex
	objects  cache.SharedIndexInformer // the target; nil until its resource exists
	stopObjs context.CancelFunc
	ctx      context.Context

	degraded prometheus.Gauge
	orphans  prometheus.Counter
	errors   *prometheus.CounterVec
}

func newKMSAggregator(dyn dynamic.Interface, meta metadata.Interface, o Options, m *metrics, log *slog.Logger) (*kmsAggregator, error) {
	target, err := kmshealth.ParseTarget(o.KMSTarget)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(o.KMSExpectedNodes)
	if err != nil {
		return nil, err
	}
	a := &kmsAggregator{
		target: target, maxStaleness: o.KMSMaxStaleness, expected: sel, dyn: dyn, now: time.Now,
		log:   log.With("controller", "kms-aggregator", "target", target.String()),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "kms-aggregator"}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kmshealth_kms_plugins_degraded",
			Help: "1 while KMSPluginsDegraded is True on the target, 0 while False, -1 when there is nothing to roll up.",
		}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kmshealth_kms_orphan_conditions_removed_total",
			Help: "KMSHealthReporter_<node> conditions removed because their Node no longer exists.",
		}),
		errors: m.errors,
	}
	a.degraded.Set(-1)
	m.registry.MustRegister(a.degraded, a.orphans)

	enqueue := func(any) { a.queue.Add(aggregatorKey) }
	handler := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, _ any) { enqueue(nil) }, DeleteFunc: enqueue}
	a.nodes = metadatainformer.NewFilteredMetadataInformer(meta, nodesGVR, "", 0, cache.Indexers{}, nil).Informer()
	_, _ = a.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(o, n any) {
			// Only a label change can change which Nodes must report.
			if om, ok := o.(metav1.Object); ok {
				if nm, ok := n.(metav1.Object); ok && labels.Equals(om.GetLabels(), nm.GetLabels()) {
					return
				}
			}
			enqueue(nil)
		},
	})
	_ = a.nodes.SetTransform(dropManagedFields)
	if target.IsDefault() {
		byName := func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", kmshealth.CRDName).String()
		}
		a.crds = metadatainformer.NewFilteredMetadataInformer(meta, kmshealth.CRDGVR, "", 0, cache.Indexers{}, byName).Informer()
		_ = a.crds.SetTransform(dropManagedFields)
		_, _ = a.crds.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { a.watchTarget(true) },
			UpdateFunc: func(_, _ any) { a.watchTarget(true) },
			DeleteFunc: func(any) { a.watchTarget(false) },
		})
	}
	a.handler = handler
	return a, nil
}

// start runs the informers on every replica, so a new leader starts warm.
func (a *kmsAggregator) start(ctx context.Context) {
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()
	go a.nodes.Run(ctx.Done())
	if a.crds != nil {
		go a.crds.Run(ctx.Done())
		return
	}
	a.watchTarget(true)
}

// watchTarget starts or stops the target's informer as its resource comes
// and goes.
func (a *kmsAggregator) watchTarget(exists bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case exists && a.objects == nil && a.ctx != nil:
		byName := func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", a.target.Name).String()
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(a.dyn, a.target.GVR(), "", 0, cache.Indexers{}, byName).Informer()
		_ = inf.SetTransform(dropManagedFields)
		_, _ = inf.AddEventHandler(a.handler)
		ctx, cancel := context.WithCancel(a.ctx)
		a.objects, a.stopObjs = inf, cancel
		go inf.Run(ctx.Done())
		a.log.Info("watching the target")
	case !exists && a.objects != nil:
		a.stopObjs()
		a.objects, a.stopObjs = nil, nil
		a.degraded.Set(-1)
		a.log.Info("the KMSHealth CRD is gone; stopped watching the target")
	}
}

func (a *kmsAggregator) targetInformer() cache.SharedIndexInformer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.objects
}

// hasSynced is true once Nodes (and the CRD, for the default target) are
// listed; a target whose resource does not exist yet does not hold up
// readiness.
func (a *kmsAggregator) hasSynced() bool {
	if !a.nodes.HasSynced() || (a.crds != nil && !a.crds.HasSynced()) {
		return false
	}
	return true
}

// run processes the queue until ctx ends: only the leader calls it.
func (a *kmsAggregator) run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), a.hasSynced) {
		return
	}
	a.queue.Add(aggregatorKey)
	go wait.UntilWithContext(ctx, a.worker, time.Second)
	<-ctx.Done()
}

func (a *kmsAggregator) shutdown() { a.queue.ShutDown() }

func (a *kmsAggregator) worker(ctx context.Context) {
	for {
		key, quit := a.queue.Get()
		if quit {
			return
		}
		if err := a.reconcile(ctx); err != nil {
			a.errors.WithLabelValues("kms_aggregate").Inc()
			a.queue.AddRateLimited(key)
			utilruntime.HandleErrorWithContext(ctx, err, "aggregate KMS health", "target", a.target.String())
		} else {
			a.queue.Forget(key)
		}
		a.queue.Done(key)
		if ctx.Err() != nil {
			return
		}
	}
}

// reconcile removes orphaned node conditions and writes KMSPluginsDegraded
// when, and only when, its status, reason or message changes.
func (a *kmsAggregator) reconcile(ctx context.Context) error {
	inf := a.targetInformer()
	if inf == nil || !inf.HasSynced() {
		return nil // the informer's first list enqueues again
	}
	item, exists, err := inf.GetStore().GetByKey(a.target.Name)
	if err != nil || !exists {
		a.degraded.Set(-1)
		return err
	}
	obj := item.(*unstructured.Unstructured)
	conditions := kmshealth.Conditions(obj)

	existing, shouldReport := a.nodeSets()
	var orphans []string
	reported := map[string]bool{}
	var kept []metav1.Condition
	var current *metav1.Condition
	for i, c := range conditions {
		if c.Type == kmshealth.DegradedCondition {
			current = &conditions[i]
			continue
		}
		node, ok := kmshealth.NodeFromConditionType(c.Type)
		if !ok {
			continue
		}
		if !existing[node] {
			orphans = append(orphans, c.Type)
			continue
		}
		reported[node] = true
		kept = append(kept, c)
	}
	if len(orphans) > 0 {
		drop := map[string]bool{}
		for _, t := range orphans {
			drop[t] = true
		}
		removed, err := kmshealth.RemoveConditions(ctx, a.dyn, a.target, obj, func(t string) bool { return drop[t] })
		if err != nil {
			return err
		}
		a.orphans.Add(float64(len(removed)))
		a.log.Info("removed the conditions of deleted Nodes", "conditions", removed)
		return nil // the patch's watch event brings the next round
	}
	if len(kept) == 0 {
		// Nothing reports (the reporter is not, or no longer, installed):
		// there is nothing to roll up, so no rollup of ours remains either.
		a.degraded.Set(-1)
		if current == nil {
			return nil
		}
		_, err := kmshealth.RemoveConditions(ctx, a.dyn, a.target, obj, func(t string) bool { return t == kmshealth.DegradedCondition })
		return err
	}
	for n := range shouldReport {
		reported[n] = true
	}
	expected := make([]string, 0, len(reported))
	for n := range reported {
		expected = append(expected, n)
	}
	sort.Strings(expected)
	now := a.now()
	h := kmshealth.Evaluate(kept, kmshealth.EvalOptions{Now: now, MaxStaleness: a.maxStaleness, ExpectedNodes: expected})
	if !h.NextStale.IsZero() {
		a.queue.AddAfter(aggregatorKey, h.NextStale.Sub(now)+time.Second)
	}
	want := kmshealth.DegradedConditionFor(h, current, now)
	if h.Healthy {
		a.degraded.Set(0)
	} else {
		a.degraded.Set(1)
	}
	if current != nil && current.Status == want.Status && current.Reason == want.Reason && current.Message == want.Message {
		return nil
	}
	if err := kmshealth.ApplyCondition(ctx, a.dyn, a.target, obj.GetKind(), want, kmshealth.AggregatorFieldManager); err != nil {
		return err
	}
	a.log.Info("KMSPluginsDegraded", "status", string(want.Status), "reason", want.Reason, "message", want.Message)
	return nil
}

// nodeSets returns every existing Node, and those that should report.
func (a *kmsAggregator) nodeSets() (existing, shouldReport map[string]bool) {
	existing, shouldReport = map[string]bool{}, map[string]bool{}
	for _, item := range a.nodes.GetStore().List() {
		m, ok := item.(metav1.Object)
		if !ok {
			continue
		}
		existing[m.GetName()] = true
		if !a.expected.Empty() && a.expected.Matches(labels.Set(m.GetLabels())) {
			shouldReport[m.GetName()] = true
		}
	}
	return existing, shouldReport
}
