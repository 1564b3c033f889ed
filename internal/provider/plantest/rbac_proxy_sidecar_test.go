package plantest

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// rbacProxyConfig is a kmshealth_rbac_proxy_sidecar "test" for
// Deployment apps/web with the given attributes.
func rbacProxyConfig(body string) string {
	return providerBlock + resourceBlock("kmshealth_rbac_proxy_sidecar", `  target {
    kind      = "Deployment"
    namespace = "apps"
    name      = "web"
  }
  upstream_port = 8080
`+body)
}

// TestRBACProxySidecar_releases: the sidecar's arguments are checked at
// plan time against the flag set of the image's release. kube-rbac-proxy
// v0.22.1 (the default) and v0.19.1 take the same flags, the deprecated
// --insecure-listen-address included, so plain HTTP plans for both; a
// release kmshealth knows no flags of is refused at image (by its tag) or
// at proxy_version (when stated), with the fix; a digest-only image plans
// with proxy_version. The plan needs no cluster.
func TestRBACProxySidecar_releases(t *testing.T) {
	t.Parallel()
	const addr = "kmshealth_rbac_proxy_sidecar.test"
	plans := func(body string, args ...string) resource.TestStep {
		want := map[int]knownvalue.Check{}
		for i, a := range args {
			want[i] = knownvalue.StringExact(a)
		}
		return resource.TestStep{
			Config: rbacProxyConfig(body), PlanOnly: true, ExpectNonEmptyPlan: true,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(addr, tfjsonpath.New("args"), knownvalue.ListPartial(want)),
			}},
		}
	}
	refused := func(body string, want ...string) resource.TestStep {
		return resource.TestStep{Config: rbacProxyConfig(body), PlanOnly: true, ExpectError: literalRE(want...)}
	}
	insecure := "--insecure-listen-address=0.0.0.0:8443"
	image := func(tag string) string {
		return fmt.Sprintf("image = %q\n", "quay.io/brancz/kube-rbac-proxy"+tag)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			plans("", "--secure-listen-address=0.0.0.0:8443", "--proxy-endpoints-port=8643"),
			plans(image(":v0.22.1")+"insecure_listen = true\n", insecure),
			plans(image(":v0.19.1")+"insecure_listen = true\n", insecure),
			plans(image(":v0.19.1@sha256:"+digest)+"insecure_listen = true\n", insecure),
			plans(image("@sha256:"+digest)+"proxy_version = \"v0.19.1\"\ninsecure_listen = true\n", insecure),
			refused(image(":v0.18.2")+"insecure_listen = true\n",
				"image", `"quay.io/brancz/kube-rbac-proxy:v0.18.2" is kube-rbac-proxy v0.18.2 by its tag`, "does not know",
				"v0.19.0 to v0.22.x", "set proxy_version"),
			refused(image(":v0.23.0"), "image", "kube-rbac-proxy v0.23.0", "v0.19.0 to v0.22.x"),
			refused(image(":v0.22.1")+"proxy_version = \"v1.0.0\"\n", "proxy_version", "kube-rbac-proxy v1.0.0", "v0.19.0 to v0.22.x"),
			refused("proxy_version = \"latest\"\n", "proxy_version", `"latest" is not a kube-rbac-proxy release`, "like v0.22.1"),
		},
	})
}

// digest is a well-formed sha256 digest for image references.
const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
