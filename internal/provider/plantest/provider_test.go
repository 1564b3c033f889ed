package plantest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// planOnlyStep is a step that must plan (nothing is applied) and shows the
// inline caBundle resource to create; the resource makes Terraform
// configure the provider, and planning it needs no cluster.
func planOnlyStep(t *testing.T, providerBlock string) resource.TestStep {
	return resource.TestStep{
		Config: providerBlock + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "copied" {
  apiservice_name = "v1beta1.metrics.k8s.io"
  ca_bundle       = %q
}
`, newCertPEM(t, "ca", testpki.Options{})),
		PlanOnly:           true,
		ExpectNonEmptyPlan: true,
	}
}

// TestProvider_copiedHashicorpBlock copies a hashicorp/kubernetes
// provider block that uses every connection attribute its documentation
// lists (and its behaviour attributes), renames the provider, and plans.
// config_path and config_paths conflict there as here, so each has a step.
func TestProvider_copiedHashicorpBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"client-cert.pem":     newCertPEM(t, "client", testpki.Options{NotCA: true}),
		"client-key.pem":      "-----BEGIN EC PRIVATE KEY-----\nbm90IGEga2V5\n-----END EC PRIVATE KEY-----\n",
		"cluster-ca-cert.pem": newCertPEM(t, "cluster-ca", testpki.Options{}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	block := func(paths string) string {
		return fmt.Sprintf(`
provider "kmshealth" {
  host                   = "https://cluster_endpoint:6443"
  username               = "admin"
  password               = "correct-horse"
  insecure               = false
  tls_server_name        = "kubernetes.default.svc"
  client_certificate     = file("%[1]s/client-cert.pem")
  client_key             = file("%[1]s/client-key.pem")
  cluster_ca_certificate = file("%[1]s/cluster-ca-cert.pem")
  %[2]s
  config_context           = "admin@prod"
  config_context_auth_info = "admin"
  config_context_cluster   = "prod"
  token                    = "a-bearer-token"
  proxy_url                = "http://proxy.example.com:3128"

  exec {
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = "aws"
    args        = ["eks", "get-token", "--cluster-name", "prod"]
    env = {
      AWS_PROFILE = "prod"
    }
  }

  ignore_annotations = ["^service\\.beta\\.kubernetes\\.io\\/aws-load-balancer.*"]
  ignore_labels      = ["^example\\.com/.*"]

  experiments {
    manifest_resource = true
  }
}
`, dir, paths)
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			planOnlyStep(t, block(`config_path = "~/.kube/config"`)),
			planOnlyStep(t, block(`config_paths = ["~/.kube/config", "~/.kube/other"]`)),
		},
	})
}

// TestProvider_planTimeValidation: what hashicorp/kubernetes rejects
// at plan time is rejected here too, naming the attribute.
func TestProvider_planTimeValidation(t *testing.T) {
	t.Parallel()
	withExec := func(body string) string {
		return fmt.Sprintf("provider \"kmshealth\" {\n  host = \"https://h\"\n  exec {\n%s\n  }\n}\n", body)
	}
	failing := func(block string, parts ...string) resource.TestStep {
		step := planOnlyStep(t, block)
		step.ExpectError = literalRE(parts...)
		return step
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			failing(withExec(`api_version = "client.authentication.k8s.io/v1"`), `The argument "command" is required`),
			failing(withExec(`command = "aws"`), `The argument "api_version" is required`),
			failing(withExec("api_version = \"client.authentication.k8s.io/v1\"\ncommand = \"\""), "exec[0].command", "at least 1"),
			failing(withExec("api_version = \"client.authentication.k8s.io/v1alpha1\"\ncommand = \"aws\""),
				"Unsupported exec api_version", "removed from client-go in Kubernetes 1.24"),
			failing("provider \"kmshealth\" {\n  config_path = \"/a\"\n  config_paths = [\"/b\"]\n}\n", "Invalid Attribute Combination", "cannot be configured together: [config_path,config_paths]"),
		},
	})
}

// TestAPIServiceCABundle_emptyProviderConfig proves an unconfigured
// provider fails with a clear message at apply time, never a localhost call.
func TestAPIServiceCABundle_emptyProviderConfig(t *testing.T) {
	// Outside a pod: no KUBERNETES_SERVICE_HOST, so no in-cluster configuration either.
	for _, v := range []string{"KUBE_HOST", "KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBE_TOKEN", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} {
		t.Setenv(v, "")
	}
	good := newCertPEM(t, "ca", testpki.Options{})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config:      fmt.Sprintf("resource \"kmshealth_apiservice_cabundle\" \"test\" {\n apiservice_name = \"v1.x.example.com\"\n ca_bundle = %q\n}\n", good),
			ExpectError: regexp.MustCompile(`(?s)no Kubernetes connection configured.*config_path`),
		}},
	})
}
