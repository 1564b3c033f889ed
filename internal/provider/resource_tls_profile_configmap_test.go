package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

const tlsAddr = "kmshealth_tls_profile_configmap.test"

// mustCreateDeployment creates a Deployment (no controller runs it here:
// only the object matters) and returns its pod template's annotations.
func mustCreateDeployment(t *testing.T, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"team": "platform"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
			},
		},
	}
	if _, err := env.Clientset().AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
}

func templateAnnotations(ns, name string) (map[string]string, error) {
	d, err := env.Clientset().AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return d.Spec.Template.Annotations, nil
}

// checkTLSProfileLive: the ConfigMap holds exactly profile_json, hash is its
// sha256, and every target's pod template carries the hash next to what
// its owner put there.
func checkTLSProfileLive(ns, name string, targets ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[tlsAddr]
		if rs == nil {
			return fmt.Errorf("%s not in state", tlsAddr)
		}
		cm, err := env.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		doc := cm.Data[tlsprofile.DocumentKey]
		if doc != rs.Primary.Attributes["profile_json"] {
			return fmt.Errorf("ConfigMap %s = %s, state profile_json = %s", tlsprofile.DocumentKey, doc, rs.Primary.Attributes["profile_json"])
		}
		hash := tlsprofile.HashJSON([]byte(doc))
		if hash != rs.Primary.Attributes["hash"] {
			return fmt.Errorf("hash %s, sha256 of the ConfigMap's document %s", rs.Primary.Attributes["hash"], hash)
		}
		if cm.Labels[tlsprofile.ProfileLabel] != "true" {
			return fmt.Errorf("ConfigMap labels %v", cm.Labels)
		}
		for _, d := range targets {
			a, err := templateAnnotations(ns, d)
			if err != nil {
				return err
			}
			if a[tlsprofile.HashAnnotation] != hash || a["team"] != "platform" {
				return fmt.Errorf("Deployment %s/%s pod template annotations %v, want %s = %s beside team = platform", ns, d, a, tlsprofile.HashAnnotation, hash)
			}
		}
		return nil
	}
}

// checkTLSProfileGone: the ConfigMap is deleted and the annotation released,
// the workload's other annotations untouched.
func checkTLSProfileGone(ns, name string, targets ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := env.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Errorf("ConfigMap %s/%s still exists after destroy", ns, name)
		case !apierrors.IsNotFound(err):
			return err
		}
		for _, d := range targets {
			a, err := templateAnnotations(ns, d)
			if err != nil {
				return err
			}
			if _, ok := a[tlsprofile.HashAnnotation]; ok || a["team"] != "platform" {
				return fmt.Errorf("Deployment %s/%s pod template annotations after destroy: %v", ns, d, a)
			}
		}
		return nil
	}
}

func tlsConfig(body string) string {
	return providerBlock() + "\nresource \"kmshealth_tls_profile_configmap\" \"test\" {\n" + body + "\n}\n"
}

// TestAccTLSProfile_static: a predefined profile into a ConfigMap and onto
// its rollout target; a profile change changes the hash and the target's
// annotation; the ConfigMap edited and the annotation removed out of band
// show as a change and are restored; import; destroy leaves nothing.
func TestAccTLSProfile_static(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	mustCreateDeployment(t, ns, "web")
	mustCreateDeployment(t, ns, "api")
	body := func(typ, targets string) string {
		return fmt.Sprintf("namespace = %q\nname = \"tls-profile\"\nprofile {\n  type = %q\n}\nrollout_targets = [%s]", ns, typ, targets)
	}
	web := fmt.Sprintf(`{ kind = "Deployment", namespace = %q, name = "web" }`, ns)
	api := fmt.Sprintf(`{ kind = "Deployment", namespace = %q, name = "api" }`, ns)
	var modernHash string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkTLSProfileGone(ns, "tls-profile", "web", "api"),
		Steps: []resource.TestStep{
			{
				Config: tlsConfig(body("Modern", web)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(tlsAddr, "min_tls_version", "VersionTLS13"),
					resource.TestCheckResourceAttr(tlsAddr, "cipher_suites.#", "0"),
					checkList(tlsAddr, "groups", "X25519MLKEM768", "X25519", "secp256r1", "secp384r1"),
					checkList(tlsAddr, "component_args", "--tls-min-version=VersionTLS13", "--tls-curve-preferences=4588,29,23,24"),
					checkList(tlsAddr, "fips_dropped"),
					resource.TestCheckNoResourceAttr(tlsAddr, "fips"),
					resource.TestCheckResourceAttr(tlsAddr, "source", "static"),
					resource.TestCheckResourceAttr(tlsAddr, "is_openshift", "false"),
					resource.TestCheckResourceAttr(tlsAddr, "id", ns+"/tls-profile"),
					checkTLSProfileLive(ns, "tls-profile", "web"),
					func(s *terraform.State) error {
						modernHash = s.RootModule().Resources[tlsAddr].Primary.Attributes["hash"]
						return nil
					},
				),
			},
			{
				// Another profile and a second target: new hash on both.
				Config: tlsConfig(body("Intermediate", web+", "+api)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(tlsAddr, "min_tls_version", "VersionTLS12"),
					resource.TestCheckResourceAttr(tlsAddr, "cipher_suites.0", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
					checkList(tlsAddr, "component_args", "--tls-min-version=VersionTLS12",
						"--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,"+
							"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
						"--tls-curve-preferences=4588,29,23,24"),
					checkTLSProfileLive(ns, "tls-profile", "web", "api"),
					func(s *terraform.State) error {
						if h := s.RootModule().Resources[tlsAddr].Primary.Attributes["hash"]; h == modernHash {
							return fmt.Errorf("hash %s did not change with the profile", h)
						}
						return nil
					},
				),
			},
			{
				// fips: only the NIST curves and the AES-GCM suites, and
				// what was dropped is said.
				Config: tlsConfig(body("Intermediate", web+", "+api) + "\nfips = true"),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkList(tlsAddr, "groups", "secp256r1", "secp384r1"),
					checkList(tlsAddr, "cipher_suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
						"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
					checkList(tlsAddr, "fips_dropped", "TLS_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", "X25519MLKEM768", "X25519"),
					resource.TestCheckResourceAttr(tlsAddr, "component_args.2", "--tls-curve-preferences=23,24"),
					checkTLSProfileLive(ns, "tls-profile", "web", "api"),
				),
			},
			{
				// And back: the ConfigMap and targets follow.
				Config: tlsConfig(body("Intermediate", web+", "+api)),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkList(tlsAddr, "groups", "X25519MLKEM768", "X25519", "secp256r1", "secp384r1"),
					checkList(tlsAddr, "fips_dropped"),
					checkTLSProfileLive(ns, "tls-profile", "web", "api"),
				),
			},
			{
				// Out of band: profile.json edited, one annotation removed.
				PreConfig: func() {
					ctx := context.Background()
					patch := []byte(`{"data":{"profile.json":"{\"type\":\"Old\"}"}}`)
					if _, err := env.Clientset().CoreV1().ConfigMaps(ns).Patch(ctx, "tls-profile", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
					remove := []byte(`{"spec":{"template":{"metadata":{"annotations":{"` + tlsprofile.HashAnnotation + `":null}}}}}`)
					if _, err := env.Clientset().AppsV1().Deployments(ns).Patch(ctx, "api", types.MergePatchType, remove, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
						t.Fatal(err)
					}
				},
				Config: tlsConfig(body("Intermediate", web+", "+api)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tlsAddr, plancheck.ResourceActionUpdate),
				}},
				Check: checkTLSProfileLive(ns, "tls-profile", "web", "api"),
			},
			{
				// Fewer targets: the one left out is released.
				Config: tlsConfig(body("Intermediate", web)),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkTLSProfileLive(ns, "tls-profile", "web"),
					checkTLSProfileGone(ns, "elsewhere", "api"),
				),
			},
			{ResourceName: tlsAddr, ImportState: true, ImportStateId: ns + "/tls-profile", ImportStateVerify: true},
		},
	})
}

// TestAccTLSProfile_custom: a Custom profile with OpenSSL and IANA names and
// groups; a name Go cannot use is dropped with a warning, the groups come
// out in Go's order, and the document keeps the names as given beside what
// Go uses.
func TestAccTLSProfile_custom(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkTLSProfileGone(ns, "custom"),
		Steps: []resource.TestStep{{
			Config: tlsConfig(fmt.Sprintf(`namespace = %q
name = "custom"
profile {
  type = "Custom"
  custom {
    min_tls_version = "VersionTLS12"
    ciphers         = ["ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES128-GCM-SHA256"]
    groups          = ["secp256r1", "X25519"]
  }
}`, ns)),
			Check: resource.ComposeAggregateTestCheckFunc(
				checkList(tlsAddr, "cipher_suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
				checkList(tlsAddr, "groups", "X25519", "secp256r1"),
				checkList(tlsAddr, "component_args", "--tls-min-version=VersionTLS12",
					"--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "--tls-curve-preferences=29,23"),
				resource.TestCheckResourceAttrWith(tlsAddr, "profile_json", func(v string) error {
					d, err := tlsprofile.ParseDocument([]byte(v))
					if err != nil || strings.Join(d.Groups, ",") != "secp256r1,X25519" {
						return fmt.Errorf("profile_json does not keep the groups as given: %s (%w)", v, err)
					}
					return nil
				}),
				checkTLSProfileLive(ns, "custom"),
			),
		}, {
			ResourceName: tlsAddr, ImportState: true, ImportStateId: ns + "/custom", ImportStateVerify: true,
		}},
	})
}

// TestAccTLSProfile_badInput: what can be judged at plan time is, naming the
// attribute and the valid values; what needs the cluster fails before
// anything is written.
func TestAccTLSProfile_badInput(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	if _, err := env.Clientset().CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step := func(body, pattern string) resource.TestStep {
		return resource.TestStep{Config: tlsConfig(fmt.Sprintf("namespace = %q\n", ns) + body), ExpectError: wrappedRE(pattern)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			step("name = \"p\"\nprofile {\n  type = \"Paranoid\"\n}", `(?s)profile.type.*value must be one of.*"Old".*"Intermediate".*"Modern".*"Custom"`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS12\"\n    ciphers = [\"NOT-A-CIPHER\"]\n  }\n}", `(?s)Invalid TLS profile.*ciphers = \["NOT-A-CIPHER"\].*custom.ciphers\[0\]: unknown cipher "NOT-A-CIPHER"; use one of:.*ECDHE-RSA-AES128-GCM-SHA256`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS12\"\n    groups = [\"P-999\"]\n  }\n}", `(?s)Invalid TLS profile.*groups = \["P-999"\].*custom.groups\[0\]: unknown group "P-999"; use one of:.*X25519`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS13\"\n    groups = [\"P-256\"]\n  }\n}", `(?s)Invalid TLS profile.*unknown group "P-256"; OpenShift spells it secp256r1`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS13\"\n    groups = [\"X25519\", \"secp256r1\", \"X25519\"]\n  }\n}", `(?s)Invalid TLS profile.*custom.groups\[2\]: duplicate group "X25519"; groups\[0\] already names it`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS13\"\n    groups = []\n  }\n}", `(?s)Invalid TLS profile.*custom.groups: is empty; name at least one group, or leave groups out`),
			step("name = \"p\"\nfips = true\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS13\"\n    groups = [\"X25519MLKEM768\"]\n  }\n}", `(?s)Invalid TLS profile.*custom.groups: names no FIPS-approved group.*or set fips to false`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS12\"\n    curves = [\"X25519\"]\n  }\n}", `(?s)Unsupported argument.*"curves" is not expected here`),
			step("name = \"p\"\nprofile {\n  type = \"Modern\"\n  custom {\n    min_tls_version = \"VersionTLS12\"\n  }\n}", `(?s)only used with type Custom, and type is Modern`),
			step("name = \"p\"\nprofile {\n  type = \"Custom\"\n  custom {\n    min_tls_version = \"VersionTLS12\"\n    ciphers = [\"TLS_AES_128_GCM_SHA256\"]\n  }\n}", `(?s)Invalid TLS profile.*no TLS 1\.0–1\.2 cipher Go can use is left.*or set minTLSVersion to VersionTLS13`),
			step("name = \"p\"\nsource = \"cluster\"\nprofile {\n  type = \"Modern\"\n}", `(?s)Conflicting TLS profile.*remove the profile block`),
			step("name = \"p\"\nsource = \"cluster\"", `(?s)this cluster does not serve that API`),
			step("name = \"theirs\"", `(?s)ConfigMap exists.*never takes over a ConfigMap it did not create`),
			step(fmt.Sprintf("name = \"p\"\nrollout_targets = [{ kind = \"Deployment\", namespace = %q, name = \"missing\" }]", ns), `(?s)Rollout target unavailable.*Deployment/`+ns+`/missing not found: create it first`),
			step(fmt.Sprintf("name = \"p\"\nrollout_targets = [{ kind = \"Pod\", namespace = %q, name = \"x\" }]", ns), `(?s)rollout_targets\[0\].kind.*value must be one of`),
		},
	})
	// Nothing was written by the refused applies.
	if _, err := env.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused apply left ConfigMap %s/p: %v", ns, err)
	}
}

// installAPIServerAPI installs OpenShift's APIServer API with the
// "cluster" object for the test.
func installAPIServerAPI(t *testing.T, spec map[string]any) {
	t.Helper()
	remove, err := testenv.InstallAPIServerAPI(context.Background(), dynamicClient(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		remove()
		// The parallel tests read is_openshift from discovery.
		if err := testenv.WaitNoAPIServerAPI(context.Background(), env.Clientset().Discovery()); err != nil {
			t.Error(err)
		}
	})
}

func setClusterProfile(t *testing.T, profile map[string]any) {
	t.Helper()
	if err := testenv.SetClusterTLSProfile(context.Background(), dynamicClient(), profile); err != nil {
		t.Fatal(err)
	}
}

// TestAccTLSProfile_cluster: source = "cluster" reads OpenShift's APIServer
// object; a profile changed there shows as a change at the next plan and
// rolls the target; is_openshift is detected.
func TestAccTLSProfile_cluster(t *testing.T) {
	// Serial: it installs OpenShift's cluster-scoped APIServer API, which
	// turns is_openshift true for every other profile while it exists.
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	mustCreateDeployment(t, ns, "web")
	installAPIServerAPI(t, map[string]any{"tlsSecurityProfile": map[string]any{
		"type":   "Custom",
		"custom": map[string]any{"minTLSVersion": "VersionTLS12", "ciphers": []any{"ECDHE-ECDSA-AES256-GCM-SHA384"}},
	}})
	clusterConfig := func(extra string) string {
		return tlsConfig(fmt.Sprintf(`namespace = %q
name = "cluster-profile"
source = "cluster"
rollout_targets = [{ kind = "Deployment", namespace = %q, name = "web" }]`, ns, ns) + extra)
	}
	config := clusterConfig("")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkTLSProfileGone(ns, "cluster-profile", "web"),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(tlsAddr, "is_openshift", "true"),
					resource.TestCheckResourceAttr(tlsAddr, "min_tls_version", "VersionTLS12"),
					resource.TestCheckResourceAttr(tlsAddr, "cipher_suites.#", "1"),
					resource.TestCheckResourceAttr(tlsAddr, "cipher_suites.0", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
					resource.TestCheckResourceAttrWith(tlsAddr, "profile_json", func(v string) error {
						d, err := tlsprofile.ParseDocument([]byte(v))
						if err != nil || d.Source != tlsprofile.SourceCluster || d.Type != tlsprofile.ProfileCustom {
							return fmt.Errorf("profile_json %s (%w)", v, err)
						}
						return nil
					}),
					checkTLSProfileLive(ns, "cluster-profile", "web"),
				),
			},
			{
				// The APIServer's groups, and its older spelling, curves.
				PreConfig: func() {
					setClusterProfile(t, map[string]any{"type": "Custom", "custom": map[string]any{"minTLSVersion": "VersionTLS13", "ciphers": []any{}, "curves": []any{"secp384r1", "X25519"}}})
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					checkList(tlsAddr, "groups", "X25519", "secp384r1"),
					checkList(tlsAddr, "component_args", "--tls-min-version=VersionTLS13", "--tls-curve-preferences=29,24"),
					checkTLSProfileLive(ns, "cluster-profile", "web"),
				),
			},
			{
				PreConfig: func() { setClusterProfile(t, map[string]any{"type": "Modern", "modern": map[string]any{}}) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tlsAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(tlsAddr, "min_tls_version", "VersionTLS13"),
					checkList(tlsAddr, "groups", "X25519MLKEM768", "X25519", "secp256r1", "secp384r1"),
					checkTLSProfileLive(ns, "cluster-profile", "web"),
				),
			},
			{
				// The adherence alone changes: the hash follows it, so the
				// consumers roll.
				PreConfig: func() {
					patch := []byte(`{"spec":{"tlsAdherence":"StrictAllComponents"}}`)
					if _, err := dynamicClient().Resource(tlsprofile.APIServerGVR()).Patch(context.Background(), tlsprofile.APIServerName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tlsAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrWith(tlsAddr, "profile_json", func(v string) error {
						if !strings.Contains(v, `"tlsAdherence": "StrictAllComponents"`) {
							return fmt.Errorf("profile_json lacks the adherence: %s", v)
						}
						return nil
					}),
					checkTLSProfileLive(ns, "cluster-profile", "web"),
				),
			},
			{
				// fips applies to a cluster profile too.
				Config: clusterConfig("\nfips = true"),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkList(tlsAddr, "groups", "secp256r1", "secp384r1"),
					checkList(tlsAddr, "fips_dropped", "TLS_CHACHA20_POLY1305_SHA256", "X25519MLKEM768", "X25519"),
					checkTLSProfileLive(ns, "cluster-profile", "web"),
				),
			},
			{ResourceName: tlsAddr, ImportState: true, ImportStateId: ns + "/cluster-profile", ImportStateVerify: true},
		},
	})
}

// TestAccTLSProfile_unknownTargets: rollout targets known only at apply
// (here from terraform_data's output) plan and apply; an empty list stays
// empty, with no diff after the apply.
func TestAccTLSProfile_unknownTargets(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	mustCreateDeployment(t, ns, "web")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkTLSProfileGone(ns, "late", "web"),
		Steps: []resource.TestStep{
			{
				Config: providerBlock() + fmt.Sprintf(`
resource "terraform_data" "targets" {
  input = [{ kind = "Deployment", namespace = %q, name = "web" }]
}

resource "kmshealth_tls_profile_configmap" "test" {
  namespace       = %q
  name            = "late"
  rollout_targets = terraform_data.targets.output
}
`, ns, ns),
				Check: checkTLSProfileLive(ns, "late", "web"),
			},
			{
				Config: tlsConfig(fmt.Sprintf("namespace = %q\nname = \"late\"\nrollout_targets = []", ns)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(tlsAddr, "rollout_targets.#", "0"),
					checkTLSProfileGone(ns, "elsewhere", "web"),
				),
			},
		},
	})
}

// checkList checks a list attribute element by element (none: empty).
func checkList(addr, name string, want ...string) resource.TestCheckFunc {
	checks := []resource.TestCheckFunc{resource.TestCheckResourceAttr(addr, name+".#", strconv.Itoa(len(want)))}
	for i, w := range want {
		checks = append(checks, resource.TestCheckResourceAttr(addr, fmt.Sprintf("%s.%d", name, i), w))
	}
	return resource.ComposeAggregateTestCheckFunc(checks...)
}
