package plantest

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// healthConfig is a kmshealth_kms_plugin_health "test" with the given body.
func healthConfig(body string) string {
	return providerBlock + "\ndata \"kmshealth_kms_plugin_health\" \"test\" {\n" + body + "\n}\n"
}

// TestKMSPluginHealth_badInput: bad arguments fail the plan with a
// diagnostic that names the attribute.
func TestKMSPluginHealth_badInput(t *testing.T) {
	t.Parallel()
	planOnly := func(body string, parts ...string) resource.TestStep {
		return resource.TestStep{Config: healthConfig(body), PlanOnly: true, ExpectError: literalRE(parts...)}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			planOnly(`target = "a/b"`, "Invalid target", `target: target "a/b": want group/version/resource/name, e.g. kmshealth.io/v1alpha1/kmshealths/cluster`),
			planOnly(`target = "kmshealth.io/v1alpha1/KMSHealths/x"`, "Invalid target", `resource "KMSHealths" (plural, lower case)`),
			planOnly(`max_staleness = "-1s"`, "Invalid duration", `max_staleness: "-1s" must be positive`),
			planOnly(`max_staleness = "0s"`, "Invalid duration", `max_staleness: "0s" must be positive`),
			planOnly(`max_staleness = "soon"`, "Invalid duration", `max_staleness: "soon" is not a duration`),
			planOnly(`wait_timeout = "-5s"`, "Invalid duration", `wait_timeout: "-5s" must be zero (no wait) or positive`),
			planOnly(`expected_nodes = []`, "expected_nodes", "must contain at least 1 elements"),
			planOnly(`expected_nodes = ["cp-a", "Bad_Name"]`, "expected_nodes", `"Bad_Name" is not a node name`),
		},
	})
}
