package provider

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

const addr = "kmshealth_apiservice_cabundle.test"

func inlineConfig(apiservice, pemText string, extra string) string {
	return providerBlock() + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "test" {
  apiservice_name = %q
  ca_bundle       = <<-EOT
%sEOT
%s
}
`, apiservice, pemText, extra)
}

func sourceConfig(apiservice, kind, namespace, name, key string) string {
	return providerBlock() + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "test" {
  apiservice_name = %q
  source {
    kind      = %q
    namespace = %q
    name      = %q
    key       = %q
  }
}
`, apiservice, kind, namespace, name, key)
}

// checkLive asserts the live APIService carries exactly want and the
// annotation naming source.
func checkLive(t *testing.T, apiservice, want, source string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		svc := getAPIService(t, apiservice)
		if got := string(svc.Spec.CABundle); got != want {
			return fmt.Errorf("live caBundle of %s:\n%s\nwant:\n%s", apiservice, got, want)
		}
		if got := svc.Annotations[cabundle.SourceAnnotation]; got != source {
			return fmt.Errorf("live %s = %q, want %q", cabundle.SourceAnnotation, got, source)
		}
		return nil
	}
}

// checkReleased is a CheckDestroy: no caBundle, no annotation, no inline
// ConfigMap left behind, and the APIService itself untouched.
func checkReleased(t *testing.T, apiservice string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		svc := getAPIService(t, apiservice)
		if len(svc.Spec.CABundle) != 0 {
			return fmt.Errorf("caBundle still set after destroy: %q", svc.Spec.CABundle)
		}
		if v, ok := svc.Annotations[cabundle.SourceAnnotation]; ok {
			return fmt.Errorf("annotation still set after destroy: %q", v)
		}
		if svc.Spec.Service == nil || svc.Spec.GroupPriorityMinimum != 1000 {
			return fmt.Errorf("destroy touched fields it does not own: %+v", svc.Spec)
		}
		_, err := env.Clientset().CoreV1().ConfigMaps("kube-system").Get(context.Background(), cabundle.InlineConfigMapName(apiservice), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("inline ConfigMap still there after destroy (err=%w)", err)
		}
		return nil
	}
}

// overwrite writes a caBundle the way an installer's Update would.
func overwrite(t *testing.T, apiservice, pemText string) {
	t.Helper()
	c := aggregatorClient(t).ApiregistrationV1().APIServices()
	svc := getAPIService(t, apiservice)
	svc.Spec.CABundle = []byte(pemText)
	if _, err := c.Update(context.Background(), svc, metav1.UpdateOptions{FieldManager: "installer"}); err != nil {
		t.Fatalf("out-of-band overwrite: %v", err)
	}
}

func TestAccAPIServiceCABundle_inline(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	inlineSource := "ConfigMap/kube-system/" + cabundle.InlineConfigMapName(name) + "/ca.crt"

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReleased(t, name),
		Steps: []resource.TestStep{
			{
				Config: inlineConfig(name, ca1, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", name),
					resource.TestCheckResourceAttr(addr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca1))),
					resource.TestCheckResourceAttr(addr, "certificate_count", "1"),
					resource.TestMatchResourceAttr(addr, "not_after", regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)),
					resource.TestCheckResourceAttr(addr, "ca_bundle_source", inlineSource),
					resource.TestCheckResourceAttr(addr, "field_manager", "kmshealth"),
					checkLive(t, name, ca1, inlineSource),
					func(*terraform.State) error {
						cm, err := env.Clientset().CoreV1().ConfigMaps("kube-system").Get(context.Background(), cabundle.InlineConfigMapName(name), metav1.GetOptions{})
						if err != nil {
							return err
						}
						if cm.Data["ca.crt"] != ca1 || cm.Labels[cabundle.ManagedByLabel] != "kmshealth" {
							return fmt.Errorf("inline ConfigMap: labels %v, data %q", cm.Labels, cm.Data)
						}
						return nil
					},
				),
			},
			// No step re-plans a config right after applying it: after every
			// apply the framework plans, refreshes and plans again, and fails
			// on a non-empty plan (provider_test.go, outOfBand).
			// An installer overwrites the bundle: the next plan must show it.
			{
				PreConfig:          func() { overwrite(t, name, ca2) },
				Config:             inlineConfig(name, ca1, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			// ...and apply restores it, although "installer" now owns the field.
			{Config: inlineConfig(name, ca1, ""), Check: checkLive(t, name, ca1, inlineSource)},
			// Someone edits our ConfigMap: drift as well.
			{
				PreConfig: func() {
					cms := env.Clientset().CoreV1().ConfigMaps("kube-system")
					cm, err := cms.Get(context.Background(), cabundle.InlineConfigMapName(name), metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cm.Data["ca.crt"] = ca2
					if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             inlineConfig(name, ca1, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			// Rotate the inline bundle to two CAs.
			{
				Config: inlineConfig(name, ca1+ca2, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "certificate_count", "2"),
					checkLive(t, name, ca1+ca2, inlineSource),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: name, ImportStateVerify: true},
		},
	})
}

func TestAccAPIServiceCABundle_secretSource(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	secrets := env.Clientset().CoreV1().Secrets("default")
	secretName := uniqueName(t) + "-ca"
	_, err := secrets.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName},
		Data:       map[string][]byte{"ca.crt": []byte(ca1), "tls.key": []byte("not a bundle")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), secretName, metav1.DeleteOptions{}) })
	src := "Secret/default/" + secretName + "/ca.crt"
	config := sourceConfig(name, "Secret", "default", secretName, "ca.crt")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkReleased(t, name),
			func(*terraform.State) error { // the user's Secret is never touched
				s, err := secrets.Get(context.Background(), secretName, metav1.GetOptions{})
				if err != nil || string(s.Data["ca.crt"]) != ca2 {
					return fmt.Errorf("source Secret changed or gone after destroy: %w", err)
				}
				return nil
			},
		),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca1))),
					resource.TestCheckResourceAttr(addr, "ca_bundle_source", src),
					resource.TestCheckNoResourceAttr(addr, "ca_bundle"),
					checkLive(t, name, ca1, src),
				),
			},
			{
				PreConfig:          func() { overwrite(t, name, ca2) },
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: config, Check: checkLive(t, name, ca1, src)},
			// CA rotation in the source Secret shows in the plan and applies.
			{
				PreConfig: func() {
					s, err := secrets.Get(context.Background(), secretName, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					s.Data["ca.crt"] = []byte(ca2)
					if _, err := secrets.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca2))),
					checkLive(t, name, ca2, src),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: name, ImportStateVerify: true},
		},
	})
}

func TestAccAPIServiceCABundle_switchInlineToSource(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cmName := uniqueName(t) + "-ca"
	if _, err := cms.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: cmName},
		Data:       map[string]string{"bundle.pem": ca1},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), cmName, metav1.DeleteOptions{}) })

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReleased(t, name),
		Steps: []resource.TestStep{
			{Config: inlineConfig(name, ca1, `field_manager = "platform-team"`)},
			{
				Config: sourceConfig(name, "ConfigMap", "default", cmName, "bundle.pem"),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkLive(t, name, ca1, "ConfigMap/default/"+cmName+"/bundle.pem"),
					func(*terraform.State) error {
						_, err := env.Clientset().CoreV1().ConfigMaps("kube-system").Get(context.Background(), cabundle.InlineConfigMapName(name), metav1.GetOptions{})
						if !apierrors.IsNotFound(err) {
							return fmt.Errorf("inline ConfigMap kept after switching to source (err=%w)", err)
						}
						for _, mf := range getAPIService(t, name).ManagedFields {
							if mf.Manager == "platform-team" {
								return fmt.Errorf("old field manager %q still owns fields after the switch", mf.Manager)
							}
						}
						return nil
					},
				),
			},
		},
	})
}

func TestAccAPIServiceCABundle_conflict(t *testing.T) {
	t.Parallel()
	theirs := newCertPEM(t, "installer-ca", certOpts{})
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{caBundle: []byte(theirs)})
	ours := newCertPEM(t, "our-ca", certOpts{})

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: func(*terraform.State) error {
			// "installer" still co-owns nothing; we forced the field and
			// released it on destroy, so it is gone.
			return checkReleased(t, name)(nil)
		},
		Steps: []resource.TestStep{
			{
				Config:      inlineConfig(name, ours, ""),
				ExpectError: regexp.MustCompile(`(?s)installer.*force_conflicts = true`),
			},
			{
				// The failed create wrote nothing: no ConfigMap, no bundle.
				PreConfig: func() {
					if got := string(getAPIService(t, name).Spec.CABundle); got != theirs {
						t.Fatalf("failed create changed the caBundle to %q", got)
					}
					_, err := env.Clientset().CoreV1().ConfigMaps("kube-system").Get(context.Background(), cabundle.InlineConfigMapName(name), metav1.GetOptions{})
					if !apierrors.IsNotFound(err) {
						t.Fatalf("failed create left the inline ConfigMap behind (err=%v)", err)
					}
				},
				Config: inlineConfig(name, ours, "force_conflicts = true"),
				Check:  checkLive(t, name, ours, "ConfigMap/kube-system/"+cabundle.InlineConfigMapName(name)+"/ca.crt"),
			},
		},
	})
}

func TestAccAPIServiceCABundle_deletedOutOfBand(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca := newCertPEM(t, "ca", certOpts{})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{Config: inlineConfig(name, ca, "")},
			{
				PreConfig: func() {
					err := aggregatorClient(t).ApiregistrationV1().APIServices().Delete(context.Background(), name, metav1.DeleteOptions{})
					if err != nil {
						t.Fatal(err)
					}
				},
				// Refresh drops it from state; the plan wants to create it again.
				Config:             inlineConfig(name, ca, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: inlineConfig(name, ca, ""), ExpectError: literalRE("Cannot read APIService: not found", `APIService "`+name+`" does not exist on the API server`, `APIService "`+name+`" not found`)},
		},
	})
}

func TestAccAPIServiceCABundle_badInput(t *testing.T) {
	t.Parallel()
	good := newCertPEM(t, "ca", certOpts{})
	expired := newCertPEM(t, "old-ca", certOpts{notAfter: time.Now().Add(-time.Hour)})
	aggregated := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	local := createAPIService(t, uniqueName(t)+"-local.example.com", apiServiceOpts{local: true})
	insecure := createAPIService(t, uniqueName(t)+"-insecure.example.com", apiServiceOpts{insecure: true})
	cmSource := func(name, key string) string {
		return sourceConfig(aggregated, "ConfigMap", "default", name, key)
	}
	if _, err := env.Clientset().CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-input-ca"},
		Data:       map[string]string{"ca.crt": good, "junk.pem": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Clientset().CoreV1().ConfigMaps("default").Delete(context.Background(), "bad-input-ca", metav1.DeleteOptions{})
	})
	// The CLIs wrap diagnostics: a space in a pattern matches any whitespace.
	wrapped := func(pattern string) *regexp.Regexp {
		return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
	}
	planOnly := func(config, wantErr string) resource.TestStep {
		return resource.TestStep{Config: config, PlanOnly: true, ExpectError: wrapped(wantErr)}
	}
	apply := func(config, wantErr string) resource.TestStep {
		return resource.TestStep{Config: config, ExpectError: wrapped(wantErr)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: func(*terraform.State) error {
			for _, n := range []string{aggregated, local, insecure} {
				if svc := getAPIService(t, n); len(svc.Spec.CABundle) != 0 || svc.Annotations[cabundle.SourceAnnotation] != "" {
					return fmt.Errorf("a rejected input wrote to APIService %s", n)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			// Plan time.
			planOnly(inlineConfig(aggregated, "not pem at all\n", ""), `(?s)Unparsable PEM.*ca_bundle|ca_bundle.*Unparsable PEM`),
			planOnly(inlineConfig(aggregated, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", ""), `Not a certificate`),
			planOnly(inlineConfig(aggregated, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", ""), `Unparsable certificate`),
			planOnly(inlineConfig(aggregated, expired, ""), `Expired certificate`),
			planOnly(inlineConfig(aggregated, "\n", ""), `Empty CA bundle`),
			planOnly(providerBlock()+fmt.Sprintf("resource \"kmshealth_apiservice_cabundle\" \"test\" {\n apiservice_name = %q\n}\n", aggregated), `(?s)ca_bundle.*source|source.*ca_bundle`),
			planOnly(sourceConfig(aggregated, "Pod", "default", "x", "ca.crt"), `(?s)value must be one of`),
			planOnly(sourceConfig(aggregated, "Secret", "Not_A_Namespace", "x", "ca.crt"), `is not a namespace name`),
			planOnly(cmSource("bad-input-ca", "junk.pem"), `Unparsable certificate`),
			planOnly(inlineConfig(aggregated, good, `bundle_namespace = "UPPER"`), `is not a namespace name`),
			// Apply time.
			apply(inlineConfig("v1.missing.example.com", good, ""), `APIService "v1.missing.example.com" not found`),
			apply(inlineConfig(local, good, ""), `local APIServices may not have a caBundle`),
			apply(inlineConfig(insecure, good, ""), `insecureSkipTLSVerify: true`),
			apply(cmSource("no-such-configmap", "ca.crt"), `ConfigMap default/no-such-configmap not found`),
			apply(cmSource("bad-input-ca", "tls.crt"), `has no key "tls.crt" \(it has: ca.crt, junk.pem\)`),
		},
	})
}

// TestAccAPIServiceCABundle_unreachable: a kubeconfig whose server refuses
// connections makes apply say that the server is unreachable, which
// address and which setting chose it, not "APIService not found".
// refusedKubeconfig writes a kubeconfig whose server refuses connections
// and returns its path, the provider block that uses it, and the address.
func refusedKubeconfig(t *testing.T) (kubeconfig, providerBlock, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	_ = l.Close() // nothing listens there now
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["refused"] = &clientcmdapi.Cluster{Server: "https://" + addr, CertificateAuthorityData: env.CAPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: env.Token}
	cfg.Contexts["refused"] = &clientcmdapi.Context{Cluster: "refused", AuthInfo: "admin"}
	cfg.CurrentContext = "refused"
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, fmt.Sprintf("provider \"kmshealth\" {\n  config_path = %q\n}\n", kubeconfig), addr
}

func TestAccAPIServiceCABundle_unreachable(t *testing.T) {
	t.Parallel()
	kubeconfig, provider, addr := refusedKubeconfig(t)
	config := provider + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "test" {
  apiservice_name = "v1.refused.example.com"
  ca_bundle       = %q
}
`, newCertPEM(t, "ca", certOpts{}))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: config,
			ExpectError: literalRE("Cannot read APIService: API server unreachable",
				`Could not get APIService "v1.refused.example.com": no connection to the API server https://`+addr,
				`chosen by the server of cluster "refused" of context "refused" (the current context) in kubeconfig "`+kubeconfig+`" (config_path attribute)`,
				"connect: connection refused"),
		}},
	})
}

// TestAccAPIServiceCABundle_unknownProviderConfig plans with a provider
// configuration that is known only after apply (as when the cluster is
// created in the same run): the plan must not fail, and the apply must
// work once the value is known.
func TestAccAPIServiceCABundle_unknownProviderConfig(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca := newCertPEM(t, "ca", certOpts{})
	config := fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = %q
}

provider "kmshealth" {
  # terraform_data.cluster.id is unknown until apply.
  config_path = terraform_data.cluster.id == "" ? "" : terraform_data.cluster.output
}

resource "kmshealth_apiservice_cabundle" "test" {
  apiservice_name = %q
  ca_bundle       = %q
}
`, env.Kubeconfig, name, ca)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReleased(t, name),
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(addr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca))),
				checkLive(t, name, ca, "ConfigMap/kube-system/"+cabundle.InlineConfigMapName(name)+"/ca.crt"),
			),
		}},
	})
}

// TestAccAPIServiceCABundle_noisyBundle: a bundle with a comment, blank
// lines and CRLF line endings, inline and from a Secret, is written as its
// certificates alone (what the reconciler writes too), plans empty after
// apply, and exposes each certificate as openssl shows it.
func TestAccAPIServiceCABundle_noisyBundle(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	clean := ca1 + ca2
	noisy := "# Issuer: CN=ca-one\n\n" + ca1 + "\n" + strings.ReplaceAll(ca2, "\n", "\r\n")
	der := func(p string) []byte { b, _ := pem.Decode([]byte(p)); return b.Bytes }
	secrets := env.Clientset().CoreV1().Secrets("default")
	secretName := uniqueName(t) + "-ca"
	if _, err := secrets.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName},
		Data: map[string][]byte{"ca.crt": []byte(noisy)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), secretName, metav1.DeleteOptions{}) })
	certificates := resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(addr, "fingerprint_sha256", cabundle.Fingerprint([]byte(clean))),
		resource.TestCheckResourceAttr(addr, "certificates.#", "2"),
		resource.TestCheckResourceAttr(addr, "certificates.0.subject", "CN=ca-one"),
		resource.TestCheckResourceAttr(addr, "certificates.1.issuer", "CN=ca-two"),
		resource.TestCheckResourceAttr(addr, "certificates.0.sha256_fingerprint", cabundle.OpenSSLFingerprint(der(ca1))),
		resource.TestCheckResourceAttr(addr, "certificates.1.sha256_fingerprint", cabundle.OpenSSLFingerprint(der(ca2))),
		resource.TestMatchResourceAttr(addr, "certificates.1.not_after", regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)),
	)
	inline := inlineConfig(name, noisy, "")
	fromSecret := sourceConfig(name, "Secret", "default", secretName, "ca.crt")
	inlineSource := "ConfigMap/kube-system/" + cabundle.InlineConfigMapName(name) + "/ca.crt"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReleased(t, name),
		Steps: []resource.TestStep{
			{Config: inline, Check: resource.ComposeAggregateTestCheckFunc(certificates, checkLive(t, name, clean, inlineSource))},
			{Config: fromSecret, Check: resource.ComposeAggregateTestCheckFunc(certificates, checkLive(t, name, clean, "Secret/default/"+secretName+"/ca.crt"))},
		},
	})
}
