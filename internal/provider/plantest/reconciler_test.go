package plantest

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// reconcilerConfig is a kmshealth_reconciler "test" with the given body.
func reconcilerConfig(body string) string {
	return providerBlock + resourceBlock("kmshealth_reconciler", body+noWait(body))
}

// TestReconciler_badInput: every bad attribute fails the plan with a
// diagnostic that names it.
func TestReconciler_badInput(t *testing.T) {
	t.Parallel()
	planOnly := func(body, wantErr string) resource.TestStep {
		return resource.TestStep{Config: reconcilerConfig(body), PlanOnly: true, ExpectError: wrappedRE(wantErr)}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			planOnly(`namespace = "Not_A_Namespace"`, `(?s)namespace.*"Not_A_Namespace" is not a namespace name`),
			planOnly(`namespace = "ok"
name = "9lives"`, `(?s)name.*"9lives" is not a reconciler name`),
			planOnly(`namespace = "ok"
name = "`+strings.Repeat("a", 56)+`"`, `no more than 55 characters`),
			planOnly(`namespace = "ok"
replicas = 0`, `(?s)replicas.*must be between 1 and 2147483647, got: 0`),
			planOnly(`namespace = "ok"
image = ""`, `(?s)Invalid image.*image: must not be empty`),
			planOnly(`namespace = "ok"
ca_bundles = { "v1.x.example.com" = "Secret/default/no-key" }`, `(?s)Invalid CA bundle source.*"Secret/default/no-key".*want Kind/namespace/name/key`),
			planOnly(`namespace = "ok"
ca_bundles = { "v1.x.example.com" = "Pod/default/x/ca.crt" }`, `(?s)ca_bundles.*kind "Pod": must be "Secret" or "ConfigMap"`),
			planOnly(`namespace = "ok"
ca_bundles = { "Not_An_APIService" = "Secret/default/x/ca.crt" }`, `(?s)ca_bundles.*Not_An_APIService`),
			planOnly(`namespace = "ok"
cpu_request = "lots"`, `(?s)Invalid quantity.*cpu_request: "lots" is not a quantity`),
			planOnly(`namespace = "ok"
memory_request = "1Gi"`, `(?s)memory_request.*memory_request 1Gi is above memory_limit 256Mi`),
			planOnly(`namespace = "ok"
memory_request = "32Mi"
memory_limit = "64Mi"
ca_bundles = { "v1.x.example.com" = "Secret/default/x/ca.crt" }`, `(?s)Memory limit below what the reconciler needs.*memory_limit 64Mi is below.*192Mi`),
			planOnly(`namespace = "ok"
tls_profiles = [{ namespace = "apps", name = "p", rollout_targets = [{ kind = "Pod", namespace = "apps", name = "web" }] }]`,
				`(?s)tls_profiles\[0\].rollout_targets\[0\].kind.*value must be one of`),
			planOnly(`namespace = "ok"
tls_profiles = [{ namespace = "Apps", name = "p" }]`, `(?s)Invalid value.*"Apps" is not a namespace name`),
			planOnly(`namespace = "ok"
tls_profiles = [{ namespace = "apps", name = "p" }, { namespace = "apps", name = "p" }]`, `(?s)Duplicate List Value.*tls_profiles.*duplicate values`),
			planOnly(`namespace = "ok"
rbac_proxy_sidecars = [{ target = { kind = "Deployment", namespace = "apps", name = "web" }, image = "quay.io/brancz/kube-rbac-proxy:v0.19.1", args = ["--upstream=http://127.0.0.1:8080/"], pinned_sidecar = "{}" }]`,
				`(?s)Invalid pinned_sidecar.*rbac_proxy_sidecars\[0\].pinned_sidecar: decode the pinned sidecar.*pinned_sidecar = s.pinned_sidecar`),
			planOnly(`namespace = "ok"
monitoring = { labels = { "bad key" = "x" } }`, `(?s)Invalid labels.*monitoring.labels: key "bad key" is not a label key`),
			planOnly(`namespace = "ok"
monitoring = { labels = { release = "not ok!" } }`, `(?s)Invalid labels.*monitoring.labels: value "not ok!" of key "release" is not a label value`),
		},
	})
}
