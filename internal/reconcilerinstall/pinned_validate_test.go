package reconcilerinstall

import (
	"strings"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// TestValidatePinnedSidecar: an entry of rbac_proxy_sidecars needs the
// sidecar's pinned_sidecar, decodable and of the same image and args, or
// the policy would pin nothing (or another sidecar).
func TestValidatePinnedSidecar(t *testing.T) {
	cfg := rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "apps", Name: "web"},
		UpstreamPort: 8080, ServiceAccountName: "default"}
	other := cfg
	other.Image = "quay.io/brancz/kube-rbac-proxy:v0.19.1"
	otherPinned, err := other.EncodePinned()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*RBACProxy)
		want   string // "" = valid
	}{
		{"as the sidecar resource gives it", func(*RBACProxy) {}, ""},
		{"no pin", func(p *RBACProxy) { p.Pinned = "" }, "rbac_proxy_sidecars[0].pinned_sidecar: must be set"},
		{"not JSON", func(p *RBACProxy) { p.Pinned = "{" }, "rbac_proxy_sidecars[0].pinned_sidecar: decode the pinned sidecar"},
		{"an unknown field", func(p *RBACProxy) { p.Pinned = strings.Replace(p.Pinned, `{"configHash"`, `{"x":1,"configHash"`, 1) }, "unknown field"},
		{"another container", func(p *RBACProxy) {
			p.Pinned = strings.Replace(p.Pinned, `"name":"`+rbacproxy.ContainerName+`"`, `"name":"app"`, 1)
		}, "is not a \"kmshealth-rbac-proxy\" container"},
		{"another sidecar's pin", func(p *RBACProxy) { p.Pinned = otherPinned }, "its image and args are not this entry's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := rbacProxyEntry(t, cfg)
			tc.mutate(&p)
			c := Config{Namespace: "kmshealth", Name: "rec", Image: "x", Replicas: 1, RBACProxies: []RBACProxy{p}}
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
