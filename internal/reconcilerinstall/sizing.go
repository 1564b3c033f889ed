package reconcilerinstall

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// The reconciler's memory grows with what its record implies: one named
// watch (controller.stream) per source, CRD, TLS profile ConfigMap and
// target, sidecar workload and config ConfigMap, and one cached object per
// kept APIService and webhook configuration (one watch of each of those
// kinds holds them all: controller.Kind.ClusterWide). The figures are
// bench reconcile's (-tags incluster, as the image; BENCHMARKS.md "A
// stream that reads its own watch"), rounded up: RSS 66.4 MiB with one
// kept APIService (and the 1,000 APIServices of the bench cached),
// 26.9–28.2 KiB more per kept APIService with its own source ConfigMap
// (one named watch and one cached object) at the reconciler's GOGC=50,
// 35.3 KiB at GOGC=100, 92.6 MiB at 1,000.
const (
	// MemoryBase is the reconciler's RSS with nothing kept, in bytes,
	// the cluster's other APIServices and webhook configurations (a few
	// hundred; the bench's 1,000) cached.
	MemoryBase = 72 << 20
	// MemoryPerWatch is what one more named watch adds, in bytes.
	MemoryPerWatch = 40 << 10
	// MemoryPerCached is what one more kept APIService or webhook
	// configuration adds to the one watch of its kind, in bytes.
	MemoryPerCached = 8 << 10
	// MaxDocumentedKept is the most kept APIServices, each with its own
	// source, that the default memory_limit holds with 2× headroom.
	MaxDocumentedKept = 1000
	// memoryStep rounds a sized limit up to a multiple of 64Mi.
	memoryStep = 64 << 20
)

// MemoryNeed is the reconciler's expected RSS, in bytes, with watches
// named watches and cached kept objects of the cluster-wide watches.
func MemoryNeed(watches, cached int) int64 {
	return MemoryBase + int64(max(watches, 0))*MemoryPerWatch + int64(max(cached, 0))*MemoryPerCached
}

// MemoryLimitFor is the memory limit that holds MemoryNeed(watches,
// cached) with 2× headroom, rounded up to a multiple of 64Mi, as a
// quantity.
func MemoryLimitFor(watches, cached int) string {
	limit := 2 * MemoryNeed(watches, cached)
	limit = (limit + memoryStep - 1) / memoryStep * memoryStep
	return quantity(limit)
}

// Watches is the number of named watches the reconciler runs for what c
// keeps, counting every source once per user (an upper bound): each
// source of a kept APIService or webhook target, each kept CRD, each TLS
// profile ConfigMap and its targets, each rbac-proxy workload and its
// config ConfigMap. The record, the Lease and the KMS aggregator's watches
// are in MemoryBase.
func (c Config) Watches() int {
	n := len(c.CABundles) + len(c.WebhookCABundles) + 2*len(c.RBACProxies)
	for _, k := range c.WebhookCABundles {
		if k.Target.Kind == cabundle.KindCustomResourceDefinition {
			n++
		}
	}
	for _, p := range c.TLSProfiles {
		n += 1 + len(p.Targets)
	}
	return n
}

// Cached is the number of kept objects the cluster-wide watches hold:
// each kept APIService and webhook configuration.
func (c Config) Cached() int {
	n := len(c.CABundles)
	for _, k := range c.WebhookCABundles {
		if k.Target.Kind != cabundle.KindCustomResourceDefinition {
			n++
		}
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
	n, cached := c.Watches(), c.Cached()
	need := MemoryNeed(n, cached)
	if limit.Value() >= need {
		return nil
	}
	return fmt.Errorf("memory_limit %s is below the %s the reconciler needs for the %d named watches and %d kept APIServices and webhook configurations it follows (%s + %s per watch + %s per kept object, measured): set memory_limit to at least %s (2× headroom), or leave it unset for the default %s (which holds %d kept APIServices with their sources)",
		c.MemoryLimit, fmt.Sprintf("%dMi", (need+1<<20-1)>>20), n, cached, quantity(MemoryBase), quantity(MemoryPerWatch), quantity(MemoryPerCached), MemoryLimitFor(n, cached), DefaultMemoryLimit, MaxDocumentedKept)
}

func (c Config) validateMemory() []error {
	if err := c.CheckMemoryLimit(); err != nil {
		return []error{err}
	}
	return nil
}

// quantity formats bytes as a binary quantity (64Mi).
func quantity(bytes int64) string { return resource.NewQuantity(bytes, resource.BinarySI).String() }
