package kmshealth

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeState is a node's verdict after the aggregator or data source has
// judged its condition.
type NodeState string

// Node states, from best to worst for the rollup reason.
const (
	NodeHealthy   NodeState = "healthy"
	NodeStale     NodeState = "stale"
	NodeError     NodeState = "error"
	NodeUnhealthy NodeState = "unhealthy"
	NodeInvalid   NodeState = "invalid"
	NodeMissing   NodeState = "missing"
)

// degradedReason maps the worst node state to KMSPluginsDegraded's reason.
var degradedReason = map[NodeState]string{
	NodeStale:     ReasonStale,
	NodeError:     ReasonError,
	NodeUnhealthy: ReasonUnhealthy,
	NodeInvalid:   ReasonInvalid,
	NodeMissing:   ReasonMissing,
}

var severity = map[NodeState]int{NodeHealthy: 0, NodeStale: 1, NodeError: 2, NodeUnhealthy: 3, NodeInvalid: 4, NodeMissing: 5}

// EvalOptions say what "healthy" means for a set of conditions.
type EvalOptions struct {
	Now time.Time
	// MaxStaleness is how old a node's lastChecked may be.
	MaxStaleness time.Duration
	// ExpectedNodes must all have reported; nil means every node that did.
	ExpectedNodes []string
}

// NodeHealth is one node's judged report.
type NodeHealth struct {
	Name            string
	State           NodeState
	ConditionStatus metav1.ConditionStatus // as written by the reporter; "" when missing
	Stale           bool
	LastChecked     time.Time // the oldest plugin check; zero when unknown
	Plugins         []Plugin
	Problem         string // why the node is not healthy; "" when it is
}

// Health is the judgement over every node's condition.
type Health struct {
	// Healthy: at least one node reported, every expected node reported, and
	// every node is fresh with all plugins healthy.
	Healthy bool
	// RotationReady: Healthy, and every node reports the same kekID for
	// each keyID (and the same keyIDs).
	RotationReady bool
	// DegradedReason is KMSPluginsDegraded's reason when not Healthy.
	DegradedReason string
	// ActiveKEKIDs maps keyID to kekID for the keyIDs all nodes agree on.
	ActiveKEKIDs map[string]string
	Nodes        []NodeHealth // ordered by name
	// Problems name each failing node and plugin, and each key the nodes
	// disagree on; empty when RotationReady.
	Problems []string
	// KEKDisagreements is the number of keyIDs the healthy nodes do not
	// agree on (a kekID differing, or a keyID some lack).
	KEKDisagreements int
	// NextStale is when the freshest-looking healthy data turns stale
	// without a new report; zero when no node is fresh.
	NextStale time.Time
}

// Message is the rollup text for KMSPluginsDegraded.
func (h Health) Message() string {
	if h.Healthy {
		return fmt.Sprintf("%d node(s) report healthy KMS plugins", len(h.Nodes))
	}
	return strings.Join(h.Problems, "; ")
}

// NodeReport is one node's report as read, before it is judged: from a
// KMSHealthReporter_<node> condition or from OpenShift's typed
// healthReports entries of that node.
type NodeReport struct {
	Node string
	// Status is the node's overall status as its writer stated it (a
	// condition's status); the typed format states none, so it is the
	// Verdict of its plugins.
	Status  metav1.ConditionStatus
	Plugins []Plugin
	// Err says why the report could not be read; the node is invalid.
	Err error
}

// ConditionReports reads the reporter conditions among conditions (other
// types are ignored), one report per node.
func ConditionReports(conditions []metav1.Condition) []NodeReport {
	var out []NodeReport
	for _, c := range conditions {
		node, ok := NodeFromConditionType(c.Type)
		if !ok {
			continue
		}
		plugins, err := ParseMessage(c.Message)
		if err != nil {
			err = fmt.Errorf("unreadable report: %w", err)
		}
		out = append(out, NodeReport{Node: node, Status: c.Status, Plugins: plugins, Err: err})
	}
	return out
}

// Evaluate judges the reporter conditions among conditions (other types are
// ignored).
func Evaluate(conditions []metav1.Condition, o EvalOptions) Health {
	return EvaluateReports(ConditionReports(conditions), o)
}

// EvaluateReports judges the nodes' reports, whatever format they came in:
// the gate (every node healthy, fresh, agreeing on the kekID of each key)
// is one and the same for both.
func EvaluateReports(reports []NodeReport, o EvalOptions) Health {
	reported := map[string]NodeReport{}
	for _, r := range reports {
		reported[r.Node] = r
	}
	names := o.ExpectedNodes
	if names == nil {
		for n := range reported {
			names = append(names, n)
		}
	}
	names = dedupeSorted(names)

	h := Health{ActiveKEKIDs: map[string]string{}}
	worst := NodeHealthy
	for _, name := range names {
		c, ok := reported[name]
		var n NodeHealth
		if ok {
			n = judgeNode(name, c, o)
		} else {
			n = NodeHealth{Name: name, State: NodeMissing, Problem: "node " + name + ": no report (is the reporter running there?)"}
		}
		if n.State == NodeHealthy {
			if stale := n.LastChecked.Add(o.MaxStaleness); h.NextStale.IsZero() || stale.Before(h.NextStale) {
				h.NextStale = stale
			}
		} else {
			h.Problems = append(h.Problems, n.Problem)
			if severity[n.State] > severity[worst] {
				worst = n.State
			}
		}
		h.Nodes = append(h.Nodes, n)
	}
	if len(names) == 0 {
		worst = NodeMissing
		h.Problems = append(h.Problems, "no node has reported KMS plugin health (is the reporter installed?)")
	}
	h.Healthy = worst == NodeHealthy
	if !h.Healthy {
		h.DegradedReason = degradedReason[worst]
	}
	mismatches := agreeOnKEKs(&h)
	h.KEKDisagreements = len(mismatches)
	h.RotationReady = h.Healthy && len(mismatches) == 0
	h.Problems = append(h.Problems, mismatches...)
	return h
}

func judgeNode(name string, c NodeReport, o EvalOptions) NodeHealth {
	n := NodeHealth{Name: name, ConditionStatus: c.Status}
	if c.Err != nil {
		n.State, n.Problem = NodeInvalid, fmt.Sprintf("node %s: %v", name, c.Err)
		return n
	}
	plugins := c.Plugins
	n.Plugins = plugins
	for _, p := range plugins {
		if n.LastChecked.IsZero() || p.LastChecked.Before(n.LastChecked) {
			n.LastChecked = p.LastChecked
		}
	}
	if status, _ := Verdict(plugins); status != c.Status {
		n.State, n.Problem = NodeInvalid, fmt.Sprintf("node %s: condition status %s does not match its plugins (%s)", name, c.Status, status)
		return n
	}
	if len(plugins) == 0 {
		n.State, n.Problem = NodeError, fmt.Sprintf("node %s: the reporter found no KMS plugin socket", name)
		return n
	}
	for _, p := range plugins {
		// A check from the future is never fresh: it would stay "fresh"
		// long after the reporter stopped.
		if p.LastChecked.After(o.Now.Add(MaxClockSkew)) {
			n.State, n.Problem = NodeInvalid, fmt.Sprintf("node %s: plugin %s was last checked at %s, more than %s ahead of this clock: the report cannot be trusted (check the node's clock)",
				name, p.KeyID, p.LastChecked.UTC().Format(time.RFC3339), MaxClockSkew)
			return n
		}
	}
	if age := o.Now.Sub(n.LastChecked); age > o.MaxStaleness {
		n.Stale = true
		n.State = NodeStale
		// No age in the text: the rollup message must not change while
		// nothing new is reported, or the aggregator would rewrite it.
		n.Problem = fmt.Sprintf("node %s: stale, last checked at %s, more than %s ago", name, n.LastChecked.Format(time.RFC3339), o.MaxStaleness)
		return n
	}
	var bad []string
	n.State = NodeHealthy
	for _, p := range plugins {
		if p.Status == StatusHealthy {
			continue
		}
		st := NodeError
		if p.Status == StatusUnhealthy {
			st = NodeUnhealthy
		}
		if severity[st] > severity[n.State] {
			n.State = st
		}
		what := fmt.Sprintf("plugin %s %s", p.KeyID, p.Status)
		if p.Detail != "" {
			what += " (" + p.Detail + ")"
		}
		bad = append(bad, what)
	}
	if len(bad) > 0 {
		n.Problem = "node " + name + ": " + strings.Join(bad, ", ")
	}
	return n
}

// agreeOnKEKs fills ActiveKEKIDs with the keyIDs every node reports with
// one and the same kekID, and returns one problem per keyID the healthy
// nodes do not agree on (a node that is not healthy is a problem of its own
// already; its missing kekID is not a disagreement).
func agreeOnKEKs(h *Health) []string {
	if len(h.Nodes) == 0 {
		return nil
	}
	all := map[string]map[string][]string{}     // keyID → kekID → nodes
	healthy := map[string]map[string][]string{} // the same, healthy nodes only
	var healthyNodes []NodeHealth
	for _, n := range h.Nodes {
		if n.State == NodeHealthy {
			healthyNodes = append(healthyNodes, n)
		}
		for _, p := range n.Plugins {
			addKEK(all, p.KeyID, p.KEKID, n.Name)
			if n.State == NodeHealthy {
				addKEK(healthy, p.KeyID, p.KEKID, n.Name)
			}
		}
	}
	for k, keks := range all {
		if kek, nodes, one := single(keks); one && kek != "" && len(nodes) == len(h.Nodes) {
			h.ActiveKEKIDs[k] = kek
		}
	}
	keys := make([]string, 0, len(healthy))
	for k := range healthy {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyIDLess(keys[i], keys[j]) })
	var problems []string
	for _, k := range keys {
		if _, nodes, one := single(healthy[k]); one && len(nodes) == len(healthyNodes) {
			continue
		}
		problems = append(problems, fmt.Sprintf("keyID %s: nodes disagree on the kekID (%s)", k, describeKEKs(healthy[k], healthyNodes)))
	}
	return problems
}

func addKEK(m map[string]map[string][]string, keyID, kekID, node string) {
	if m[keyID] == nil {
		m[keyID] = map[string][]string{}
	}
	m[keyID][kekID] = append(m[keyID][kekID], node)
}

func single(m map[string][]string) (string, []string, bool) {
	if len(m) != 1 {
		return "", nil, false
	}
	for k, v := range m {
		return k, v, true
	}
	return "", nil, false
}

func describeKEKs(keks map[string][]string, nodes []NodeHealth) string {
	var parts []string
	has := map[string]bool{}
	for kek, ns := range keks {
		label := kek
		if label == "" {
			label = "none"
		}
		parts = append(parts, label+" on "+strings.Join(ns, ","))
		for _, n := range ns {
			has[n] = true
		}
	}
	var absent []string
	for _, n := range nodes {
		if !has[n.Name] {
			absent = append(absent, n.Name)
		}
	}
	if len(absent) > 0 {
		parts = append(parts, "absent on "+strings.Join(absent, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func dedupeSorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if s == "" || (i > 0 && s == out[i-1]) {
			continue
		}
		out[j] = s
		j++
	}
	return out[:j]
}

// DegradedConditionFor is the KMSPluginsDegraded condition for h: True with
// the worst node state's reason and the problems as message, or
// False/AsExpected. lastTransitionTime stays that of current unless the
// status changes.
func DegradedConditionFor(h Health, current *metav1.Condition, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: DegradedCondition, Status: metav1.ConditionFalse, Reason: ReasonAsExpected, Message: h.Message()}
	if !h.Healthy {
		c.Status, c.Reason = metav1.ConditionTrue, h.DegradedReason
	}
	c.Message = truncate(c.Message, maxConditionMessage)
	c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	if current != nil && current.Status == c.Status {
		c.LastTransitionTime = current.LastTransitionTime
	}
	return c
}
