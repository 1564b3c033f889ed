package reconcilerinstall

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// TestMemoryLimitForMonotone: more watches never size a smaller limit, a
// sized limit always holds twice the need, and the default limit is the
// one sized for the documented maximum.
func TestMemoryLimitForMonotone(t *testing.T) {
	prev := int64(0)
	for n := 0; n <= 2*MaxDocumentedWatches; n++ {
		q := resource.MustParse(MemoryLimitFor(n))
		if q.Value() < prev {
			t.Fatalf("MemoryLimitFor(%d) = %s, below MemoryLimitFor(%d)", n, q.String(), n-1)
		}
		if q.Value() < 2*MemoryNeed(n) {
			t.Fatalf("MemoryLimitFor(%d) = %s: under 2× the need %d", n, q.String(), MemoryNeed(n))
		}
		prev = q.Value()
	}
	// The sizing table of the reconciler's page (templates/resources).
	for n, want := range map[int]string{2: "192Mi", 400: "192Mi", 2000: "448Mi"} {
		if got := MemoryLimitFor(n); got != want {
			t.Errorf("MemoryLimitFor(%d) = %s, the docs say %s", n, got, want)
		}
	}
	if got := MemoryLimitFor(MaxDocumentedWatches); got != DefaultMemoryLimit {
		t.Errorf("MemoryLimitFor(%d) = %s; the default memory_limit is %s", MaxDocumentedWatches, got, DefaultMemoryLimit)
	}
	// The documented maximum is what bench reconcile measured: 1,000 kept
	// APIServices, each with its own source, RSS up to 204 MiB.
	if need := MemoryNeed(MaxDocumentedWatches); need < 204<<20 {
		t.Errorf("MemoryNeed(%d) = %d: below the 204 MiB measured", MaxDocumentedWatches, need)
	}
}

// TestCheckMemoryLimit: a limit below what the record needs is refused,
// naming memory_limit and the limit to set; the default and no limit pass.
func TestCheckMemoryLimit(t *testing.T) {
	kept := func(n int) map[string]cabundle.Source {
		m := map[string]cabundle.Source{}
		for i := range n {
			m[fmt.Sprintf("v1.a%d.example.com", i)] = cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "ns", Name: "ca", Key: "ca.crt"}
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		limit   string
		kept    int
		tls     []TLSProfile
		want    string
		watches int
	}{
		{name: "default at the documented maximum", limit: DefaultMemoryLimit, kept: MaxDocumentedWatches / 2, watches: MaxDocumentedWatches},
		{name: "no limit", limit: "", kept: 3000, watches: 6000},
		{name: "old default at 1000", limit: "128Mi", kept: 1000, watches: 2000, want: "memory_limit 128Mi is below the 221Mi the reconciler needs for the 2000 objects it watches"},
		{name: "old default at 300", limit: "128Mi", kept: 300, watches: 600},
		{name: "fix named", limit: "64Mi", kept: 1, watches: 2, want: "set memory_limit to at least 192Mi"},
		{name: "TLS targets count", limit: "64Mi", tls: []TLSProfile{{Namespace: "a", Name: "p", Targets: []tlsprofile.Target{{Kind: "Deployment", Namespace: "a", Name: "w"}}}}, watches: 2, want: "for the 2 objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{CABundles: kept(tc.kept), TLSProfiles: tc.tls}
			c.MemoryLimit = tc.limit
			if got := c.Watches(); got != tc.watches {
				t.Errorf("Watches() = %d, want %d", got, tc.watches)
			}
			err := c.CheckMemoryLimit()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
