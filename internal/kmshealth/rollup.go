package kmshealth

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RollupInput is what the aggregator knows when it rolls the reporters'
// reports up: the target's conditions and typed healthReports, the Nodes
// that exist, and those that must report.
type RollupInput struct {
	Conditions []metav1.Condition
	// Typed are the target's OpenShift typed reports (TypedReports), judged
	// beside the conditions as Reports judges them.
	Typed        []NodeReport
	Existing     map[string]bool // every Node
	ShouldReport map[string]bool // the Nodes the expected-nodes selector selects
	MaxStaleness time.Duration
	Now          time.Time
}

// RollupPlan is what the aggregator writes, computed by Rollup; an empty
// plan writes nothing.
type RollupPlan struct {
	// Orphans are reporter conditions of Nodes that no longer exist: they
	// are removed first (the removal's own event brings the next round).
	Orphans []string
	// TypedOrphans are the Nodes that no longer exist but still have typed
	// healthReports entries: removed first too.
	TypedOrphans []string
	// RemoveDegraded removes KMSPluginsDegraded: nothing reports any more.
	RemoveDegraded bool
	// Degraded is the KMSPluginsDegraded condition to apply; nil when it is
	// already as it should be.
	Degraded *metav1.Condition
	// Health is the judgement, when there was something to judge.
	Health *Health
}

// Empty reports whether the plan writes nothing.
func (p RollupPlan) Empty() bool {
	return len(p.Orphans) == 0 && len(p.TypedOrphans) == 0 && !p.RemoveDegraded && p.Degraded == nil
}

// Rollup decides what the aggregator writes: the removal of orphaned node
// conditions, else KMSPluginsDegraded when, and only when, its status,
// reason or message changes.
func Rollup(in RollupInput) RollupPlan {
	var plan RollupPlan
	var kept []metav1.Condition
	var current *metav1.Condition
	reported := map[string]bool{}
	for i, c := range in.Conditions {
		if c.Type == DegradedCondition {
			current = &in.Conditions[i]
			continue
		}
		node, ok := NodeFromConditionType(c.Type)
		if !ok {
			continue
		}
		if !in.Existing[node] {
			plan.Orphans = append(plan.Orphans, c.Type)
			continue
		}
		reported[node] = true
		kept = append(kept, c)
	}
	var typed []NodeReport
	for _, r := range in.Typed {
		if !in.Existing[r.Node] {
			plan.TypedOrphans = append(plan.TypedOrphans, r.Node)
			continue
		}
		reported[r.Node] = true
		typed = append(typed, r)
	}
	if len(plan.Orphans) > 0 || len(plan.TypedOrphans) > 0 {
		return plan
	}
	if len(kept) == 0 && len(typed) == 0 && len(in.ShouldReport) == 0 {
		// Nothing reports and no Node is expected to: there is nothing to
		// roll up, so no rollup of ours remains either. Expected Nodes
		// without reports are Missing below: the rollup fails closed.
		plan.RemoveDegraded = current != nil
		return plan
	}
	for n := range in.ShouldReport {
		reported[n] = true
	}
	expected := make([]string, 0, len(reported))
	for n := range reported {
		expected = append(expected, n)
	}
	sort.Strings(expected)
	h := EvaluateReports(mergeReports(ConditionReports(kept), typed), EvalOptions{Now: in.Now, MaxStaleness: in.MaxStaleness, ExpectedNodes: expected})
	plan.Health = &h
	want := DegradedConditionFor(h, current, in.Now)
	if current == nil || current.Status != want.Status || current.Reason != want.Reason || current.Message != want.Message {
		plan.Degraded = &want
	}
	return plan
}
