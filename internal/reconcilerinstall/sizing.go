package reconcilerinstall

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The reconciler's memory grows with the watches its record implies: one
// field-selected watch per kept object and per source (controller.stream).
// The figures are bench reconcile's (-tags incluster, as the image;
// BENCHMARKS.md "Reconciler memory per kept object"), rounded up: RSS
// 56.6–58.6 MiB with one kept APIService, 120.5–151.1 KiB more per kept
// APIService with its own source ConfigMap (two watches) over four runs,
// 176.1–204.0 MiB at 1,000 when the record grows to it.
const (
	// MemoryBase is the reconciler's RSS with nothing kept, in bytes.
	MemoryBase = 64 << 20
	// MemoryPerWatch is what one more watched object adds, in bytes.
	MemoryPerWatch = 80 << 10
	// MaxDocumentedWatches is the most the default memory_limit holds with
	// 2× headroom: 1,000 kept APIServices each with its own source.
	MaxDocumentedWatches = 2000
	// memoryStep rounds a sized limit up to a multiple of 64Mi.
	memoryStep = 64 << 20
)

// MemoryNeed is the reconciler's expected RSS, in bytes, with watches
// watched objects.
func MemoryNeed(watches int) int64 {
	return MemoryBase + int64(max(watches, 0))*MemoryPerWatch
}

// MemoryLimitFor is the memory limit that holds watches watched objects
// with 2× headroom, rounded up to a multiple of 64Mi, as a quantity.
func MemoryLimitFor(watches int) string {
	limit := 2 * MemoryNeed(watches)
	limit = (limit + memoryStep - 1) / memoryStep * memoryStep
	return quantity(limit)
}

// Watches is the number of objects the reconciler watches for what c
// keeps, counting every source once per user (an upper bound): each kept
// APIService, webhook configuration or CRD and its source, each TLS
// profile ConfigMap and its targets, each rbac-proxy workload and its
// config ConfigMap. The record, the Lease and the KMS aggregator's watches
// are in MemoryBase.
func (c Config) Watches() int {
	n := 2*len(c.CABundles) + 2*len(c.WebhookCABundles) + 2*len(c.RBACProxies)
	for _, p := range c.TLSProfiles {
		n += 1 + len(p.Targets)
	}
	return n
}

// CheckMemoryLimit refuses a memory_limit below what the record needs:
// the reconciler would be OOM-killed on its first pass, and again on every
// restart. No limit ("") is not checked.
func (c Config) CheckMemoryLimit() error {
	if c.MemoryLimit == "" {
		return nil
	}
	limit, err := resource.ParseQuantity(c.MemoryLimit)
	if err != nil {
		return nil //nolint:nilerr // Resources.Validate reports a bad quantity
	}
	n := c.Watches()
	need := MemoryNeed(n)
	if limit.Value() >= need {
		return nil
	}
	return fmt.Errorf("memory_limit %s is below the %s the reconciler needs for the %d objects it watches (%s + %s each, measured): set memory_limit to at least %s (2× headroom), or leave it unset for the default %s (which holds %d)",
		c.MemoryLimit, fmt.Sprintf("%dMi", (need+1<<20-1)>>20), n, quantity(MemoryBase), quantity(MemoryPerWatch), MemoryLimitFor(n), DefaultMemoryLimit, MaxDocumentedWatches)
}

func (c Config) validateMemory() []error {
	if err := c.CheckMemoryLimit(); err != nil {
		return []error{err}
	}
	return nil
}

// quantity formats bytes as a binary quantity (64Mi).
func quantity(bytes int64) string { return resource.NewQuantity(bytes, resource.BinarySI).String() }
