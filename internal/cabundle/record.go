package cabundle

import (
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
