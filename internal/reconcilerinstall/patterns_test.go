package reconcilerinstall

import (
	"maps"
	"slices"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// everyPattern keeps something of every pattern.
func everyPattern(t *testing.T) Config {
	t.Helper()
	src := cabundle.Source{Kind: cabundle.KindSecret, Namespace: "pat-src", Name: "ca", Key: "ca.crt"}
	cfg := rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "pat-app", Name: "web"},
		UpstreamPort: 8080, ServiceAccountName: "default"}
	c := testConfig()
	c.CABundles = map[string]cabundle.Source{"v1.pat.example.com": src}
	c.WebhookCABundles = []cabundle.Kept{{Target: cabundle.Target{Kind: cabundle.KindValidatingWebhookConfiguration, Name: "pat"}, Source: src}}
	c.TLSProfiles = []TLSProfile{{Namespace: "pat-app", Name: "tls", Targets: []tlsprofile.Target{{Kind: "Deployment", Namespace: "pat-app", Name: "web"}}}}
	c.RBACProxies = []RBACProxy{rbacProxyEntry(t, cfg)}
	return c
}

// TestPatternsAreWellFormed: every registration has a unique name, and
// each Role a component, name, namespaces and rules.
func TestPatternsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Patterns {
		if p.Name == "" || seen[p.Name] {
			t.Errorf("pattern %q: names must be set and unique", p.Name)
		}
		seen[p.Name] = true
		if r := p.Role; r != nil && (r.Component == "" || r.Name == nil || r.Namespaces == nil || r.Rules == nil) {
			t.Errorf("pattern %s: a Role needs Component, Name, Namespaces and Rules", p.Name)
		}
		if (p.Record == nil) != (p.ReadRecord == nil) {
			t.Errorf("pattern %s: a record entry it writes must be read back (import, drift), and only what it writes", p.Name)
		}
	}
}

// TestRecordKeysArePerPattern: no two patterns write the same record key,
// and each reads back exactly what it wrote.
func TestRecordKeysArePerPattern(t *testing.T) {
	c := everyPattern(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, p := range Patterns {
		if p.Record == nil {
			continue
		}
		data := p.Record(c)
		if len(data) == 0 {
			t.Errorf("pattern %s writes no record entry for a Config that keeps some of it", p.Name)
		}
		for k := range data {
			if o, dup := owner[k]; dup {
				t.Errorf("record key %q is written by %s and %s", k, o, p.Name)
			}
			owner[k] = p.Name
		}
	}
	var back Config
	back.readPatternRecords(BuildRecord(c).Data)
	if !slices.Equal(slices.Sorted(maps.Keys(back.CABundles)), slices.Sorted(maps.Keys(c.CABundles))) ||
		len(back.WebhookCABundles) != len(c.WebhookCABundles) || len(back.TLSProfiles) != len(c.TLSProfiles) || len(back.RBACProxies) != len(c.RBACProxies) {
		t.Errorf("read back %+v, want the patterns of %+v", back, c)
	}
}
