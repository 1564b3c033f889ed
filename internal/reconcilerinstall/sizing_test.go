package reconcilerinstall

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// TestMemoryLimitForMonotone: more watches or cached objects never size a
// smaller limit, a sized limit always holds twice the need, and the
// default limit is the one sized for the documented maximum.
func TestMemoryLimitForMonotone(t *testing.T) {
	for _, perKept := range []struct{ watches, cached int }{{1, 0}, {0, 1}, {1, 1}} {
		prev := int64(0)
		for n := 0; n <= 2*MaxDocumentedKept; n++ {
			w, c := n*perKept.watches, n*perKept.cached
			q := resource.MustParse(MemoryLimitFor(w, c))
			if q.Value() < prev {
				t.Fatalf("MemoryLimitFor(%d, %d) = %s, below the limit for one object less", w, c, q.String())
			}
			if q.Value() < 2*MemoryNeed(w, c) {
				t.Fatalf("MemoryLimitFor(%d, %d) = %s: under 2× the need %d", w, c, q.String(), MemoryNeed(w, c))
			}
			prev = q.Value()
		}
	}
	// The sizing table of the reconciler's page (templates/resources):
	// kept APIServices, each one named watch (its source) and one cached
	// object.
	for kept, want := range map[int]string{1: "192Mi", 200: "192Mi", 1000: "256Mi"} {
		if got := MemoryLimitFor(kept, kept); got != want {
			t.Errorf("MemoryLimitFor(%d, %d) = %s, the docs say %s", kept, kept, got, want)
		}
	}
	if got := MemoryLimitFor(MaxDocumentedKept, MaxDocumentedKept); got != DefaultMemoryLimit {
		t.Errorf("MemoryLimitFor at the documented maximum = %s; the default memory_limit is %s", got, DefaultMemoryLimit)
	}
	// The documented maximum is what bench reconcile measured: 1,000 kept
	// APIServices, each with its own source, RSS 92.6 MiB (101.9 MiB with
	// GOGC=100); one kept, 66.4 MiB.
	if need := MemoryNeed(MaxDocumentedKept, MaxDocumentedKept); need < 102<<20 {
		t.Errorf("MemoryNeed at the documented maximum = %d: below the 101.9 MiB measured", need)
	}
	if need := MemoryNeed(1, 1); need < 67<<20 {
		t.Errorf("MemoryNeed(1, 1) = %d: below the 66.4 MiB measured", need)
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
		name            string
		limit           string
		kept            int
		tls             []TLSProfile
		webhooks        []cabundle.Kept
		want            string
		watches, cached int
	}{
		{name: "default at the documented maximum", limit: DefaultMemoryLimit, kept: MaxDocumentedKept, watches: MaxDocumentedKept, cached: MaxDocumentedKept},
		{name: "no limit", limit: "", kept: 3000, watches: 3000, cached: 3000},
		{name: "old default at 1200", limit: "128Mi", kept: 1200, watches: 1200, cached: 1200, want: "memory_limit 128Mi is below the 129Mi the reconciler needs for the 1200 named watches and 1200 kept APIServices"},
		{name: "old default at 300", limit: "128Mi", kept: 300, watches: 300, cached: 300},
		{name: "fix named", limit: "64Mi", kept: 1, watches: 1, cached: 1, want: "set memory_limit to at least 192Mi"},
		{name: "TLS targets count", limit: "64Mi", tls: []TLSProfile{{Namespace: "a", Name: "p", Targets: []tlsprofile.Target{{Kind: "Deployment", Namespace: "a", Name: "w"}}}}, watches: 2, want: "for the 2 named watches and 0 kept"},
		{name: "a webhook configuration is cached, a CRD watched", limit: "64Mi", webhooks: []cabundle.Kept{
			{Target: cabundle.Target{Kind: cabundle.KindValidatingWebhookConfiguration, Name: "v"}, Source: cabundle.Source{Kind: cabundle.KindSecret, Namespace: "a", Name: "ca", Key: "ca.crt"}},
			{Target: cabundle.Target{Kind: cabundle.KindCustomResourceDefinition, Name: "c"}, Source: cabundle.Source{Kind: cabundle.KindSecret, Namespace: "a", Name: "ca", Key: "ca.crt"}},
		}, watches: 3, cached: 1, want: "for the 3 named watches and 1 kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{CABundles: kept(tc.kept), TLSProfiles: tc.tls, WebhookCABundles: tc.webhooks}
			c.MemoryLimit = tc.limit
			if got, cached := c.Watches(), c.Cached(); got != tc.watches || cached != tc.cached {
				t.Errorf("Watches(), Cached() = %d, %d; want %d, %d", got, cached, tc.watches, tc.cached)
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
