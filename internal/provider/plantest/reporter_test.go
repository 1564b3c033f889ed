package plantest

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// reporterConfig is a kmshealth_reporter "test" with the given body.
func reporterConfig(body string) string {
	return providerBlock + resourceBlock("kmshealth_reporter", body+noWait(body))
}

// TestReporter_badInput: every bad attribute fails the plan with a
// diagnostic that names it and the fix.
func TestReporter_badInput(t *testing.T) {
	t.Parallel()
	planOnly := func(body string, want ...string) resource.TestStep {
		return resource.TestStep{Config: reporterConfig("namespace = \"ok\"\n" + body), PlanOnly: true, ExpectError: literalRE(want...)}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			planOnly(`kms_sockets = ["unix:///tmp/kms.sock"]`, "kms_sockets", `"unix:///tmp/kms.sock": must match ^unix:///var/run/kmsplugin/kms-(\d+)\.sock$`, "or remove kms_sockets and set socket_dir"),
			planOnly(`kms_sockets = ["unix:///var/run/kmsplugin/kms-1.sock", "unix:///var/run/kmsplugin/kms-01.sock"]`, "kms_sockets", "keyID 1 is already given"),
			planOnly(`kms_sockets = []`, "kms_sockets is empty"),
			planOnly(`kms_sockets = ["unix:///var/run/kmsplugin/kms-1.sock"]
socket_dir = "/var/run/kmsplugin"`, `"kms_sockets"`, "cannot be specified when", `"socket_dir"`),
			planOnly(`socket_dir = "run/kms"`, "socket_dir", `"run/kms" is not an absolute path`),
			planOnly(`probe_interval = "1s"`, `probe_interval: "1s" must be at least 5s`),
			planOnly(`probe_interval = "soon"`, `probe_interval: "soon" is not a duration`),
			planOnly(`read_timeout = "30s"`, "read_timeout 30s: must be positive and shorter than the interval (30s)", "lower read_timeout or raise probe_interval"),
			planOnly(`probe_interval = "45s"
write_timeout = "1m"`, "write_timeout 1m0s: must be positive and shorter than the interval (45s)"),
			planOnly(`target = "kmshealths/cluster"`, "target", "want group/version/resource/name"),
			planOnly(`target = "kmshealth.io/v1alpha1/KMSHealth/cluster"`, "target", `resource "KMSHealth" (plural, lower case)`),
			planOnly(`target = "operator.openshift.io/v1/kubeapiservers/cluster"
install_crd = true`, "install_crd", "target operator.openshift.io/v1/kubeapiservers/cluster is not a KMSHealth object", "set install_crd = false"),
			planOnly(`report_format = "openshift-typed"`, "report_format", `writes status.encryptionStatus.healthReports, which a KMSHealth object does not have`, "set target to the OpenShift operator object"),
			planOnly(`report_format = "typed"`, "report_format", `value must be one of`),
			planOnly(`node_selector = { "bad key" = "" }`, "node_selector", `key "bad key" is not a label key`),
			planOnly(`tolerations = [{ key = "a", operator = "In" }]`, "tolerations", `operator "In": must be Exists or Equal`),
			planOnly(`tolerations = [{ operator = "Exists", value = "x" }]`, "tolerations", "must be empty with operator Exists"),
			planOnly(`tolerations = [{ key = "a", effect = "NoSchedule", toleration_seconds = 5 }]`, "tolerations", "only valid with effect NoExecute"),
			planOnly(`run_as_user = -1`, "run_as_user", "must be at least 0"),
			planOnly(`name = "Reporter"`, "name", `"Reporter" is not a reporter name`),
			planOnly(`priority_class_name = "Node Critical"`, "priority_class_name", `"Node Critical" is not a PriorityClass name`),
			planOnly(`memory_request = "1Gi"`, "memory_request", "memory_request 1Gi is above memory_limit 128Mi"),
			planOnly(`image = ""`, "image: must not be empty"),
		},
	})
}
