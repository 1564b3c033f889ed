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
// What parse returns is shared by every caller: read it, never modify it.
type parsedRecord[T any] struct {
	parse func(data map[string]string) T

	mu   sync.Mutex
	from *corev1.ConfigMap // the record val was parsed from
	val  T
}

func newParsedRecord[T any](parse func(data map[string]string) T) *parsedRecord[T] {
	return &parsedRecord[T]{parse: parse}
}

// of returns what parse returns for record's data, parsing it only if
// record is not the one parsed last.
func (r *parsedRecord[T]) of(record *corev1.ConfigMap) T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.from != record {
		r.val, r.from = r.parse(record.Data), record
	}
	return r.val
}
