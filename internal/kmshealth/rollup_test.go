package kmshealth

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRollup(t *testing.T) {
	degraded := metav1.Condition{Type: DegradedCondition, Status: metav1.ConditionFalse, Reason: ReasonAsExpected, Message: "2 node(s) report healthy KMS plugins"}
	in := func(conds []metav1.Condition, existing, should []string) RollupInput {
		set := func(names []string) map[string]bool {
			m := map[string]bool{}
			for _, n := range names {
				m[n] = true
			}
			return m
		}
		return RollupInput{Conditions: conds, Existing: set(existing), ShouldReport: set(should), MaxStaleness: maxStale, Now: t0}
	}
	t.Run("orphans first", func(t *testing.T) {
		p := Rollup(in([]metav1.Condition{fine("cp-a", 0), fine("gone", 0)}, []string{"cp-a"}, nil))
		if len(p.Orphans) != 1 || p.Orphans[0] != "KMSHealthReporter_gone" || p.Degraded != nil {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("in sync writes nothing", func(t *testing.T) {
		p := Rollup(in([]metav1.Condition{fine("cp-a", 0), fine("cp-b", 0), degraded}, []string{"cp-a", "cp-b"}, nil))
		if !p.Empty() {
			t.Errorf("plan %+v, want empty", p)
		}
	})
	t.Run("nothing reports, nothing expected: the rollup goes", func(t *testing.T) {
		p := Rollup(in([]metav1.Condition{degraded}, []string{"worker"}, nil))
		if !p.RemoveDegraded {
			t.Errorf("plan %+v, want the rollup removed", p)
		}
	})
	// Fails closed: expected nodes whose reports were all deleted (by a
	// compromised reporter, or an uninstall) are Missing; the rollup is
	// not removed.
	t.Run("expected nodes without reports are missing", func(t *testing.T) {
		p := Rollup(in([]metav1.Condition{degraded}, []string{"cp-a", "cp-b"}, []string{"cp-a", "cp-b"}))
		if p.RemoveDegraded || p.Degraded == nil || p.Degraded.Status != metav1.ConditionTrue || p.Degraded.Reason != ReasonMissing {
			t.Fatalf("plan %+v, want KMSPluginsDegraded True/Missing", p)
		}
		if p.Health == nil || p.Health.Healthy {
			t.Errorf("health %+v", p.Health)
		}
	})
	// OpenShift's typed reports roll up with the same judgement; the
	// entries of deleted Nodes go first, as conditions do.
	typedReport := func(node string, status PluginStatus) NodeReport {
		ps := []Plugin{{KeyID: "1", KEKID: "k-1", Status: status, LastChecked: t0}}
		v, _ := Verdict(ps)
		return NodeReport{Node: node, Status: v, Plugins: ps}
	}
	t.Run("typed orphans first", func(t *testing.T) {
		i := in([]metav1.Condition{fine("cp-a", 0)}, []string{"cp-a", "cp-b"}, nil)
		i.Typed = []NodeReport{typedReport("cp-b", StatusHealthy), typedReport("gone", StatusHealthy)}
		p := Rollup(i)
		if len(p.TypedOrphans) != 1 || p.TypedOrphans[0] != "gone" || len(p.Orphans) != 0 || p.Degraded != nil || p.Empty() {
			t.Errorf("plan %+v, want only the typed entries of gone removed", p)
		}
	})
	t.Run("typed reports are judged beside conditions", func(t *testing.T) {
		i := in([]metav1.Condition{fine("cp-a", 0), degraded}, []string{"cp-a", "cp-b"}, nil)
		i.Typed = []NodeReport{typedReport("cp-b", StatusHealthy)}
		if p := Rollup(i); !p.Empty() {
			t.Errorf("plan %+v, want empty: both nodes healthy, the rollup as it is", p)
		}
		i.Typed = []NodeReport{typedReport("cp-b", StatusUnhealthy)}
		p := Rollup(i)
		if p.Degraded == nil || p.Degraded.Status != metav1.ConditionTrue || p.Health == nil || len(p.Health.Nodes) != 2 {
			t.Errorf("plan %+v, want KMSPluginsDegraded True for cp-b's typed report", p)
		}
		i.Conditions = nil
		i.Typed = []NodeReport{typedReport("cp-a", StatusHealthy)}
		if p := Rollup(i); p.RemoveDegraded || p.Degraded == nil || p.Degraded.Status != metav1.ConditionFalse {
			t.Errorf("plan %+v, want KMSPluginsDegraded False from typed reports alone", p)
		}
	})
	t.Run("a future report degrades", func(t *testing.T) {
		p := Rollup(in([]metav1.Condition{fine("cp-a", 0), fine("cp-b", -time.Hour), degraded}, []string{"cp-a", "cp-b"}, nil))
		if p.Degraded == nil || p.Degraded.Status != metav1.ConditionTrue || p.Degraded.Reason != ReasonInvalid {
			t.Errorf("plan %+v, want KMSPluginsDegraded True/InvalidReport", p)
		}
	})
}
