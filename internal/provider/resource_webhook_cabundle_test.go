package provider

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

const webhookAddr = "kmshealth_webhook_cabundle.test"

// testWebhooks are the webhooks of every test configuration. The third's
// caBundle belongs to another server-side applier ("other").
var testWebhooks = []string{"a.webhook.test", "b.webhook.test", "c.webhook.test"}

func webhookInlineConfig(kind, name, pemText, extra string) string {
	return providerBlock() + fmt.Sprintf(`
resource "kmshealth_webhook_cabundle" "test" {
  kind      = %q
  name      = %q
  ca_bundle = <<-EOT
%sEOT
%s
}
`, kind, name, pemText, extra)
}

func webhookSourceConfig(kind, name, secret, extra string) string {
	return providerBlock() + fmt.Sprintf(`
resource "kmshealth_webhook_cabundle" "test" {
  kind = %q
  name = %q
  source {
    kind      = "Secret"
    namespace = "default"
    name      = %q
    key       = "ca.crt"
  }
%s
}
`, kind, name, secret, extra)
}

func caBundleClients(t *testing.T) cabundle.Clients {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cabundle.Clients{Core: env.Clientset(), Aggregator: aggregatorClient(t), Extensions: ext}
}

func injectableOf(t *testing.T, kind string) cabundle.Injectable {
	t.Helper()
	inj, err := cabundle.For(kind, caBundleClients(t))
	if err != nil {
		t.Fatal(err)
	}
	return inj
}

// createWebhookConfig creates a configuration of kind with testWebhooks
// as the installer, gives the third webhook's caBundle to "other" by
// server-side apply, and deletes the configuration when the test ends.
func createWebhookConfig(t *testing.T, kind, otherBundle string) string {
	t.Helper()
	name := uniqueName(t)
	port, path := int32(443), "/admit"
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	cc := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Path: &path, Port: &port}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"webhook.test"}, APIVersions: []string{"v1"}, Resources: []string{"things"}},
	}}
	c := env.Clientset().AdmissionregistrationV1()
	ctx := context.Background()
	other := admissionregistrationv1ac.WebhookClientConfig().WithCABundle([]byte(otherBundle)...)
	apply := metav1.ApplyOptions{FieldManager: "other", Force: true}
	var err error
	switch kind {
	case cabundle.KindValidatingWebhookConfiguration:
		o := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, n := range testWebhooks {
			o.Webhooks = append(o.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: n, ClientConfig: cc, Rules: rules, FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
		}
		if _, err = c.ValidatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{FieldManager: "installer"}); err == nil {
			_, err = c.ValidatingWebhookConfigurations().Apply(ctx, admissionregistrationv1ac.ValidatingWebhookConfiguration(name).
				WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(testWebhooks[2]).WithClientConfig(other)), apply)
		}
		t.Cleanup(func() { _ = c.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}) })
	case cabundle.KindMutatingWebhookConfiguration:
		o := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, n := range testWebhooks {
			o.Webhooks = append(o.Webhooks, admissionregistrationv1.MutatingWebhook{Name: n, ClientConfig: cc, Rules: rules, FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
		}
		if _, err = c.MutatingWebhookConfigurations().Create(ctx, o, metav1.CreateOptions{FieldManager: "installer"}); err == nil {
			_, err = c.MutatingWebhookConfigurations().Apply(ctx, admissionregistrationv1ac.MutatingWebhookConfiguration(name).
				WithWebhooks(admissionregistrationv1ac.MutatingWebhook().WithName(testWebhooks[2]).WithClientConfig(other)), apply)
		}
		t.Cleanup(func() { _ = c.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	if err != nil {
		t.Fatalf("create %s %s: %v", kind, name, err)
	}
	return name
}

// createConversionCRD creates a CRD whose conversion is strategy (Webhook
// or None) as the installer, deleted when the test ends.
func createConversionCRD(t *testing.T, strategy apiextensionsv1.ConversionStrategyType) string {
	t.Helper()
	group := uniqueName(t) + ".webhook.test"
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: schema}, {Name: "v2", Served: true, Schema: schema}},
		},
	}
	if strategy == apiextensionsv1.WebhookConverter {
		port := int32(443)
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: strategy, Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "convert", Port: &port}},
			ConversionReviewVersions: []string{"v1"},
		}}
	}
	c := caBundleClients(t).Extensions.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := c.Create(context.Background(), crd, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
	})
	return crd.Name
}

// checkWebhookLive asserts the selected webhooks carry want, the others
// not (the third keeps other's bundle), and the annotation names source.
func checkWebhookLive(t *testing.T, kind, name string, selected []string, want, otherBundle, source string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		inj := injectableOf(t, kind)
		live, err := inj.Get(context.Background(), name)
		if err != nil {
			return err
		}
		for _, s := range selected {
			if got := string(inj.Bundle(live, s)); got != want {
				return fmt.Errorf("caBundle of %s %s slot %q:\n%s\nwant:\n%s", kind, name, s, got, want)
			}
		}
		if kind != cabundle.KindCustomResourceDefinition {
			if got := string(inj.Bundle(live, testWebhooks[2])); got != otherBundle {
				return fmt.Errorf("caBundle of webhook %s (other's) = %q, want %q", testWebhooks[2], got, otherBundle)
			}
		}
		if got := live.GetAnnotations()[cabundle.SourceAnnotation]; got != source {
			return fmt.Errorf("live %s = %q, want %q", cabundle.SourceAnnotation, got, source)
		}
		return nil
	}
}

// checkNoManager asserts that manager owns no field of the object.
func checkNoManager(t *testing.T, kind, name, manager string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		live, err := injectableOf(t, kind).Get(context.Background(), name)
		if err != nil {
			return err
		}
		for _, mf := range live.GetManagedFields() {
			if mf.Manager == manager {
				return fmt.Errorf("field manager %q still owns fields of %s %s: %s", manager, kind, name, mf.FieldsV1.String())
			}
		}
		return nil
	}
}

// checkWebhookReleased is a CheckDestroy: no caBundle of ours, no
// annotation, no inline ConfigMap; other's caBundle and every other field
// as the installer wrote them.
func checkWebhookReleased(t *testing.T, kind, name, otherBundle string, before func() cabundle.Object) resource.TestCheckFunc {
	return func(*terraform.State) error {
		inj := injectableOf(t, kind)
		live, err := inj.Get(context.Background(), name)
		if err != nil {
			return err
		}
		if owned := cabundle.OwnedSlots(inj, live, cabundle.DefaultFieldManager); len(owned) != 0 {
			return fmt.Errorf("kmshealth still owns the caBundle of %q after destroy", owned)
		}
		slots, _ := inj.Slots(live, nil)
		for _, s := range slots {
			b := inj.Bundle(live, s)
			if s == testWebhooks[2] && kind != cabundle.KindCustomResourceDefinition {
				if string(b) != otherBundle {
					return fmt.Errorf("other's caBundle of %s changed by destroy: %q", s, b)
				}
				continue
			}
			if len(b) != 0 {
				return fmt.Errorf("caBundle of %q still set after destroy", s)
			}
		}
		if v, ok := live.GetAnnotations()[cabundle.SourceAnnotation]; ok {
			return fmt.Errorf("annotation still set after destroy: %q", v)
		}
		if !equality.Semantic.DeepEqual(stripped(before()), stripped(live)) {
			return fmt.Errorf("destroy touched fields it does not own:\nbefore %+v\n after %+v", stripped(before()), stripped(live))
		}
		_, err = env.Clientset().CoreV1().ConfigMaps("kube-system").Get(context.Background(), cabundle.TargetInlineConfigMapName(cabundle.Target{Kind: kind, Name: name}), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("inline ConfigMap still there after destroy (err=%w)", err)
		}
		return nil
	}
}

// stripped is obj without caBundles and volatile metadata.
func stripped(obj cabundle.Object) any {
	switch o := obj.DeepCopyObject().(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			o.Webhooks[i].ClientConfig.CABundle = nil
		}
		return o.Webhooks
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			o.Webhooks[i].ClientConfig.CABundle = nil
		}
		return o.Webhooks
	case *apiextensionsv1.CustomResourceDefinition:
		if c := o.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
			c.Webhook.ClientConfig.CABundle = nil
		}
		return o.Spec
	}
	return nil
}

// snapshot reads the object now, for a later comparison.
func snapshot(t *testing.T, kind, name string) func() cabundle.Object {
	inj := injectableOf(t, kind)
	obj, err := inj.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return func() cabundle.Object { return obj }
}

// driftSlot overwrites slot's caBundle by Update, as an installer's
// kubectl replace would.
func driftSlot(t *testing.T, kind, name, slot, pemText string) {
	t.Helper()
	ctx := context.Background()
	c := env.Clientset().AdmissionregistrationV1()
	opts := metav1.UpdateOptions{FieldManager: "installer"}
	var err error
	switch kind {
	case cabundle.KindValidatingWebhookConfiguration:
		o, gerr := c.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		for i := range o.Webhooks {
			if o.Webhooks[i].Name == slot {
				o.Webhooks[i].ClientConfig.CABundle = []byte(pemText)
			}
		}
		_, err = c.ValidatingWebhookConfigurations().Update(ctx, o, opts)
	case cabundle.KindMutatingWebhookConfiguration:
		o, gerr := c.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		for i := range o.Webhooks {
			if o.Webhooks[i].Name == slot {
				o.Webhooks[i].ClientConfig.CABundle = []byte(pemText)
			}
		}
		_, err = c.MutatingWebhookConfigurations().Update(ctx, o, opts)
	case cabundle.KindCustomResourceDefinition:
		crds := caBundleClients(t).Extensions.ApiextensionsV1().CustomResourceDefinitions()
		o, gerr := crds.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(gerr)
		}
		o.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte(pemText)
		_, err = crds.Update(ctx, o, opts)
	}
	if err != nil {
		t.Fatalf("out-of-band overwrite: %v", err)
	}
}

func TestAccWebhookCABundle_validatingNamedInline(t *testing.T) {
	t.Parallel()
	kind := cabundle.KindValidatingWebhookConfiguration
	otherCA := newCertPEM(t, "other-ca", certOpts{})
	name := createWebhookConfig(t, kind, otherCA)
	before := snapshot(t, kind, name)
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	src := "ConfigMap/kube-system/kmshealth-cabundle-validating-" + name + "/ca.crt"
	two := fmt.Sprintf("webhooks = [%q, %q]", testWebhooks[0], testWebhooks[1])
	one := fmt.Sprintf("webhooks = [%q]", testWebhooks[0])

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkWebhookReleased(t, kind, name, otherCA, before),
		Steps: []resource.TestStep{
			{
				Config: webhookInlineConfig(kind, name, ca1, two),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(webhookAddr, "id", kind+"/"+name),
					resource.TestCheckResourceAttr(webhookAddr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca1))),
					resource.TestCheckResourceAttr(webhookAddr, "certificate_count", "1"),
					resource.TestCheckResourceAttr(webhookAddr, "certificates.0.subject", "CN=ca-one"),
					resource.TestCheckResourceAttr(webhookAddr, "ca_bundle_source", src),
					checkWebhookLive(t, kind, name, testWebhooks[:2], ca1, otherCA, src),
				),
			},
			// An installer overwrites the second webhook's bundle: drift.
			{
				PreConfig:          func() { driftSlot(t, kind, name, testWebhooks[1], ca2) },
				Config:             webhookInlineConfig(kind, name, ca1, two),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: webhookInlineConfig(kind, name, ca1, two), Check: checkWebhookLive(t, kind, name, testWebhooks[:2], ca1, otherCA, src)},
			// Dropping a webhook from the set releases its caBundle in place.
			{
				Config: webhookInlineConfig(kind, name, ca1, one),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkWebhookLive(t, kind, name, testWebhooks[:1], ca1, otherCA, src),
					func(*terraform.State) error {
						inj := injectableOf(t, kind)
						live, err := inj.Get(context.Background(), name)
						if err != nil {
							return err
						}
						if b := inj.Bundle(live, testWebhooks[1]); len(b) != 0 {
							return fmt.Errorf("webhook %s kept its caBundle after it left webhooks", testWebhooks[1])
						}
						return nil
					},
				),
			},
			{ResourceName: webhookAddr, ImportState: true, ImportStateId: kind + "/" + name, ImportStateVerify: true},
		},
	})
}

func TestAccWebhookCABundle_mutatingEverySecret(t *testing.T) {
	t.Parallel()
	kind := cabundle.KindMutatingWebhookConfiguration
	name := createWebhookConfig(t, kind, "")
	before := snapshot(t, kind, name)
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	secrets := env.Clientset().CoreV1().Secrets("default")
	secretName := uniqueName(t) + "-ca"
	if _, err := secrets.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName}, Data: map[string][]byte{"ca.crt": []byte(ca1)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), secretName, metav1.DeleteOptions{}) })
	src := "Secret/default/" + secretName + "/ca.crt"
	config := webhookSourceConfig(kind, name, secretName, "")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkWebhookReleased(t, kind, name, "", before),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(webhookAddr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca1))),
					resource.TestCheckNoResourceAttr(webhookAddr, "webhooks"),
					resource.TestCheckResourceAttr(webhookAddr, "ca_bundle_source", src),
					resource.TestCheckNoResourceAttr(webhookAddr, "ca_bundle"),
					func(*terraform.State) error { // every webhook, the third too (other held none)
						inj := injectableOf(t, kind)
						live, err := inj.Get(context.Background(), name)
						if err != nil {
							return err
						}
						for _, s := range testWebhooks {
							if !bytes.Equal(inj.Bundle(live, s), []byte(ca1)) {
								return fmt.Errorf("webhook %s caBundle = %q, want ca1", s, inj.Bundle(live, s))
							}
						}
						return nil
					},
				),
			},
			{
				PreConfig:          func() { driftSlot(t, kind, name, testWebhooks[0], ca2) },
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: config, Check: resource.TestCheckResourceAttr(webhookAddr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca1)))},
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
				Check:  resource.TestCheckResourceAttr(webhookAddr, "fingerprint_sha256", cabundle.Fingerprint([]byte(ca2))),
			},
			{ResourceName: webhookAddr, ImportState: true, ImportStateId: kind + "/" + name, ImportStateVerify: true},
		},
	})
}

func TestAccWebhookCABundle_crdConversion(t *testing.T) {
	t.Parallel()
	kind := cabundle.KindCustomResourceDefinition
	name := createConversionCRD(t, apiextensionsv1.WebhookConverter)
	before := snapshot(t, kind, name)
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	src := "ConfigMap/kube-system/kmshealth-cabundle-crd-" + name + "/ca.crt"
	secrets := env.Clientset().CoreV1().Secrets("default")
	secretName := uniqueName(t) + "-ca"
	if _, err := secrets.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName}, Data: map[string][]byte{"ca.crt": []byte(ca2)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), secretName, metav1.DeleteOptions{}) })
	platform := `field_manager = "platform-team"`

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkWebhookReleased(t, kind, name, "", before),
		Steps: []resource.TestStep{
			{
				Config: webhookInlineConfig(kind, name, ca1, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(webhookAddr, "id", kind+"/"+name),
					checkWebhookLive(t, kind, name, []string{""}, ca1, "", src),
				),
			},
			{
				PreConfig:          func() { driftSlot(t, kind, name, "", ca2) },
				Config:             webhookInlineConfig(kind, name, ca1, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{Config: webhookInlineConfig(kind, name, ca1, ""), Check: checkWebhookLive(t, kind, name, []string{""}, ca1, "", src)},
			// A new field manager takes the bundle and the old one lets go.
			{
				Config: webhookInlineConfig(kind, name, ca1, platform),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkWebhookLive(t, kind, name, []string{""}, ca1, "", src),
					checkNoManager(t, kind, name, cabundle.DefaultFieldManager),
				),
			},
			// From inline to a Secret, back to the default manager: the
			// inline ConfigMap goes, and so does platform-team's ownership.
			{
				Config: webhookSourceConfig(kind, name, secretName, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkWebhookLive(t, kind, name, []string{""}, ca2, "", "Secret/default/"+secretName+"/ca.crt"),
					checkNoManager(t, kind, name, "platform-team"),
					func(*terraform.State) error {
						_, err := env.Clientset().CoreV1().ConfigMaps("kube-system").Get(context.Background(), cabundle.TargetInlineConfigMapName(cabundle.Target{Kind: kind, Name: name}), metav1.GetOptions{})
						if !apierrors.IsNotFound(err) {
							return fmt.Errorf("inline ConfigMap kept after switching to a source (err=%w)", err)
						}
						return nil
					},
				),
			},
			{ResourceName: webhookAddr, ImportState: true, ImportStateId: kind + "/" + name, ImportStateVerify: true},
		},
	})
}

func TestAccWebhookCABundle_badInput(t *testing.T) {
	t.Parallel()
	good := newCertPEM(t, "ca", certOpts{})
	expired := newCertPEM(t, "old-ca", certOpts{notAfter: time.Now().Add(-time.Hour)})
	hooks := createWebhookConfig(t, cabundle.KindValidatingWebhookConfiguration, "")
	noConversion := createConversionCRD(t, apiextensionsv1.NoneConverter)
	vwc := cabundle.KindValidatingWebhookConfiguration
	crd := cabundle.KindCustomResourceDefinition
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
			for _, k := range []struct{ kind, name string }{{vwc, hooks}, {crd, noConversion}} {
				inj := injectableOf(t, k.kind)
				live, err := inj.Get(context.Background(), k.name)
				if err != nil {
					return err
				}
				if live.GetAnnotations()[cabundle.SourceAnnotation] != "" || len(cabundle.OwnedSlots(inj, live, cabundle.DefaultFieldManager)) != 0 {
					return fmt.Errorf("a rejected input wrote to %s %s", k.kind, k.name)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			// Plan time, each naming its attribute.
			planOnly(webhookInlineConfig(vwc, hooks, "not pem at all\n", ""), `(?s)Unparsable PEM.*ca_bundle|ca_bundle.*Unparsable PEM`),
			planOnly(webhookInlineConfig(vwc, hooks, expired, ""), `(?s)Expired certificate.*ca_bundle|ca_bundle.*Expired certificate`),
			planOnly(webhookInlineConfig(vwc, hooks, good, "source {\n kind = \"Secret\"\n namespace = \"default\"\n name = \"x\"\n key = \"ca.crt\"\n}"), `(?s)ca_bundle.*source|source.*ca_bundle`),
			planOnly(webhookInlineConfig("Pod", hooks, good, ""), `(?s)kind.*value must be one of`),
			planOnly(webhookInlineConfig(crd, noConversion, good, `webhooks = ["a.webhook.test"]`), `(?s)webhooks.*not allowed for a CustomResourceDefinition`),
			planOnly(webhookInlineConfig(vwc, hooks, good, `webhooks = ["a.webhook.test", "nope.webhook.test"]`), `(?s)webhooks.*no webhook named "nope.webhook.test"`),
			planOnly(webhookInlineConfig(vwc, hooks, good, `webhooks = ["Not_A_Name"]`), `(?s)webhooks.*object name`),
			// Apply time.
			apply(webhookInlineConfig(vwc, "missing", good, ""), `ValidatingWebhookConfiguration "missing" not found`),
			apply(webhookInlineConfig(crd, noConversion, good, ""), `(?s)name.*spec.conversion.strategy "None"`),
		},
	})
}

// TestAccWebhookCABundle_keptByReconciler: the resources' ids and sources
// feed kmshealth_reconciler.webhook_ca_bundles; the record holds exactly
// them, and the next plan is empty.
func TestAccWebhookCABundle_keptByReconciler(t *testing.T) {
	t.Parallel()
	ns, srcNS := uniqueName(t), uniqueName(t)+"-src"
	mustCreateNamespace(t, ns)
	mustCreateNamespace(t, srcNS)
	ca := newCertPEM(t, "ca", certOpts{})
	mustCreateSecret(t, srcNS, "hook-ca", map[string][]byte{"ca.crt": []byte(ca)})
	hooks := createWebhookConfig(t, cabundle.KindMutatingWebhookConfiguration, "")
	crd := createConversionCRD(t, apiextensionsv1.WebhookConverter)
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_webhook_cabundle" "hooks" {
  kind     = "MutatingWebhookConfiguration"
  name     = %q
  webhooks = [%q]
  source {
    kind      = "Secret"
    namespace = %q
    name      = "hook-ca"
    key       = "ca.crt"
  }
}

resource "kmshealth_webhook_cabundle" "crd" {
  kind      = "CustomResourceDefinition"
  name      = %q
  ca_bundle = %q
}

resource "kmshealth_reconciler" "test" {
  namespace          = %q
  name               = "rec-webhooks"
  webhook_ca_bundles = { for r in [kmshealth_webhook_cabundle.hooks, kmshealth_webhook_cabundle.crd] : r.id => { source = r.ca_bundle_source, webhooks = r.webhooks } }
  wait_for_rollout   = false # no kubelet here
}
`, hooks, testWebhooks[0], srcNS, crd, ca, ns)
	hookSrc := "Secret/" + srcNS + "/hook-ca/ca.crt"
	crdSrc := "ConfigMap/kube-system/kmshealth-cabundle-crd-" + crd + "/ca.crt"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("kmshealth_reconciler.test", "webhook_ca_bundles.MutatingWebhookConfiguration/"+hooks+".source", hookSrc),
					resource.TestCheckResourceAttr("kmshealth_reconciler.test", "webhook_ca_bundles.CustomResourceDefinition/"+crd+".source", crdSrc),
					func(*terraform.State) error {
						rec, err := env.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), "rec-webhooks-record", metav1.GetOptions{})
						if err != nil {
							return err
						}
						good, bad := cabundle.TargetsFromRecord(rec.Data)
						h, c := good[cabundle.KindMutatingWebhookConfiguration+"/"+hooks], good[cabundle.KindCustomResourceDefinition+"/"+crd]
						if len(good) != 2 || len(bad) != 0 || h.Source.String() != hookSrc || strings.Join(h.Target.Webhooks, ",") != testWebhooks[0] || c.Source.String() != crdSrc {
							return fmt.Errorf("record holds %+v (bad %v), want the two kept objects", good, bad)
						}
						return nil
					},
				),
			},
		},
	})
}
