package moduletest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

// TestAccModule_tofuTest runs the module's own tests
// (modules/cluster-bootstrap/tests/*.tftest.hcl) with `tofu test` against a
// real API server: bad inputs fail at plan naming the input, every pattern
// applies and its outputs are what a caller needs (kube-rbac-proxy in front
// of the web Deployment included), a profile change rolls and reaches the
// proxy's listener, every pattern turns off; and one run per trap: the
// reporter turned off alone plans, the KMS health is read at plan time
// while the reporter is upgraded, the defaults install only what was asked
// for, a first install plans before the KMSHealth object exists, and
// each part's monitoring input reaches its resource. `tofu test` destroys what it applied; this test
// then checks that nothing of ours is left. It needs OpenTofu whichever CLI
// TF_ACC_TERRAFORM_PATH names (run by hand under Terraform, it finds tofu
// itself); make acc runs it once, in the OpenTofu pass (scripts/test-acc.sh
// leaves it out of the Terraform passes by name, where it would be the same
// OpenTofu run again).
func TestAccModule_tofuTest(t *testing.T) {
	acceptance(t)
	tofu := accCLIPath(t)
	if !isOpenTofu(t, tofu) {
		var err error
		if tofu, err = devenv.Tool("tofu"); err != nil {
			t.Fatal(err)
		}
	}
	const ns, web, secret = "tofu-test", "web", "packaging-ca"
	inline, fromSecret := "v1.inline.tofu.kmshealth.io", "v1.source.tofu.kmshealth.io"
	c := &cluster{name: "tofu", env: east}
	c.prepare(t, ns, web, []string{inline, fromSecret})
	if _, err := east.Clientset().CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret},
		Data:       map[string][]byte{"ca.crt": []byte(c.cas[fromSecret])},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	providerDir := buildProvider(t)
	dir := filepath.Join(t.TempDir(), "cluster-bootstrap")
	copyTree(t, moduleDir(), dir)
	tf := newCLI(t, tofu, dir, providerDir)
	// The module has no provider block and the tests add none: the
	// provider takes the cluster from the environment, as it would in CI.
	tf.env = append(tf.env, "KUBE_CONFIG_PATH="+east.Kubeconfig)
	vars := filepath.Join(t.TempDir(), "tofu-test.tfvars.json")
	writeJSON(t, vars, map[string]string{
		"ca_pem": c.cas[inline], "namespace": ns, "web_deployment": web,
		"apiservice_inline": inline, "apiservice_source": fromSecret, "source_secret": secret,
	})
	out := tf.must(0, "test", "-no-color", "-var-file="+vars)
	runs := []string{"reporter_off_with_default_kms_health", "bad_socket_path", "unknown_profile_type", "rbac_proxy_listens_on_its_upstream", "rbac_proxy_without_tls_profile", "two_sources_for_one_ca_bundle",
		"two_sources_for_one_webhook_ca_bundle", "webhooks_named_for_a_crd", "bootstrap", "gate_at_plan_on_reporter_upgrade", "profile_change", "patterns_off",
		"only_ca_bundles", "reporter_first_install", "network_policy_given_is_enabled", "monitoring_opt_in", "kms_rotation_steps", "kms_retire_needs_a_run"}
	for _, run := range runs {
		if !regexp.MustCompile(`run "` + run + `"\.\.\. pass`).MatchString(out) {
			t.Errorf("run %q did not pass", run)
		}
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^Success! %d passed, 0 failed\.$`, len(runs))).MatchString(out) {
		t.Errorf("tofu test: want all %d runs passed", len(runs))
	}
	// The test cluster has no prometheus-operator: the plan of
	// monitoring_opt_in warns (at the reconciler's monitoring) instead of
	// failing.
	if !regexp.MustCompile(`Warning: prometheus-operator is not installed\s+with kmshealth_reconciler\.this\[0\],\s+on main\.tf line \d+, in resource "kmshealth_reconciler" "this":\s+\d+:\s+monitoring\s+=`).MatchString(out) {
		t.Error("tofu test: want the plan-time warning that prometheus-operator is not installed, at kmshealth_reconciler.this[0]'s monitoring")
	}
	c.checkClean(t, ns, web, []string{inline, fromSecret})
}
