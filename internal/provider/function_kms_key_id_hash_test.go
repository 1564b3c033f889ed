package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// functionVersionChecks: provider functions need Terraform 1.8 (OpenTofu
// 1.7, which reports its own version, 1.7 or later). An older CLI fails the
// test instead of skipping it; scripts/test-acc.sh does not run
// TestAccFunction_* under Terraform 1.5.7.
var functionVersionChecks = []tfversion.TerraformVersionCheck{tfversion.RequireAbove(tfversion.Version1_8_0)}

// keyIDHashWritten writes a Secret, which the test API server encrypts
// through its KMS v2 plugin, and returns the key_id_hash labels of the
// apiserver_envelope_encryption_key_id_hash_total series (transformation_type
// to_storage, our provider) that the write counted: what a real
// kube-apiserver reports for the plugin's key ID. Series of keys used
// before (other tests rotate the plugin's key) did not move, so they are
// left out.
func keyIDHashWritten(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	counts := func() map[string]float64 {
		body, err := env.Clientset().Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatalf("scrape kube-apiserver /metrics: %v", err)
		}
		samples, err := devenv.ParseSamples(body)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, s := range samples {
			if s.Name == "apiserver_envelope_encryption_key_id_hash_total" && s.Labels["transformation_type"] == "to_storage" &&
				s.Labels["provider_name"] == testenv.KMSProviderName {
				out[s.Labels["key_id_hash"]] += s.Value
			}
		}
		return out
	}
	before := counts()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "through-kms"}, StringData: map[string]string{"k": "v"}}
	if _, err := env.Clientset().CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The counter is incremented inside the write, before the API server
	// answers it: no wait is needed.
	var hashes []string
	for h, n := range counts() {
		if n > before[h] {
			hashes = append(hashes, h)
		}
	}
	if len(hashes) == 0 {
		t.Fatalf("no apiserver_envelope_encryption_key_id_hash_total{transformation_type=\"to_storage\",provider_name=%q} series counted a Secret write", testenv.KMSProviderName)
	}
	slices.Sort(hashes)
	return hashes
}

// TestKMSKeyIDHashMatchesAPIServer pins kmshealth.KeyIDHash to the label a
// real kube-apiserver gives the KMS v2 plugin's key ID after a write through
// the plugin.
func TestKMSKeyIDHashMatchesAPIServer(t *testing.T) {
	hashes := keyIDHashWritten(t)
	want, err := kmshealth.KeyIDHash(env.KMS.KeyID())
	if err != nil {
		t.Fatal(err)
	}
	if len(hashes) != 1 || hashes[0] != want {
		t.Fatalf("kube-apiserver reports key_id_hash %v for key ID %q, KeyIDHash gives %s", hashes, env.KMS.KeyID(), want)
	}
}

func functionOutput(name, call string) string {
	return fmt.Sprintf("output %q {\n  value = %s\n}\n", name, call)
}

// TestAccFunction_kmsKeyIDHash: kms_key_id_hash of the test plugin's key
// ID, through the CLI, is the label kube-apiserver reports after a write
// through that plugin; an empty or over-long key ID is refused.
func TestAccFunction_kmsKeyIDHash(t *testing.T) {
	hashes := keyIDHashWritten(t)
	if len(hashes) != 1 {
		t.Fatalf("kube-apiserver reports %d key ID hashes %v for one key ID", len(hashes), hashes)
	}
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionVersionChecks,
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: functionOutput("hash", fmt.Sprintf("provider::kmshealth::kms_key_id_hash(%q)", env.KMS.KeyID())) +
				functionOutput("literal", `provider::kmshealth::kms_key_id_hash("kek-2026-11")`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("hash", knownvalue.StringExact(hashes[0])),
				statecheck.ExpectKnownOutputValue("literal", knownvalue.StringExact("sha256:3689fef6122471554fb2d7af934bd6581415d770bd7d2065c3596e62a3cd5a07")),
			},
		}, {
			Config:      functionOutput("hash", `provider::kmshealth::kms_key_id_hash("")`),
			ExpectError: literalRE(`Invalid value for "key_id" parameter: the key ID is empty`, "kube-apiserver refuses an empty KMS v2 key ID"),
		}, {
			Config:      functionOutput("hash", fmt.Sprintf("provider::kmshealth::kms_key_id_hash(%q)", strings.Repeat("k", kmshealth.MaxKEKIDBytes+1))),
			ExpectError: literalRE("the key ID is 1025 bytes, more than the 1024 kube-apiserver accepts"),
		}},
	})
}
