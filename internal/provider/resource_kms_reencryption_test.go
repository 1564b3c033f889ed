package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

const reencryptionAddr = "kmshealth_kms_reencryption.test"

// reencryptionConfig gates a kmshealth_kms_reencryption "test" on the
// data source, as the module's flow does: the key to re-encrypt under is
// the kekID every node reports for plugin 1.
func reencryptionConfig(tg kmshealth.Target, ns, body string) string {
	return healthConfig(targetArg(tg)) + fmt.Sprintf(`
resource "kmshealth_kms_reencryption" "test" {
  name          = "rotation"
  namespace     = %q
  key_id        = data.kmshealth_kms_plugin_health.test.active_kek_ids["1"]
  health_target = %q
  resources     = ["secrets", "configmaps"]
%s
}
`, ns, tg.String(), body)
}

// TestAccKMSReencryption_rotation is serial: it rotates the test bed's one
// KMS key, which every object of the API server is stored under.
//
// Secrets and ConfigMaps written under key A; the plugin rotated to key B
// and kube-apiserver writing under it; the reports say every node is on
// B; apply re-encrypts, and etcd shows every Secret and ConfigMap of the
// cluster under B. The next plan is empty; import reads the record back.
// It leaves the bed on key B: tests after it must not assume a key.
func TestAccKMSReencryption_rotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Rotate to keys never used before and never back: kube-apiserver
	// learns a key only from a Status poll, so one it never saw would
	// leave it on the previous key.
	keyA, keyB := "reencryption-a", "reencryption-b"
	env.KMS.SetKeyID(keyA)
	if err := env.WaitKeyInUse(ctx, keyA); err != nil {
		t.Fatal(err)
	}
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	t.Cleanup(func() {
		_ = env.Clientset().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	for i := range 20 {
		mustCreateSecret(t, ns, fmt.Sprintf("s-%02d", i), map[string][]byte{"v": []byte("secret")})
		if _, err := env.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%02d", i)}, Data: map[string]string{"v": "config"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env.KMS.SetKeyID(keyB)
	if err := env.WaitKeyInUse(ctx, keyB); err != nil {
		t.Fatal(err)
	}
	tg := newKMSHealthTarget(t)
	for _, node := range []string{"cp-a", "cp-b"} {
		mustReport(t, tg, node, healthyPlugin("1", keyB, reportNow()))
	}
	if n := storedUnderCount(t, ctx, "secrets/"+ns+"/", keyA); n != 20 {
		t.Fatalf("%d of the 20 Secrets stored under key %s before the apply", n, keyA)
	}

	// The last step of the rotation beside it: may key A be destroyed?
	// Not before a run is recorded, not while kube-apiserver has not
	// re-read every object since the run, and only then.
	retire := func(reencryption string) string {
		return fmt.Sprintf(`
data "kmshealth_kms_key_usage" "retire" {
  %s
  retire_key_id = %q
  reencryption  = %s
}
`, targetArg(tg), keyA, reencryption)
	}
	const retireAddr = "data.kmshealth_kms_key_usage.retire"
	config := reencryptionConfig(tg, ns, "") + retire(reencryptionAddr+".id")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg)) + retire(strconv.Quote(ns+"/rotation")),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(retireAddr, "retire_ready", "false"),
					resource.TestMatchResourceAttr(retireAddr, "retire_reason", literalRE("no re-encryption run is recorded")),
				),
			},
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(retireAddr, "retire_ready", "false"),
					resource.TestMatchResourceAttr(retireAddr, "retire_reason", literalRE("before re-encryption run "+ns+"/rotation finished", "restart it")),
					resource.TestCheckResourceAttr(reencryptionAddr, "id", ns+"/rotation"),
					resource.TestCheckResourceAttr(reencryptionAddr, "key_id", keyB),
					resource.TestCheckResourceAttr(reencryptionAddr, "method", "auto"),
					resource.TestCheckResourceAttr(reencryptionAddr, "path", reencrypt.PathRewrite),
					resource.TestCheckResourceAttrSet(reencryptionAddr, "objects.secrets"),
					resource.TestCheckResourceAttrSet(reencryptionAddr, "objects.configmaps"),
					resource.TestCheckResourceAttrSet(reencryptionAddr, "started_at"),
					resource.TestCheckResourceAttrSet(reencryptionAddr, "finished_at"),
					func(*terraform.State) error {
						for _, prefix := range []string{"secrets/", "configmaps/"} {
							stored, err := env.StoredKeyIDs(ctx, prefix)
							if err != nil {
								return err
							}
							for k, id := range stored {
								if id != keyB {
									return fmt.Errorf("%s is stored under key %q after the apply, want %s", k, id, keyB)
								}
							}
						}
						return nil
					},
				),
			},
			// kube-apiserver restarted after the run: its start read every
			// Secret and ConfigMap, none with key A.
			{
				PreConfig: func() {
					rec, err := reencrypt.ReadRecord(ctx, env.Clientset(), ns, "rotation")
					if err != nil || !rec.Complete() {
						t.Fatalf("the run's record: %+v, %v", rec, err)
					}
					restartAfter(t, rec.FinishedAt.Time)
					for _, node := range []string{"cp-a", "cp-b"} {
						mustReport(t, tg, node, healthyPlugin("1", keyB, reportNow()))
					}
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(retireAddr, "retire_ready", "true"),
					resource.TestMatchResourceAttr(retireAddr, "retire_reason", literalRE(fmt.Sprintf("decrypted none with key %q", keyA))),
				),
			},
			{
				ResourceName: reencryptionAddr, ImportState: true, ImportStateId: ns + "/rotation",
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"},
			},
			// The record deleted behind Terraform's back: the next plan
			// runs again.
			outOfBand(config, func() {
				if err := reencrypt.DeleteRecord(context.Background(), env.Clientset(), ns, "rotation"); err != nil {
					t.Fatal(err)
				}
			}),
		},
		CheckDestroy: func(*terraform.State) error {
			_, err := env.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), reencrypt.RecordName("rotation"), metav1.GetOptions{})
			switch {
			case err == nil:
				return fmt.Errorf("record %s/%s still exists after destroy", ns, reencrypt.RecordName("rotation"))
			case !apierrors.IsNotFound(err):
				return fmt.Errorf("read the record after destroy: %w", err)
			}
			return nil
		},
	})
}

// storedUnderCount counts the etcd values under /registry/<prefix> stored
// under keyID.
func storedUnderCount(t *testing.T, ctx context.Context, prefix, keyID string) int {
	t.Helper()
	stored, err := env.StoredKeyIDs(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range stored {
		if id == keyID {
			n++
		}
	}
	return n
}

// TestAccKMSReencryption_gate: an unhealthy node stops the apply at the
// gate, naming the node, before anything is written or recorded.
func TestAccKMSReencryption_gate(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	t.Cleanup(func() {
		_ = env.Clientset().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	tg := newKMSHealthTarget(t)
	at := reportNow()
	mustReport(t, tg, "cp-a", healthyPlugin("1", "k-9", at))
	mustReport(t, tg, "cp-b", unhealthyPlugin("1", "k-9", "KMS unreachable", at))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: healthConfig(targetArg(tg)) + fmt.Sprintf(`
resource "kmshealth_kms_reencryption" "test" {
  name          = "gated"
  namespace     = %q
  key_id        = "k-9"
  health_target = %q
}
`, ns, tg.String()),
			ExpectError: literalRE("KMS health gate not green", "cp-b", "KMS unreachable", "nothing was rewritten"),
		}},
	})
	if _, err := env.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), reencrypt.RecordName("gated"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("record after a refused apply: %v, want none", err)
	}
}

// TestAccKMSReencryption_invalid: bad resources and method fail the plan,
// naming the attribute and the fix, before any cluster access.
func TestAccKMSReencryption_invalid(t *testing.T) {
	t.Parallel()
	base := func(body string) string {
		return providerBlock() + `
resource "kmshealth_kms_reencryption" "test" {
  name   = "bad"
  key_id = "k-1"
` + body + "\n}\n"
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{Config: base(`resources = ["Secrets"]`), PlanOnly: true, ExpectError: literalRE("Invalid resource", "resources[0]", "not a resource name")},
			{Config: base(`resources = ["*.*"]`), PlanOnly: true, ExpectError: literalRE("Invalid resource", "wildcards are not rewritten")},
			{Config: base(`resources = ["widgets.example.com"]`), PlanOnly: true, ExpectError: literalRE("Resource not served", "widgets.example.com")},
			{Config: base(`method = "fast"`), PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)method.*value must be one of`)},
		},
	})
}
