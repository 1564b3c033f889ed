package reconciler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// series collects c: each series' labels (name=value, in order) and value.
func series(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		key := ""
		for _, l := range pb.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ","
		}
		out[key] = pb.GetGauge().GetValue()
	}
	return out
}

// TestRecordKMSHealth: the aggregator's gauges follow a judgement — the
// one current reason, each node's state and report time, each plugin's
// kekID — and a later judgement or none replaces every series, so a
// removed node or a rotated kekID leaves no stale series behind.
func TestRecordKMSHealth(t *testing.T) {
	checked := time.Unix(1_800_000_000, 0)
	degraded := &kmshealth.Health{
		DegradedReason:   kmshealth.ReasonStale,
		KEKDisagreements: 1,
		Nodes: []kmshealth.NodeHealth{
			{Name: "cp-1", State: kmshealth.NodeHealthy, LastChecked: checked,
				Plugins: []kmshealth.Plugin{{KeyID: "1", KEKID: "k-a"}, {KeyID: "2", KEKID: "k-b"}}},
			{Name: "cp-2", State: kmshealth.NodeStale, LastChecked: checked.Add(-time.Hour),
				Plugins: []kmshealth.Plugin{{KeyID: "1", KEKID: "k-old"}}},
			{Name: "cp-3", State: kmshealth.NodeMissing},
		},
	}
	healthy := &kmshealth.Health{Healthy: true, Nodes: []kmshealth.NodeHealth{
		{Name: "cp-1", State: kmshealth.NodeHealthy, LastChecked: checked, Plugins: []kmshealth.Plugin{{KeyID: "1", KEKID: "k-new"}}},
	}}
	for _, tc := range []struct {
		name                         string
		health                       *kmshealth.Health
		degraded, stale, missing     float64
		disagreements                float64
		states, reports, keks        int
		cp2State, cp1Report, kekCP2A float64
	}{
		{name: "degraded", health: degraded, degraded: 1, stale: 1, disagreements: 1, states: 3, reports: 2, keks: 3,
			cp2State: 1, cp1Report: float64(checked.Unix()), kekCP2A: 1},
		{name: "healthy", health: healthy, states: 1, reports: 1, keks: 1, cp1Report: float64(checked.Unix())},
		{name: "nothing to roll up", degraded: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recordKMSHealth(tc.health)
			for _, g := range []struct {
				what      string
				got, want float64
			}{
				{"kmshealth_kms_plugins_degraded", series(t, kmsDegraded)[""], tc.degraded},
				{`reason="Stale"`, series(t, kmsDegradedReason)["reason=Stale,"], tc.stale},
				{`reason="Missing"`, series(t, kmsDegradedReason)["reason=Missing,"], tc.missing},
				{"reason series", float64(len(series(t, kmsDegradedReason))), 5},
				{"kmshealth_kms_kek_disagreements", series(t, kmsKEKDisagreements)[""], tc.disagreements},
				{"node_state series", float64(len(series(t, kmsNodeState))), float64(tc.states)},
				{"last_report series", float64(len(series(t, kmsNodeLastReport))), float64(tc.reports)},
				{"kek_info series", float64(len(series(t, kmsNodeKEK))), float64(tc.keks)},
				{`node_state{node="cp-2",state="stale"}`, series(t, kmsNodeState)["node=cp-2,state=stale,"], tc.cp2State},
				{`kek_info{node="cp-2",key_id="1",kek_id="k-old"}`, series(t, kmsNodeKEK)["kek_id=k-old,key_id=1,node=cp-2,"], tc.kekCP2A},
				{`last_report{node="cp-1"}`, series(t, kmsNodeLastReport)["node=cp-1,"], tc.cp1Report},
			} {
				if g.got != g.want {
					t.Errorf("%s = %v, want %v", g.what, g.got, g.want)
				}
			}
		})
	}
}
