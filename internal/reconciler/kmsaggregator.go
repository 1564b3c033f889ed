package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// The KMS aggregator has one key: the target object.
const aggregatorKey = "target"

var nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

var (
	kmsDegraded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kmshealth_kms_plugins_degraded",
		Help: "1 while KMSPluginsDegraded is True on the target, 0 while False, -1 when there is nothing to roll up.",
	})
	kmsOrphans = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kmshealth_kms_orphan_conditions_removed_total",
		Help: "KMSHealthReporter_<node> conditions removed because their Node no longer exists.",
	})
	// The per-node series have one child per expected or reporting Node
	// (the control-plane nodes), times its plugins for the kekID series.
	kmsDegradedReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kmshealth_kms_degraded_reason",
		Help: "1 for KMSPluginsDegraded's current reason (Stale, Error, Unhealthy, InvalidReport, Missing), 0 for the others; all 0 while healthy or with nothing to roll up.",
	}, []string{"reason"})
	kmsNodeState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kmshealth_kms_node_state",
		Help: "1 for each node's judged state (healthy, stale, error, unhealthy, invalid, missing), by node and state; only the current state has a series.",
	}, []string{"node", "state"})
	kmsNodeLastReport = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kmshealth_kms_node_last_report_timestamp_seconds",
		Help: "lastChecked (unix seconds) of the oldest plugin check in each node's report, by node; absent for a node without a readable report.",
	}, []string{"node"})
	kmsNodeKEK = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kmshealth_kms_node_kek_info",
		Help: "1 per plugin a node reports with a kekID, by node, key_id (the socket's number) and kek_id: nodes disagreeing show as several kek_id for one key_id.",
	}, []string{"node", "key_id", "kek_id"})
	kmsKEKDisagreements = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kmshealth_kms_kek_disagreements",
		Help: "Number of keyIDs the healthy nodes do not agree on (a differing kekID, or a keyID some lack); key rotation is not safe while above 0.",
	})
)

// kmsReasons are KMSPluginsDegraded's reasons, each a fixed series.
var kmsReasons = []string{kmshealth.ReasonStale, kmshealth.ReasonError, kmshealth.ReasonUnhealthy, kmshealth.ReasonInvalid, kmshealth.ReasonMissing}

func init() {
	controller.MustRegister(kmsDegraded, kmsOrphans, kmsDegradedReason, kmsNodeState, kmsNodeLastReport, kmsNodeKEK, kmsKEKDisagreements)
	recordKMSHealth(nil)
}

// recordKMSHealth sets the aggregator's gauges from a judgement; nil means
// there is nothing to roll up (no target, no report).
func recordKMSHealth(h *kmshealth.Health) {
	kmsNodeState.Reset()
	kmsNodeLastReport.Reset()
	kmsNodeKEK.Reset()
	reason := ""
	switch {
	case h == nil:
		kmsDegraded.Set(-1)
		kmsKEKDisagreements.Set(0)
	case h.Healthy:
		kmsDegraded.Set(0)
	default:
		kmsDegraded.Set(1)
		reason = h.DegradedReason
	}
	for _, r := range kmsReasons {
		kmsDegradedReason.WithLabelValues(r).Set(boolGauge(r == reason))
	}
	if h == nil {
		return
	}
	kmsKEKDisagreements.Set(float64(h.KEKDisagreements))
	for _, n := range h.Nodes {
		kmsNodeState.WithLabelValues(n.Name, string(n.State)).Set(1)
		if !n.LastChecked.IsZero() {
			kmsNodeLastReport.WithLabelValues(n.Name).Set(float64(n.LastChecked.Unix()))
		}
		for _, pl := range n.Plugins {
			if pl.KEKID != "" {
				kmsNodeKEK.WithLabelValues(n.Name, pl.KeyID, pl.KEKID).Set(1)
			}
		}
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Event reasons of the KMS aggregator; a rollup records
// ReasonKMSRollup followed by the condition's status (True, False, Unknown).
const (
	ReasonKMSNodeConditionsRemoved = "NodeConditionsRemoved"
	ReasonKMSRollupRemoved         = "RollupRemoved"
	ReasonKMSRollup                = "KMSPluginsDegraded"
)

// KMSAggregatorOptions are the KMS aggregator's flags.
type KMSAggregatorOptions struct {
	KMSAggregator    bool
	KMSTarget        string
	KMSMaxStaleness  time.Duration
	KMSExpectedNodes string // label selector of the Nodes that must report
}

// DefaultKMSExpectedNodes selects control-plane Nodes, where the reporter
// DaemonSet runs by default.
const DefaultKMSExpectedNodes = "node-role.kubernetes.io/control-plane"

// kmsAggregatorPatternReg is pattern 4's reconciler half, on by default
// (--kms-aggregator): its input is the target's conditions.
var kmsAggregatorPatternReg = Pattern{
	Name: "kms-aggregator",
	AddFlags: func(o *Options, fs *pflag.FlagSet) {
		fs.BoolVar(&o.KMSAggregator, "kms-aggregator", true, "roll the KMS reporters' node conditions up into KMSPluginsDegraded and remove those of deleted Nodes")
		fs.StringVar(&o.KMSTarget, "kms-target", kmshealth.DefaultTarget().String(), "group/version/resource/name of the object whose status.conditions the reporters write")
		fs.DurationVar(&o.KMSMaxStaleness, "kms-max-staleness", kmshealth.StalenessFactor*kmshealth.DefaultInterval, "a node whose last check is older than this is stale (4 × the reporters' --interval)")
		fs.StringVar(&o.KMSExpectedNodes, "kms-expected-nodes", DefaultKMSExpectedNodes, `label selector of the Nodes that must report; "" means only the Nodes that have reported`)
	},
	Validate: func(o *Options) []error {
		if !o.KMSAggregator {
			return nil
		}
		var errs []error
		if _, err := kmshealth.ParseTarget(o.KMSTarget); err != nil {
			errs = append(errs, fmt.Errorf("--kms-target: %w", err))
		}
		if o.KMSMaxStaleness <= 0 {
			errs = append(errs, fmt.Errorf("--kms-max-staleness=%s: must be positive", o.KMSMaxStaleness))
		}
		if _, err := labels.Parse(o.KMSExpectedNodes); err != nil {
			errs = append(errs, fmt.Errorf("--kms-expected-nodes=%q: %w", o.KMSExpectedNodes, err))
		}
		return errs
	},
	Enabled:   func(o Options) bool { return o.KMSAggregator },
	EnabledBy: "--kms-aggregator",
	New: func(c *Clients, o Options) (*controller.Controller, error) {
		return newController(newKMSAggregatorPattern(c, o))
	},
	Reasons: []string{ReasonKMSNodeConditionsRemoved, ReasonKMSRollupRemoved, ReasonKMSRollup + "True", ReasonKMSRollup + "False", ReasonKMSRollup + "Unknown"},
}

// kmsAggregatorPattern rolls the reporters' per-node conditions on the
// target up into KMSPluginsDegraded and removes the conditions of deleted
// Nodes.
//
// Ownership: each KMSHealthReporter_<node> entry belongs to that node's
// reporter (field manager kms-health-reporter-<hash>); the aggregator owns
// only KMSPluginsDegraded (field manager kmshealth) and never applies a
// reporter's entry. It deletes a reporter entry only when that Node no
// longer exists, by a JSON patch that tests the entry first.
//
// It is driven by watches: the target object (one object, field-selected),
// Node metadata, and — for the default target — the KMSHealth CRD itself,
// so a cluster without the reporter costs one idle watch and no polling.
// The only timer is the moment the freshest report turns stale.
type kmsAggregatorPattern struct {
	target       kmshealth.Target
	maxStaleness time.Duration
	expected     labels.Selector // Nodes that should report
	dyn          dynamic.Interface
	nodes        controller.Ref
	crd          *controller.Ref // the default target's CRD; nil for another target
	object       controller.Ref
	now          func() time.Time
}

func newKMSAggregatorPattern(c *Clients, o Options) (*kmsAggregatorPattern, error) {
	target, err := kmshealth.ParseTarget(o.KMSTarget)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(o.KMSExpectedNodes)
	if err != nil {
		return nil, err
	}
	nodes := controller.MetadataKind(c.Metadata, c.Raw, nodesGVR)
	// Only a label change can change which Nodes must report; status
	// updates of Nodes are not our business.
	nodes.Relevant = func(o, n any) bool {
		om, ok1 := o.(metav1.Object)
		nm, ok2 := n.(metav1.Object)
		return !ok1 || !ok2 || !labels.Equals(om.GetLabels(), nm.GetLabels())
	}
	p := &kmsAggregatorPattern{
		target: target, maxStaleness: o.KMSMaxStaleness, expected: sel, dyn: c.Dynamic, now: time.Now,
		nodes:  controller.All(nodes, ""),
		object: controller.Named(controller.DynamicKind(c.Raw, target.GVR()), "", target.Name),
	}
	if target.IsDefault() {
		crd := controller.Named(controller.MetadataKind(c.Metadata, c.Raw, kmshealth.CRDGVR), "", kmshealth.CRDName)
		p.crd = &crd
	}
	return p, nil
}

type kmsObs struct {
	obj      *unstructured.Unstructured
	existing map[string]bool
	should   map[string]bool
	now      time.Time
}

func (p *kmsAggregatorPattern) Name() string { return "kms-aggregator" }

func (p *kmsAggregatorPattern) Roots() []controller.Ref {
	if p.crd != nil {
		return []controller.Ref{p.nodes, *p.crd}
	}
	return []controller.Ref{p.nodes}
}

// Deps: the target is watched only while its resource exists — for the
// default target, while the KMSHealth CRD does — so a cluster without the
// reporter costs no failing list.
func (p *kmsAggregatorPattern) Deps(c controller.Cache) map[string][]controller.Ref {
	deps := p.Roots()
	if p.crd != nil {
		if _, ok := c.Get(*p.crd); !ok {
			recordKMSHealth(nil)
			return map[string][]controller.Ref{aggregatorKey: deps}
		}
	}
	return map[string][]controller.Ref{aggregatorKey: append(deps, p.object)}
}

func (p *kmsAggregatorPattern) Observe(c controller.Cache, _ string) (kmsObs, bool, error) {
	if !c.Synced(p.nodes, p.object) {
		return kmsObs{}, false, nil
	}
	obj, ok := c.Get(p.object)
	if !ok {
		recordKMSHealth(nil)
		return kmsObs{}, false, nil
	}
	o := kmsObs{obj: obj.(*unstructured.Unstructured), existing: map[string]bool{}, should: map[string]bool{}, now: p.now()}
	for _, item := range c.List(p.nodes) {
		m, ok := item.(metav1.Object)
		if !ok {
			continue
		}
		o.existing[m.GetName()] = true
		if !p.expected.Empty() && p.expected.Matches(labels.Set(m.GetLabels())) {
			o.should[m.GetName()] = true
		}
	}
	return o, true, nil
}

func (p *kmsAggregatorPattern) Desired(o kmsObs) (kmshealth.RollupPlan, error) {
	typed, _ := kmshealth.TypedReports(o.obj)
	plan := kmshealth.Rollup(kmshealth.RollupInput{
		Conditions: kmshealth.Conditions(o.obj), Typed: typed, Existing: o.existing, ShouldReport: o.should,
		MaxStaleness: p.maxStaleness, Now: o.now,
	})
	recordKMSHealth(plan.Health)
	return plan, nil
}

func (p *kmsAggregatorPattern) InSync(_ kmsObs, plan kmshealth.RollupPlan) bool { return plan.Empty() }

// RequeueAfter wakes the aggregator when the freshest report turns stale.
func (p *kmsAggregatorPattern) RequeueAfter(o kmsObs, plan kmshealth.RollupPlan) time.Duration {
	if plan.Health == nil || plan.Health.NextStale.IsZero() {
		return 0
	}
	return plan.Health.NextStale.Sub(o.now) + time.Second
}

func (p *kmsAggregatorPattern) Apply(ctx context.Context, o kmsObs, plan kmshealth.RollupPlan) (controller.Change, error) {
	switch {
	case len(plan.Orphans) > 0:
		drop := map[string]bool{}
		for _, t := range plan.Orphans {
			drop[t] = true
		}
		removed, err := kmshealth.RemoveConditions(ctx, p.dyn, p.target, o.obj, func(t string) bool { return drop[t] })
		if err != nil {
			return controller.Change{}, err
		}
		kmsOrphans.Add(float64(len(removed)))
		return controller.Change{Reason: ReasonKMSNodeConditionsRemoved, Action: "Remove",
			Note: "Removed the conditions of deleted Nodes: " + strings.Join(removed, ", ")}, nil
	case len(plan.TypedOrphans) > 0:
		removed, err := kmshealth.RemoveHealthReports(ctx, p.dyn, p.target, o.obj, func(n string) bool { return slices.Contains(plan.TypedOrphans, n) })
		if err != nil {
			return controller.Change{}, err
		}
		kmsOrphans.Add(float64(len(removed)))
		return controller.Change{Reason: ReasonKMSNodeConditionsRemoved, Action: "Remove",
			Note: "Removed the healthReports entries of deleted Nodes: " + strings.Join(removed, ", ")}, nil
	case plan.RemoveDegraded:
		_, err := kmshealth.RemoveConditions(ctx, p.dyn, p.target, o.obj, func(t string) bool { return t == kmshealth.DegradedCondition })
		return controller.Change{Reason: ReasonKMSRollupRemoved, Action: "Remove", Note: "No reporter reports: " + kmshealth.DegradedCondition + " removed"}, err
	}
	if err := kmshealth.ApplyCondition(ctx, p.dyn, p.target, o.obj.GetKind(), *plan.Degraded, kmshealth.AggregatorFieldManager); err != nil {
		return controller.Change{}, err
	}
	d := plan.Degraded
	return controller.Change{Reason: ReasonKMSRollup + string(d.Status), Action: "Rollup",
		Note: fmt.Sprintf("%s=%s (%s): %s", kmshealth.DegradedCondition, d.Status, d.Reason, d.Message)}, nil
}

// Subject: the aggregator records no Events; its writes are conditions on
// the target, which is what users read.
func (p *kmsAggregatorPattern) Subject(kmsObs) runtime.Object { return nil }
