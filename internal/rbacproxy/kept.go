package rbacproxy

import (
	"encoding/json"
	"slices"
	"strings"
)

// RecordPrefix prefixes the rbac proxy keys of the reconciler's record
// ConfigMap (kmshealth_reconciler writes it, reconcile mode reads it):
// "rbacproxy.<namespace>.<kind>.<workload>" (shortened as a label value)
// = the Kept entry as JSON.
const RecordPrefix = "rbacproxy."

// Kept is one protected workload the reconciler keeps, as its record
// holds it. The reconciler learns from it which config ConfigMap to
// follow (ObjectName of Target) and from that ConfigMap's record.json the
// whole sidecar; Image, Args and Pinned are what the installer's
// admission policy pins, and what import and drift read back.
//
// Pinned is the whole sidecar (Config.EncodePinned: the container, its
// volumes and the config hash, normalised with the API server's
// defaults), which the admission policy pins field for field.
type Kept struct {
	Target Target   `json:"target"`
	Image  string   `json:"image"`
	Args   []string `json:"args"`
	Pinned string   `json:"pinned,omitempty"`
}

// ConfigMapID is <namespace>/<name> of the workload's config ConfigMap:
// the reconciler's key for it.
func (k Kept) ConfigMapID() string { return k.Target.Namespace + "/" + ObjectName(k.Target) }

// RecordData is the record entries of proxies.
func RecordData(proxies []Kept) map[string]string {
	out := make(map[string]string, len(proxies))
	for _, p := range proxies {
		b, _ := json.Marshal(p) // strings only: cannot fail
		out[RecordPrefix+p.Target.Namespace+"."+ForLabelValue(p.Target)] = string(b)
	}
	return out
}

// FromRecord reads the record's rbac proxies, sorted by workload; entries
// that do not parse, or name no kind this package protects, are left out
// (the installer rewrites the record whole on its next apply, and reports
// the drift).
func FromRecord(data map[string]string) []Kept {
	var out []Kept
	for k, v := range data {
		if !strings.HasPrefix(k, RecordPrefix) {
			continue
		}
		var p Kept
		if json.Unmarshal([]byte(v), &p) != nil {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Kept) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return out
}
