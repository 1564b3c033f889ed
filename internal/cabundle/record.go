package cabundle

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// RecordKeyPrefix prefixes the keys of the reconciler's record (a
// ConfigMap of the kmshealth_reconciler installation) that name an
// APIService the reconciler keeps: "cabundle.<apiservice>" =
// "<Kind>/<namespace>/<name>/<key>" of its source. The record, not the
// annotation on the APIService, is what the reconciler keeps true: an
// installer that replaces or re-creates the APIService drops the
// annotation, never the record.
const RecordKeyPrefix = "cabundle."

// RecordKey is the record's key for apiservice.
func RecordKey(apiservice string) string { return RecordKeyPrefix + apiservice }

// RecordData is the record's entries for the APIServices in sources.
func RecordData(sources map[string]Source) map[string]string {
	out := make(map[string]string, len(sources))
	for apiservice, src := range sources {
		out[RecordKey(apiservice)] = src.String()
	}
	return out
}

// FromRecord reads the record's caBundle entries: each APIService with its
// source. Entries that do not parse are returned in bad, keyed by
// APIService, with the reason; keys of other patterns are ignored.
func FromRecord(data map[string]string) (good map[string]Source, bad map[string]error) {
	good, bad = map[string]Source{}, map[string]error{}
	for k, v := range data {
		apiservice, ok := strings.CutPrefix(k, RecordKeyPrefix)
		if !ok {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(apiservice); len(msgs) > 0 {
			bad[apiservice] = fmt.Errorf("record key %q: APIService name: %s", k, strings.Join(msgs, "; "))
			continue
		}
		src, err := ParseSource(v)
		if err != nil {
			bad[apiservice] = fmt.Errorf("record key %q: %w", k, err)
			continue
		}
		good[apiservice] = src
	}
	return good, bad
}

// targetRecordPrefix is the record key prefix of each webhook kind:
// "cabundle-validating.<name>", "cabundle-mutating.<name>",
// "cabundle-crd.<name>" (the APIService keeps "cabundle.<name>").
func targetRecordPrefix(kind string) string { return "cabundle-" + kindShort[kind] + "." }

// Kept is one target the reconciler keeps and the source of its bundle.
type Kept struct {
	Target Target
	Source Source
}

type keptValue struct {
	Source   string   `json:"source"`
	Webhooks []string `json:"webhooks,omitempty"`
}

// TargetRecordKey is the record's key for t.
func TargetRecordKey(t Target) string { return targetRecordPrefix(t.Kind) + t.Name }

// TargetRecordData is the record's entries for the webhook and CRD
// targets in kept: the value is JSON {"source": "<Kind>/<ns>/<name>/<key>",
// "webhooks": [...]} (no webhooks: every webhook of the configuration).
func TargetRecordData(kept []Kept) map[string]string {
	out := make(map[string]string, len(kept))
	for _, k := range kept {
		v, _ := json.Marshal(keptValue{Source: k.Source.String(), Webhooks: k.Target.Webhooks})
		out[TargetRecordKey(k.Target)] = string(v)
	}
	return out
}

// TargetsFromRecord reads the record's webhook and CRD entries, keyed by
// Target.String(). Entries that do not parse are returned in bad, with the
// reason; keys of other patterns are ignored.
func TargetsFromRecord(data map[string]string) (good map[string]Kept, bad map[string]error) {
	good, bad = map[string]Kept{}, map[string]error{}
	for k, v := range data {
		for _, kind := range WebhookKinds() {
			name, ok := strings.CutPrefix(k, targetRecordPrefix(kind))
			if !ok {
				continue
			}
			t := Target{Kind: kind, Name: name}
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				bad[t.String()] = fmt.Errorf("record key %q: %s name: %s", k, kind, strings.Join(msgs, "; "))
				continue
			}
			var kv keptValue
			if err := json.Unmarshal([]byte(v), &kv); err != nil {
				bad[t.String()] = fmt.Errorf("record key %q: %w", k, err)
				continue
			}
			src, err := ParseSource(kv.Source)
			if err != nil {
				bad[t.String()] = fmt.Errorf("record key %q: %w", k, err)
				continue
			}
			t.Webhooks = kv.Webhooks
			good[t.String()] = Kept{Target: t, Source: src}
		}
	}
	return good, bad
}
