package kmshealth

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const maxStale = 2 * time.Minute

// report is node's condition as its reporter writes it.
func report(node string, plugins ...Plugin) metav1.Condition {
	status, reason := Verdict(plugins)
	return metav1.Condition{
		Type:               ReporterConditionType(node),
		Status:             status,
		Reason:             reason,
		Message:            FormatMessage(plugins),
		LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
	}
}

// fine is a healthy report of keyIDs 1 and 2 with kekIDs k-1 and k-2,
// checked ago before t0.
func fine(node string, ago time.Duration) metav1.Condition {
	return report(node, healthy("1", "k-1", t0.Add(-ago)), healthy("2", "k-2", t0.Add(-ago)))
}

func opts() EvalOptions { return EvalOptions{Now: t0, MaxStaleness: maxStale} }

func states(h Health) map[string]NodeState {
	out := map[string]NodeState{}
	for _, n := range h.Nodes {
		out[n.Name] = n.State
	}
	return out
}

func problemsContain(t *testing.T, h Health, parts ...string) {
	t.Helper()
	for _, p := range h.Problems {
		all := true
		for _, part := range parts {
			all = all && strings.Contains(p, part)
		}
		if all {
			return
		}
	}
	t.Errorf("no problem mentions all of %q; problems: %q", parts, h.Problems)
}

func TestEvaluateHealthy(t *testing.T) {
	conds := []metav1.Condition{
		fine("cp-b", 10*time.Second),
		// cp-a's oldest plugin check is what counts for it.
		report("cp-a", healthy("1", "k-1", t0.Add(-5*time.Second)), healthy("2", "k-2", t0.Add(-40*time.Second))),
		fine("cp-c", 20*time.Second),
	}
	h := Evaluate(conds, opts())
	if !h.Healthy || !h.RotationReady {
		t.Fatalf("Healthy=%v RotationReady=%v, want both; problems %q", h.Healthy, h.RotationReady, h.Problems)
	}
	if h.DegradedReason != "" {
		t.Errorf("DegradedReason = %q, want none", h.DegradedReason)
	}
	if want := map[string]string{"1": "k-1", "2": "k-2"}; !reflect.DeepEqual(h.ActiveKEKIDs, want) {
		t.Errorf("ActiveKEKIDs = %v, want %v", h.ActiveKEKIDs, want)
	}
	if len(h.Problems) != 0 {
		t.Errorf("Problems = %q, want none", h.Problems)
	}
	if want := t0.Add(-40 * time.Second).Add(maxStale); !h.NextStale.Equal(want) {
		t.Errorf("NextStale = %v, want the oldest check + MaxStaleness = %v", h.NextStale, want)
	}
	var names []string
	for _, n := range h.Nodes {
		names = append(names, n.Name)
		if n.State != NodeHealthy || n.Stale || n.Problem != "" || n.ConditionStatus != metav1.ConditionTrue || len(n.Plugins) != 2 {
			t.Errorf("node %+v, want healthy, fresh, status True, 2 plugins, no problem", n)
		}
	}
	if want := []string{"cp-a", "cp-b", "cp-c"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Nodes = %v, want %v (ordered by name)", names, want)
	}
	if want := t0.Add(-40 * time.Second); !h.Nodes[0].LastChecked.Equal(want) {
		t.Errorf("cp-a LastChecked = %v, want its oldest plugin check %v", h.Nodes[0].LastChecked, want)
	}
	if got := h.Message(); !strings.Contains(got, "3 node(s)") {
		t.Errorf("Message() = %q, want the node count", got)
	}
}

func TestEvaluateOneNodeNotHealthy(t *testing.T) {
	tests := []struct {
		name       string
		cpB        metav1.Condition
		o          func(*EvalOptions)
		wantReason string
		wantState  NodeState
		wantStale  bool
		problem    []string // parts of cp-b's problem
	}{
		{
			name:       "unhealthy plugin",
			cpB:        report("cp-b", healthy("1", "k-1", t0), unhealthy("2", "k-2", `healthz "broken", want "ok"`, t0)),
			wantReason: ReasonUnhealthy,
			wantState:  NodeUnhealthy,
			problem:    []string{"cp-b", "plugin 2", "unhealthy", `healthz "broken"`},
		},
		{
			name:       "unhealthy and error plugins: unhealthy",
			cpB:        report("cp-b", errored("1", "connection refused", t0), unhealthy("2", "k-2", "empty key_id", t0)),
			wantReason: ReasonUnhealthy,
			wantState:  NodeUnhealthy,
			problem:    []string{"cp-b", "plugin 1", "connection refused", "plugin 2", "empty key_id"},
		},
		{
			name:       "error plugin",
			cpB:        report("cp-b", errored("1", "connection refused", t0), healthy("2", "k-2", t0)),
			wantReason: ReasonError,
			wantState:  NodeError,
			problem:    []string{"cp-b", "plugin 1", "error", "connection refused"},
		},
		{
			name:       "no plugin at all",
			cpB:        report("cp-b"),
			wantReason: ReasonError,
			wantState:  NodeError,
			problem:    []string{"cp-b", "no KMS plugin"},
		},
		{
			name:       "stale",
			cpB:        fine("cp-b", maxStale+time.Second),
			wantReason: ReasonStale,
			wantState:  NodeStale,
			wantStale:  true,
			problem:    []string{"cp-b", "stale", "2026-05-08T12:32:55Z"},
		},
		{
			name:       "one stale plugin makes the node stale",
			cpB:        report("cp-b", healthy("1", "k-1", t0), healthy("2", "k-2", t0.Add(-time.Hour))),
			wantReason: ReasonStale,
			wantState:  NodeStale,
			wantStale:  true,
			problem:    []string{"cp-b", "stale"},
		},
		{
			name:       "stale under a shorter MaxStaleness",
			cpB:        fine("cp-b", 30*time.Second),
			o:          func(o *EvalOptions) { o.MaxStaleness = 20 * time.Second },
			wantReason: ReasonStale,
			wantState:  NodeStale,
			wantStale:  true,
			problem:    []string{"cp-b", "stale"},
		},
		{
			name: "unparsable message",
			cpB: metav1.Condition{Type: ReporterConditionType("cp-b"), Status: metav1.ConditionTrue, Reason: ReasonAsExpected,
				Message: `[{"keyID":"1","kekID":"k-1","status":"healthy"`},
			wantReason: ReasonInvalid,
			wantState:  NodeInvalid,
			problem:    []string{"cp-b", "unreadable"},
		},
		{
			name: "empty message",
			cpB: metav1.Condition{Type: ReporterConditionType("cp-b"), Status: metav1.ConditionTrue, Reason: ReasonAsExpected,
				Message: ``},
			wantReason: ReasonInvalid,
			wantState:  NodeInvalid,
			problem:    []string{"cp-b"},
		},
		{
			name:       "status True over an unhealthy plugin",
			cpB:        withStatus(report("cp-b", healthy("1", "k-1", t0), unhealthy("2", "k-2", "x", t0)), metav1.ConditionTrue),
			wantReason: ReasonInvalid,
			wantState:  NodeInvalid,
			problem:    []string{"cp-b", "True", "does not match"},
		},
		{
			name:       "status False over healthy plugins",
			cpB:        withStatus(fine("cp-b", 0), metav1.ConditionFalse),
			wantReason: ReasonInvalid,
			wantState:  NodeInvalid,
			problem:    []string{"cp-b", "False", "does not match"},
		},
		{
			name:       "status True with no plugins",
			cpB:        withStatus(report("cp-b"), metav1.ConditionTrue),
			wantReason: ReasonInvalid,
			wantState:  NodeInvalid,
			problem:    []string{"cp-b", "does not match"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			if tt.o != nil {
				tt.o(&o)
			}
			conds := []metav1.Condition{fine("cp-a", 0), tt.cpB, fine("cp-c", 0)}
			h := Evaluate(conds, o)
			if h.Healthy || h.RotationReady {
				t.Fatalf("Healthy=%v RotationReady=%v, want neither", h.Healthy, h.RotationReady)
			}
			if h.DegradedReason != tt.wantReason {
				t.Errorf("DegradedReason = %q, want %q", h.DegradedReason, tt.wantReason)
			}
			if want := map[string]NodeState{"cp-a": NodeHealthy, "cp-b": tt.wantState, "cp-c": NodeHealthy}; !reflect.DeepEqual(states(h), want) {
				t.Errorf("node states = %v, want %v", states(h), want)
			}
			if b := h.Nodes[1]; b.Stale != tt.wantStale {
				t.Errorf("cp-b Stale = %v, want %v", b.Stale, tt.wantStale)
			}
			if h.Nodes[0].Stale || h.Nodes[2].Stale {
				t.Error("a fresh node is marked stale")
			}
			if !strings.Contains(h.Nodes[1].Problem, "cp-b") {
				t.Errorf("cp-b Problem = %q, want it to name the node", h.Nodes[1].Problem)
			}
			problemsContain(t, h, tt.problem...)
			for _, p := range h.Problems {
				if strings.Contains(p, "cp-a:") || strings.Contains(p, "cp-c:") {
					t.Errorf("problem %q blames a healthy node", p)
				}
			}
			if h.Message() == "" || !strings.Contains(h.Message(), "cp-b") {
				t.Errorf("Message() = %q, want the problems", h.Message())
			}
			// The healthy nodes still say when they turn stale.
			if want := t0.Add(maxStale); o.MaxStaleness == maxStale && !h.NextStale.Equal(want) {
				t.Errorf("NextStale = %v, want %v", h.NextStale, want)
			}
		})
	}
}

func withStatus(c metav1.Condition, s metav1.ConditionStatus) metav1.Condition {
	c.Status = s
	return c
}

func TestEvaluateStalenessBoundary(t *testing.T) {
	h := Evaluate([]metav1.Condition{fine("cp-a", maxStale)}, opts())
	if !h.Healthy || h.Nodes[0].Stale {
		t.Errorf("a report exactly MaxStaleness old: Healthy=%v Stale=%v, want fresh", h.Healthy, h.Nodes[0].Stale)
	}
	if !h.NextStale.Equal(t0) {
		t.Errorf("NextStale = %v, want now (%v)", h.NextStale, t0)
	}
	h = Evaluate([]metav1.Condition{fine("cp-a", maxStale+time.Nanosecond)}, opts())
	if h.Healthy || !h.Nodes[0].Stale || h.DegradedReason != ReasonStale {
		t.Errorf("a report just over MaxStaleness old: Healthy=%v Stale=%v reason %q, want stale", h.Healthy, h.Nodes[0].Stale, h.DegradedReason)
	}
	if !h.NextStale.IsZero() {
		t.Errorf("NextStale = %v with no fresh node, want zero", h.NextStale)
	}
}

func TestEvaluateMissing(t *testing.T) {
	o := opts()
	o.ExpectedNodes = []string{"cp-c", "cp-a", "cp-b", "cp-a", ""} // unordered, repeated, empty
	h := Evaluate([]metav1.Condition{fine("cp-a", 0), fine("cp-b", 0)}, o)
	if h.Healthy || h.RotationReady || h.DegradedReason != ReasonMissing {
		t.Fatalf("Healthy=%v RotationReady=%v reason %q, want not healthy, Missing", h.Healthy, h.RotationReady, h.DegradedReason)
	}
	if want := map[string]NodeState{"cp-a": NodeHealthy, "cp-b": NodeHealthy, "cp-c": NodeMissing}; !reflect.DeepEqual(states(h), want) {
		t.Errorf("node states = %v, want %v", states(h), want)
	}
	if len(h.Nodes) != 3 {
		t.Errorf("%d nodes, want 3 (expected nodes deduplicated)", len(h.Nodes))
	}
	if c := h.Nodes[2]; c.Name != "cp-c" || c.ConditionStatus != "" || c.Plugins != nil {
		t.Errorf("missing node = %+v", c)
	}
	problemsContain(t, h, "cp-c", "no report")
	if len(h.Problems) != 1 {
		t.Errorf("problems %q: a missing node is one problem, not also a kekID disagreement", h.Problems)
	}
}

func TestEvaluateExpectedNodesOnly(t *testing.T) {
	// A report from a node outside ExpectedNodes (e.g. a removed node whose
	// condition is not cleaned up yet) does not count.
	o := opts()
	o.ExpectedNodes = []string{"cp-a", "cp-b"}
	old := report("cp-old", unhealthy("1", "k-0", "gone", t0.Add(-time.Hour)))
	h := Evaluate([]metav1.Condition{fine("cp-a", 0), old, fine("cp-b", 0)}, o)
	if !h.Healthy || !h.RotationReady {
		t.Errorf("Healthy=%v RotationReady=%v problems %q, want both", h.Healthy, h.RotationReady, h.Problems)
	}
	if len(h.Nodes) != 2 {
		t.Errorf("Nodes = %+v, want only the expected ones", h.Nodes)
	}
}

func TestEvaluateNoReports(t *testing.T) {
	tests := []struct {
		name  string
		conds []metav1.Condition
		o     func(*EvalOptions)
	}{
		{"no conditions", nil, nil},
		{"only other conditions", []metav1.Condition{
			{Type: DegradedCondition, Status: metav1.ConditionFalse, Reason: ReasonAsExpected, Message: "3 node(s) report healthy KMS plugins"},
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "AsExpected"},
			{Type: ReporterConditionPrefix, Status: metav1.ConditionTrue, Reason: ReasonAsExpected, Message: `[]`},
		}, nil},
		{"empty ExpectedNodes", []metav1.Condition{fine("cp-a", 0)}, func(o *EvalOptions) { o.ExpectedNodes = []string{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			if tt.o != nil {
				tt.o(&o)
			}
			h := Evaluate(tt.conds, o)
			if h.Healthy || h.RotationReady {
				t.Errorf("Healthy=%v RotationReady=%v, want neither", h.Healthy, h.RotationReady)
			}
			if h.DegradedReason != ReasonMissing {
				t.Errorf("DegradedReason = %q, want %q", h.DegradedReason, ReasonMissing)
			}
			if len(h.Nodes) != 0 || len(h.ActiveKEKIDs) != 0 || !h.NextStale.IsZero() {
				t.Errorf("Nodes %v ActiveKEKIDs %v NextStale %v, want none", h.Nodes, h.ActiveKEKIDs, h.NextStale)
			}
			problemsContain(t, h, "no node has reported")
		})
	}
}

func TestEvaluateIgnoresOtherConditions(t *testing.T) {
	base := []metav1.Condition{fine("cp-a", 0), fine("cp-b", 0)}
	others := []metav1.Condition{
		{Type: DegradedCondition, Status: metav1.ConditionTrue, Reason: ReasonUnhealthy, Message: "not JSON at all"},
		{Type: "Available", Status: metav1.ConditionFalse, Reason: "Down", Message: "[garbage"},
		{Type: "Degraded", Status: metav1.ConditionUnknown, Reason: "X"},
	}
	want := Evaluate(base, opts())
	got := Evaluate(append(append([]metav1.Condition{others[0]}, base...), others[1:]...), opts())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("other condition types changed the result:\n%+v\nwant\n%+v", got, want)
	}
	if !got.Healthy || !got.RotationReady {
		t.Errorf("Healthy=%v RotationReady=%v, want both", got.Healthy, got.RotationReady)
	}
}

func TestEvaluateKEKAgreement(t *testing.T) {
	tests := []struct {
		name       string
		cpC        metav1.Condition
		wantActive map[string]string
		problem    []string
	}{
		{
			name:       "kekID mismatch on one keyID",
			cpC:        report("cp-c", healthy("1", "k-1", t0), healthy("2", "k-3", t0)),
			wantActive: map[string]string{"1": "k-1"},
			problem:    []string{"keyID 2", "k-2 on cp-a,cp-b", "k-3 on cp-c"},
		},
		{
			name:       "a node lacks a keyID the others have",
			cpC:        report("cp-c", healthy("1", "k-1", t0)),
			wantActive: map[string]string{"1": "k-1"},
			problem:    []string{"keyID 2", "absent on cp-c"},
		},
		{
			name:       "a node has a keyID the others lack",
			cpC:        report("cp-c", healthy("1", "k-1", t0), healthy("2", "k-2", t0), healthy("3", "k-3", t0)),
			wantActive: map[string]string{"1": "k-1", "2": "k-2"},
			problem:    []string{"keyID 3", "absent on cp-a,cp-b"},
		},
		{
			name:       "mismatch on every keyID",
			cpC:        report("cp-c", healthy("1", "k-9", t0), healthy("2", "k-8", t0)),
			wantActive: map[string]string{},
			problem:    []string{"keyID 1", "k-9 on cp-c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Evaluate([]metav1.Condition{fine("cp-a", 0), fine("cp-b", 0), tt.cpC}, opts())
			if !h.Healthy {
				t.Fatalf("Healthy = false (%q), want true: every plugin is healthy", h.Problems)
			}
			if h.RotationReady {
				t.Error("RotationReady = true, want false: the nodes disagree")
			}
			if h.DegradedReason != "" {
				t.Errorf("DegradedReason = %q, want none while healthy", h.DegradedReason)
			}
			if !reflect.DeepEqual(h.ActiveKEKIDs, tt.wantActive) {
				t.Errorf("ActiveKEKIDs = %v, want %v", h.ActiveKEKIDs, tt.wantActive)
			}
			problemsContain(t, h, tt.problem...)
		})
	}
}

func TestEvaluateKEKDisagreementListsEachKey(t *testing.T) {
	cpB := report("cp-b", healthy("1", "k-x", t0), healthy("2", "k-y", t0))
	h := Evaluate([]metav1.Condition{fine("cp-a", 0), cpB}, opts())
	problemsContain(t, h, "keyID 1", "k-1 on cp-a", "k-x on cp-b")
	problemsContain(t, h, "keyID 2", "k-2 on cp-a", "k-y on cp-b")
	if len(h.Problems) != 2 {
		t.Errorf("Problems = %q, want one per keyID", h.Problems)
	}
	// Deterministic text: the data source shows it in plans.
	again := Evaluate([]metav1.Condition{cpB, fine("cp-a", 0)}, opts())
	if !reflect.DeepEqual(again.Problems, h.Problems) {
		t.Errorf("Problems depend on condition order:\n%q\n%q", h.Problems, again.Problems)
	}
}

func TestEvaluateErrorPluginHasNoActiveKEK(t *testing.T) {
	// One node cannot reach plugin 2 at all: that key is not agreed on.
	h := Evaluate([]metav1.Condition{fine("cp-a", 0), report("cp-b", healthy("1", "k-1", t0), errored("2", "refused", t0))}, opts())
	if h.Healthy || h.RotationReady {
		t.Errorf("Healthy=%v RotationReady=%v, want neither", h.Healthy, h.RotationReady)
	}
	if _, ok := h.ActiveKEKIDs["2"]; ok {
		t.Errorf("ActiveKEKIDs = %v has keyID 2, which cp-b cannot reach", h.ActiveKEKIDs)
	}
	if h.ActiveKEKIDs["1"] != "k-1" {
		t.Errorf("ActiveKEKIDs = %v, want keyID 1 → k-1", h.ActiveKEKIDs)
	}
}

func TestEvaluateWorstReasonWins(t *testing.T) {
	o := opts()
	byState := map[NodeState]metav1.Condition{
		NodeHealthy:   fine("healthy", 0),
		NodeStale:     fine("stale", time.Hour),
		NodeError:     report("error", errored("1", "refused", t0)),
		NodeUnhealthy: report("unhealthy", unhealthy("1", "k-1", "broken", t0)),
		NodeInvalid:   {Type: ReporterConditionType("invalid"), Status: metav1.ConditionTrue, Reason: ReasonAsExpected, Message: "{"},
		// NodeMissing: "missing" is expected but has no condition.
	}
	tests := []struct {
		states []NodeState
		want   string
	}{
		{[]NodeState{NodeHealthy, NodeStale}, ReasonStale},
		{[]NodeState{NodeStale, NodeError}, ReasonError},
		{[]NodeState{NodeError, NodeUnhealthy}, ReasonUnhealthy},
		{[]NodeState{NodeUnhealthy, NodeInvalid}, ReasonInvalid},
		{[]NodeState{NodeInvalid, NodeMissing}, ReasonMissing},
		{[]NodeState{NodeStale, NodeUnhealthy, NodeError}, ReasonUnhealthy},
		{[]NodeState{NodeHealthy, NodeStale, NodeError, NodeUnhealthy, NodeInvalid}, ReasonInvalid},
		{[]NodeState{NodeHealthy, NodeStale, NodeError, NodeUnhealthy, NodeInvalid, NodeMissing}, ReasonMissing},
		{[]NodeState{NodeMissing, NodeStale}, ReasonMissing},
	}
	for _, tt := range tests {
		var conds []metav1.Condition
		var expected []string
		for _, s := range tt.states {
			expected = append(expected, string(s))
			if s != NodeMissing {
				conds = append(conds, byState[s])
			}
		}
		o.ExpectedNodes = expected
		h := Evaluate(conds, o)
		if h.DegradedReason != tt.want {
			t.Errorf("%v: DegradedReason = %q, want %q", tt.states, h.DegradedReason, tt.want)
		}
		for _, n := range h.Nodes {
			if string(n.State) != n.Name {
				t.Errorf("%v: node %s judged %s", tt.states, n.Name, n.State)
			}
		}
		if h.Healthy {
			t.Errorf("%v: Healthy = true", tt.states)
		}
		if len(h.Problems) < len(tt.states)-1 {
			t.Errorf("%v: Problems = %q, want one per failing node", tt.states, h.Problems)
		}
	}
}

func TestEvaluateProblemsDoNotChangeWithTime(t *testing.T) {
	// The aggregator rewrites KMSPluginsDegraded only when its text changes:
	// a node that stays stale must give the same problem tick after tick.
	conds := []metav1.Condition{fine("cp-a", 0), fine("cp-b", time.Hour)}
	o := opts()
	first := Evaluate(conds, o)
	o.Now = o.Now.Add(37 * time.Second)
	later := Evaluate(conds, o)
	if !reflect.DeepEqual(first.Problems, later.Problems) {
		t.Errorf("Problems changed with time alone:\n%q\n%q", first.Problems, later.Problems)
	}
	if first.Message() != later.Message() {
		t.Errorf("Message() changed with time alone: %q, %q", first.Message(), later.Message())
	}
}

func TestDegradedConditionFor(t *testing.T) {
	healthyH := Evaluate([]metav1.Condition{fine("cp-a", 0), fine("cp-b", 0)}, opts())
	unhealthyH := Evaluate([]metav1.Condition{fine("cp-a", 0), report("cp-b", unhealthy("1", "k-1", "broken", t0))}, opts())
	staleH := Evaluate([]metav1.Condition{fine("cp-a", time.Hour)}, opts())
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	now := t0.Add(1500 * time.Millisecond).In(time.FixedZone("x", 3600))
	nowSec := metav1.NewTime(t0.Add(time.Second))
	was := func(s metav1.ConditionStatus) *metav1.Condition {
		return &metav1.Condition{Type: DegradedCondition, Status: s, Reason: "Whatever", Message: "old", LastTransitionTime: earlier}
	}
	tests := []struct {
		name       string
		h          Health
		current    *metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
		wantSince  metav1.Time
		wantMsg    string // part of the message
	}{
		{"healthy, first write", healthyH, nil, metav1.ConditionFalse, ReasonAsExpected, nowSec, "2 node(s)"},
		{"healthy, still healthy", healthyH, was(metav1.ConditionFalse), metav1.ConditionFalse, ReasonAsExpected, earlier, "2 node(s)"},
		{"healthy again", healthyH, was(metav1.ConditionTrue), metav1.ConditionFalse, ReasonAsExpected, nowSec, "2 node(s)"},
		{"unhealthy, first write", unhealthyH, nil, metav1.ConditionTrue, ReasonUnhealthy, nowSec, "cp-b"},
		{"turns unhealthy", unhealthyH, was(metav1.ConditionFalse), metav1.ConditionTrue, ReasonUnhealthy, nowSec, "broken"},
		{"still degraded, other reason", staleH, was(metav1.ConditionTrue), metav1.ConditionTrue, ReasonStale, earlier, "stale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DegradedConditionFor(tt.h, tt.current, now)
			if c.Type != DegradedCondition || c.Status != tt.wantStatus || c.Reason != tt.wantReason {
				t.Errorf("condition %s %s/%s, want %s %s/%s", c.Type, c.Status, c.Reason, DegradedCondition, tt.wantStatus, tt.wantReason)
			}
			if !c.LastTransitionTime.Equal(&tt.wantSince) {
				t.Errorf("lastTransitionTime = %v, want %v", c.LastTransitionTime, tt.wantSince)
			}
			if !strings.Contains(c.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", c.Message, tt.wantMsg)
			}
		})
	}
}

func TestDegradedConditionForLongMessage(t *testing.T) {
	// Many failing nodes with long details: the rollup message must still
	// fit in a condition.
	var conds []metav1.Condition
	o := opts()
	for i := 0; i < 300; i++ {
		node := "cp-" + strings.Repeat("n", 40) + "-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		conds = append(conds, report(node, unhealthy("1", "k-1", strings.Repeat("d", MaxDetailBytes), t0)))
	}
	h := Evaluate(conds, o)
	c := DegradedConditionFor(h, nil, t0)
	if len(c.Message) > maxConditionMessage || !utf8.ValidString(c.Message) {
		t.Errorf("message is %d bytes (valid UTF-8: %v), over %d", len(c.Message), utf8.ValidString(c.Message), maxConditionMessage)
	}
	if len(h.Message()) <= maxConditionMessage {
		t.Fatalf("test too small: full message is only %d bytes", len(h.Message()))
	}
}

// TestEvaluateFutureIsNeverFresh: a lastChecked beyond the allowed clock
// skew makes the node invalid (a forged or broken clock would otherwise
// stay fresh long after the reporter stopped); within the skew it counts.
func TestEvaluateFutureIsNeverFresh(t *testing.T) {
	for _, tc := range []struct {
		ahead time.Duration
		want  NodeState
	}{
		{MaxClockSkew - time.Second, NodeHealthy},
		{MaxClockSkew + time.Second, NodeInvalid},
		{time.Hour, NodeInvalid},
	} {
		h := Evaluate([]metav1.Condition{fine("cp-a", 0), fine("cp-b", -tc.ahead)}, opts())
		if got := states(h)["cp-b"]; got != tc.want {
			t.Errorf("%s ahead: %s, want %s", tc.ahead, got, tc.want)
		}
		if tc.want == NodeInvalid {
			if h.Healthy || h.RotationReady {
				t.Errorf("%s ahead: healthy %v, rotation ready %v", tc.ahead, h.Healthy, h.RotationReady)
			}
			problemsContain(t, h, "cp-b", "ahead of this clock")
		}
	}
}
