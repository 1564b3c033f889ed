package reconciler

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// parsedRecord remembers what a pattern parsed out of the last record it
// was given. Every reconcile of a kept object reads the record, which
// changes rarely; parsing it again each time validates every entry (names
// and sources, by regular expression): work proportional to the number of
// kept objects on every restore — 0.4 to 0.8 ms at 200 kept APIServices,
// the largest part of the reconcile (BENCHMARKS.md "Restore latency at 200
// kept"). The watches never modify a cached object, they replace it, so
// the pointer identifies what was parsed: a new record (an event, or a
// relist) is parsed once, on first use.
//
// parse is one pattern's record parser (cabundle.FromRecord,
// cabundle.TargetsFromRecord): its entries that parse, and the reason for
// each that does not. What it returns is shared by every caller: read it,
// never modify it.
type parsedRecord[V any] struct {
	parse func(data map[string]string) (good map[string]V, bad map[string]error)

	mu   sync.Mutex
	from *corev1.ConfigMap // the record good and bad were parsed from
	good map[string]V
	bad  map[string]error
}

func newParsedRecord[V any](parse func(map[string]string) (map[string]V, map[string]error)) *parsedRecord[V] {
	return &parsedRecord[V]{parse: parse}
}

// of returns what parse returns for record's data, parsing it only if
// record is not the one parsed last.
func (r *parsedRecord[V]) of(record *corev1.ConfigMap) (good map[string]V, bad map[string]error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.from != record {
		r.good, r.bad = r.parse(record.Data)
		r.from = record
	}
	return r.good, r.bad
}
