package tlsprofile

import (
	"encoding/json"
	"slices"
	"strings"
)

// RecordPrefix prefixes the TLS profile keys of the reconciler's record
// ConfigMap (kmshealth_reconciler writes it, reconcile mode reads it):
// "tlsprofile.<namespace>.<name>" = the rollout targets as JSON. A
// namespace holds no dot, so the key splits unambiguously.
const RecordPrefix = "tlsprofile."

// Kept is one profile ConfigMap the reconciler keeps, as its record holds
// it. The reconciler learns which ConfigMaps to keep from the record and
// what each keeps (spec, targets) from the ConfigMap's own annotations;
// Targets here are what the installer's RBAC and policies name.
type Kept struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Targets   []Target `json:"rolloutTargets"`
}

// ID is <namespace>/<name>, the reconciler's key for the profile.
func (k Kept) ID() string { return k.Namespace + "/" + k.Name }

// RecordData is the record entries of profiles.
func RecordData(profiles []Kept) map[string]string {
	out := make(map[string]string, len(profiles))
	for _, p := range profiles {
		targets := p.Targets
		if targets == nil {
			targets = []Target{}
		}
		b, _ := json.Marshal(targets) // strings only: cannot fail
		out[RecordPrefix+p.Namespace+"."+p.Name] = string(b)
	}
	return out
}

// FromRecord reads the record's TLS profiles, sorted by namespace/name;
// entries that do not parse are left out (the installer rewrites the
// record whole on its next apply, and reports the drift).
func FromRecord(data map[string]string) []Kept {
	var out []Kept
	for k, v := range data {
		rest, ok := strings.CutPrefix(k, RecordPrefix)
		if !ok {
			continue
		}
		ns, name, ok := strings.Cut(rest, ".")
		if !ok || ns == "" || name == "" {
			continue
		}
		p := Kept{Namespace: ns, Name: name}
		if json.Unmarshal([]byte(v), &p.Targets) != nil {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Kept) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}
