package kmshealth

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func typedObject(entries ...map[string]any) *unstructured.Unstructured {
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = e
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"status": map[string]any{"encryptionStatus": map[string]any{"healthReports": list}},
	}}
}

func entry(node, keyID, status, kek string, at time.Time) map[string]any {
	return map[string]any{"nodeName": node, "keyID": keyID, "status": status, "remoteKeyID": kek, "lastCheckedTime": at.Format(time.RFC3339)}
}

func TestTypedReportsJudged(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	o := EvalOptions{Now: now, MaxStaleness: 2 * time.Minute}
	tests := []struct {
		name           string
		obj            *unstructured.Unstructured
		format         ReportFormat
		healthy, ready bool
		problem        string // a substring of the problems; "" for none
	}{
		{"all healthy, one KEK", typedObject(entry("cp-a", "1", TypedHealthy, "k", now), entry("cp-b", "1", TypedHealthy, "k", now)), FormatOpenShiftTyped, true, true, ""},
		{"KEKs disagree", typedObject(entry("cp-a", "1", TypedHealthy, "k", now), entry("cp-b", "1", TypedHealthy, "k2", now)), FormatOpenShiftTyped, true, false, "nodes disagree"},
		{"unhealthy", typedObject(entry("cp-a", "1", TypedUnhealthy, "k", now)), FormatOpenShiftTyped, false, false, "plugin 1 unhealthy"},
		{"error, unknown KEK", typedObject(entry("cp-a", "1", TypedError, RemoteKeyIDUnknown, now)), FormatOpenShiftTyped, false, false, "plugin 1 error"},
		{"stale", typedObject(entry("cp-a", "1", TypedHealthy, "k", now.Add(-time.Hour))), FormatOpenShiftTyped, false, false, "stale"},
		{"lowercase status is not the published enum", typedObject(entry("cp-a", "1", "healthy", "k", now)), FormatOpenShiftTyped, false, false, `status "healthy", want Healthy`},
		{"no lastCheckedTime", typedObject(map[string]any{"nodeName": "cp-a", "keyID": "1", "status": TypedHealthy, "remoteKeyID": "k"}), FormatOpenShiftTyped, false, false, "lastCheckedTime"},
		{"no reports", &unstructured.Unstructured{Object: map[string]any{}}, FormatNone, false, false, "no node has reported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reports, format := Reports(tt.obj)
			if format != tt.format {
				t.Errorf("format %q, want %q", format, tt.format)
			}
			h := EvaluateReports(reports, o)
			if h.Healthy != tt.healthy || h.RotationReady != tt.ready {
				t.Errorf("healthy=%v ready=%v, want %v %v (problems %q)", h.Healthy, h.RotationReady, tt.healthy, tt.ready, h.Problems)
			}
			if got := strings.Join(h.Problems, "; "); tt.problem != "" && !strings.Contains(got, tt.problem) || tt.problem == "" && got != "" {
				t.Errorf("problems %q, want %q", got, tt.problem)
			}
		})
	}
}

// A node reported in both formats cannot be believed; other nodes are read
// from whichever format they came in.
func TestReportsMixed(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	obj := typedObject(entry("cp-a", "1", TypedHealthy, "k", now), entry("cp-b", "1", TypedHealthy, "k", now))
	var cs []any
	for _, node := range []string{"cp-b", "cp-c"} {
		b := ConditionBuilder{Node: node}
		c := b.Build([]Plugin{{KeyID: "1", KEKID: "k", Status: StatusHealthy, LastChecked: now}}, now)
		cs = append(cs, map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message, "lastTransitionTime": c.LastTransitionTime.Format(time.RFC3339)})
	}
	obj.Object["status"].(map[string]any)["conditions"] = cs
	reports, format := Reports(obj)
	if format != FormatMixed {
		t.Fatalf("format %q, want mixed", format)
	}
	h := EvaluateReports(reports, EvalOptions{Now: now, MaxStaleness: time.Minute})
	states := map[string]NodeState{}
	for _, n := range h.Nodes {
		states[n.Name] = n.State
	}
	want := map[string]NodeState{"cp-a": NodeHealthy, "cp-b": NodeInvalid, "cp-c": NodeHealthy}
	for n, s := range want {
		if states[n] != s {
			t.Errorf("node %s: %s, want %s (all: %v)", n, states[n], s, states)
		}
	}
}

// What the reporter writes in the typed format reads back as the plugins it
// probed, within the published schema's bounds.
func TestHealthReportEntriesRoundTrip(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	plugins := []Plugin{
		{KeyID: "1", KEKID: "k-1", Status: StatusHealthy, LastChecked: now},
		{KeyID: "2", Status: StatusError, LastChecked: now, Detail: strings.Repeat("x", 2000)},
	}
	obj := typedObject()
	_ = unstructured.SetNestedSlice(obj.Object, HealthReportEntries("cp-a", plugins, now), healthReportsPath...)
	reports, ok := TypedReports(obj)
	if !ok || len(reports) != 1 || reports[0].Err != nil {
		t.Fatalf("reports %+v", reports)
	}
	got := reports[0].Plugins
	if len(got) != 2 || got[0] != plugins[0] || got[1].KEKID != "" || got[1].Status != StatusError || len(got[1].Detail) > maxTypedDetail {
		t.Errorf("read back %+v", got)
	}
	if reports[0].Status != metav1.ConditionUnknown {
		t.Errorf("status %s, want Unknown (an error)", reports[0].Status)
	}
	raw, _, _ := unstructured.NestedSlice(obj.Object, healthReportsPath...)
	if e := raw[1].(map[string]any); e["remoteKeyID"] != RemoteKeyIDUnknown || e["status"] != TypedError {
		t.Errorf("error entry %v: want status Error and remoteKeyID %q (the schema requires one)", e, RemoteKeyIDUnknown)
	}
	none := HealthReportEntries("cp-a", nil, now)
	if e := none[0].(map[string]any); len(none) != 1 || e["keyID"] != NoPluginKeyID || e["status"] != TypedError {
		t.Errorf("no plugins: %v, want one Error entry (the schema wants at least one)", none)
	}
}

func TestParseReportFormat(t *testing.T) {
	for _, s := range []string{"conditions", "openshift-typed"} {
		if f, err := ParseReportFormat(s); err != nil || string(f) != s {
			t.Errorf("%q: %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "typed", "mixed", "none", "Conditions"} {
		if _, err := ParseReportFormat(s); err == nil || !strings.Contains(err.Error(), "openshift-typed") {
			t.Errorf("%q: error %v, want one naming the formats", s, err)
		}
	}
}
