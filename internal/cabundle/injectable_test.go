package cabundle

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

func testClients(t *testing.T) Clients {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	agg, err := aggregator.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return Clients{Core: env.Clientset(), Aggregator: agg, Extensions: ext}
}

func mustInjectable(t *testing.T, kind string) Injectable {
	t.Helper()
	inj, err := For(kind, testClients(t))
	if err != nil {
		t.Fatal(err)
	}
	return inj
}

// webhookNames are the webhooks of every test configuration; "c" is
// created with a caBundle the installer owns.
var webhookNames = []string{"a.webhook.test", "b.webhook.test", "c.webhook.test"}

// createWebhookConfiguration creates a configuration of kind with three
// webhooks as the installer (an Update manager, like kubectl create).
func createWebhookConfiguration(t *testing.T, kind string, installerBundle []byte) Object {
	t.Helper()
	name := uniqueName(t)
	port := int32(443)
	path := "/validate"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cc := func(i int) admissionregistrationv1.WebhookClientConfig {
		c := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook-" + name, Path: &path, Port: &port}}
		if i == 2 {
			c.CABundle = installerBundle
		}
		return c
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"webhook.test"}, APIVersions: []string{"v1"}, Resources: []string{"things"}},
	}}
	c := env.Clientset().AdmissionregistrationV1()
	var obj Object
	var err error
	switch kind {
	case KindValidatingWebhookConfiguration:
		o := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i, n := range webhookNames {
			o.Webhooks = append(o.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: n, ClientConfig: cc(i), Rules: rules,
				FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
		}
		obj, err = object(c.ValidatingWebhookConfigurations().Create(t.Context(), o, metav1.CreateOptions{FieldManager: installer}))
		t.Cleanup(func() {
			_ = c.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	case KindMutatingWebhookConfiguration:
		o := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i, n := range webhookNames {
			o.Webhooks = append(o.Webhooks, admissionregistrationv1.MutatingWebhook{Name: n, ClientConfig: cc(i), Rules: rules,
				FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
		}
		obj, err = object(c.MutatingWebhookConfigurations().Create(t.Context(), o, metav1.CreateOptions{FieldManager: installer}))
		t.Cleanup(func() {
			_ = c.MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	if err != nil {
		t.Fatalf("create %s %s: %v", kind, name, err)
	}
	return obj
}

// withoutBundles is obj with every caBundle and annotation, and the
// metadata that changes on every write, cleared: what kmshealth must
// never change.
func withoutBundles(obj Object) Object {
	switch o := obj.DeepCopyObject().(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			o.Webhooks[i].ClientConfig.CABundle = nil
		}
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, UID: o.UID}
		return o
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			o.Webhooks[i].ClientConfig.CABundle = nil
		}
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, UID: o.UID}
		return o
	case *apiextensionsv1.CustomResourceDefinition:
		if c := o.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
			c.Webhook.ClientConfig.CABundle = nil
		}
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, UID: o.UID}
		o.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		return o
	}
	panic("unexpected kind")
}

func assertOnlyBundlesChanged(t *testing.T, before, after Object) {
	t.Helper()
	if b, a := withoutBundles(before), withoutBundles(after); !equality.Semantic.DeepEqual(b, a) {
		t.Errorf("fields other than the caBundles changed:\nbefore %+v\n after %+v", b, a)
	}
}

func getObject(t *testing.T, inj Injectable, name string) Object {
	t.Helper()
	obj, err := inj.Get(t.Context(), name)
	if err != nil {
		t.Fatalf("get %s %s: %v", inj.Kind(), name, err)
	}
	return obj
}

func TestEnsureTargetWebhooks(t *testing.T) {
	for _, kind := range []string{KindValidatingWebhookConfiguration, KindMutatingWebhookConfiguration} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			inj := mustInjectable(t, kind)
			installerBundle := testBundle(t, "installer-ca")
			created := createWebhookConfiguration(t, kind, installerBundle)
			name := created.GetName()
			ours := testBundle(t, "our-ca")
			src := secretSource("webhook-ca")
			opts := ApplyOptions{FieldManager: DefaultFieldManager}
			target := Target{Kind: kind, Name: name, Webhooks: webhookNames[:2]}

			out, wrote, err := EnsureTarget(t.Context(), inj, created, target, ours, src, opts)
			if err != nil || !wrote {
				t.Fatalf("EnsureTarget = wrote %v, %v; want a write", wrote, err)
			}
			for _, s := range webhookNames[:2] {
				if !bytes.Equal(inj.Bundle(out, s), ours) {
					t.Errorf("webhook %s caBundle = %q, want ours", s, inj.Bundle(out, s))
				}
			}
			if !bytes.Equal(inj.Bundle(out, webhookNames[2]), installerBundle) {
				t.Errorf("webhook %s caBundle changed: it is not selected", webhookNames[2])
			}
			if got := OwnedSlots(inj, out, DefaultFieldManager); !slices.Equal(got, webhookNames[:2]) {
				t.Errorf("OwnedSlots = %q, want %q", got, webhookNames[:2])
			}
			if out.GetAnnotations()[SourceAnnotation] != src.String() {
				t.Errorf("annotation = %q, want %q", out.GetAnnotations()[SourceAnnotation], src)
			}
			assertOnlyBundlesChanged(t, created, out)

			// In sync: nothing written.
			if _, wrote, err := EnsureTarget(t.Context(), inj, out, target, ours, src, opts); err != nil || wrote {
				t.Errorf("second EnsureTarget = wrote %v, %v; want no write", wrote, err)
			}

			// Drift: the installer rewrites webhook a's caBundle by Update.
			drifted := driftWebhook(t, kind, name, webhookNames[0], installerBundle)
			want, err := WantFor(inj, drifted, target.Webhooks, Canonical(ours), src)
			if err != nil {
				t.Fatal(err)
			}
			if InSyncWith(inj, drifted, want, DefaultFieldManager) {
				t.Fatal("InSyncWith after drift = true, want false")
			}
			forced := opts
			forced.Force = true
			restored, wrote, err := EnsureTarget(t.Context(), inj, drifted, target, ours, src, forced)
			if err != nil || !wrote || !bytes.Equal(inj.Bundle(restored, webhookNames[0]), ours) {
				t.Fatalf("EnsureTarget after drift = wrote %v, %v; want ours restored", wrote, err)
			}

			// The third webhook's caBundle belongs to another applier: a
			// target naming it conflicts unless forced.
			otherApply(t, kind, name, webhookNames[2], installerBundle)
			live := getObject(t, inj, name)
			all := Target{Kind: kind, Name: name}
			if _, _, err := EnsureTarget(t.Context(), inj, live, all, ours, src, opts); !errors.Is(err, ErrConflict) {
				t.Errorf("EnsureTarget of every webhook without force = %v, want ErrConflict", err)
			}

			// Release: our caBundles go, the other applier's stays.
			if err := ReleaseTarget(t.Context(), inj, name, DefaultFieldManager); err != nil {
				t.Fatalf("ReleaseTarget: %v", err)
			}
			released := getObject(t, inj, name)
			for _, s := range webhookNames[:2] {
				if b := inj.Bundle(released, s); len(b) != 0 {
					t.Errorf("webhook %s caBundle after release = %q, want none", s, b)
				}
			}
			if !bytes.Equal(inj.Bundle(released, webhookNames[2]), installerBundle) || !slices.Contains(BundleOwnersOf(inj, released, webhookNames[2]), "other") {
				t.Errorf("webhook %s caBundle after release = %q owned by %q, want the other applier's kept", webhookNames[2], inj.Bundle(released, webhookNames[2]), BundleOwnersOf(inj, released, webhookNames[2]))
			}
			if _, ok := released.GetAnnotations()[SourceAnnotation]; ok {
				t.Errorf("annotation %s left after release", SourceAnnotation)
			}
			if len(OwnedSlots(inj, released, DefaultFieldManager)) != 0 || len(managedLeaves(t, released, DefaultFieldManager)) != 0 {
				t.Errorf("%s still owns %q after release", DefaultFieldManager, managedLeaves(t, released, DefaultFieldManager))
			}
			assertOnlyBundlesChanged(t, created, released)
		})
	}
}

// driftWebhook sets webhook's caBundle by Update, as the installer's
// kubectl replace would.
func driftWebhook(t *testing.T, kind, name, webhook string, bundle []byte) Object {
	t.Helper()
	c := env.Clientset().AdmissionregistrationV1()
	opts := metav1.UpdateOptions{FieldManager: installer}
	switch kind {
	case KindValidatingWebhookConfiguration:
		o, err := c.ValidatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range o.Webhooks {
			if o.Webhooks[i].Name == webhook {
				o.Webhooks[i].ClientConfig.CABundle = bundle
			}
		}
		out, err := c.ValidatingWebhookConfigurations().Update(t.Context(), o, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	default:
		o, err := c.MutatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range o.Webhooks {
			if o.Webhooks[i].Name == webhook {
				o.Webhooks[i].ClientConfig.CABundle = bundle
			}
		}
		out, err := c.MutatingWebhookConfigurations().Update(t.Context(), o, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// otherApply makes the manager "other" own webhook's caBundle by apply.
func otherApply(t *testing.T, kind, name, webhook string, bundle []byte) {
	t.Helper()
	c := env.Clientset().AdmissionregistrationV1()
	opts := metav1.ApplyOptions{FieldManager: "other", Force: true}
	cc := admissionregistrationv1ac.WebhookClientConfig().WithCABundle(bundle...)
	var err error
	switch kind {
	case KindValidatingWebhookConfiguration:
		_, err = c.ValidatingWebhookConfigurations().Apply(t.Context(), admissionregistrationv1ac.ValidatingWebhookConfiguration(name).
			WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(webhook).WithClientConfig(cc)), opts)
	default:
		_, err = c.MutatingWebhookConfigurations().Apply(t.Context(), admissionregistrationv1ac.MutatingWebhookConfiguration(name).
			WithWebhooks(admissionregistrationv1ac.MutatingWebhook().WithName(webhook).WithClientConfig(cc)), opts)
	}
	if err != nil {
		t.Fatalf("apply as other: %v", err)
	}
}

func TestEnsureTargetEveryWebhook(t *testing.T) {
	t.Parallel()
	inj := mustInjectable(t, KindValidatingWebhookConfiguration)
	created := createWebhookConfiguration(t, KindValidatingWebhookConfiguration, nil)
	ours := testBundle(t, "our-ca")
	out, _, err := EnsureTarget(t.Context(), inj, created, Target{Kind: inj.Kind(), Name: created.GetName()}, ours, secretSource("x"), ApplyOptions{FieldManager: DefaultFieldManager})
	if err != nil {
		t.Fatal(err)
	}
	if got := OwnedSlots(inj, out, DefaultFieldManager); !slices.Equal(got, webhookNames) {
		t.Errorf("OwnedSlots = %q, want every webhook %q", got, webhookNames)
	}
}

func TestEnsureTargetRejects(t *testing.T) {
	t.Parallel()
	vwc := mustInjectable(t, KindValidatingWebhookConfiguration)
	crd := mustInjectable(t, KindCustomResourceDefinition)
	hooks := createWebhookConfiguration(t, KindValidatingWebhookConfiguration, nil)
	noConversion := createCRD(t, "none", false)
	tests := []struct {
		name   string
		inj    Injectable
		live   Object
		target Target
		want   []string
	}{
		{"missing webhook", vwc, hooks, Target{Webhooks: []string{"a.webhook.test", "nope.webhook.test"}},
			[]string{`no webhook named "nope.webhook.test"`, `"a.webhook.test", "b.webhook.test", "c.webhook.test"`}},
		{"CRD without conversion webhook", crd, noConversion, Target{}, []string{`spec.conversion.strategy "None"`, "strategy: Webhook"}},
		{"CRD with webhooks", crd, noConversion, Target{Webhooks: []string{"x"}}, []string{"remove webhooks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.Kind, tt.target.Name = tt.inj.Kind(), tt.live.GetName()
			_, wrote, err := EnsureTarget(t.Context(), tt.inj, tt.live, tt.target, testBundle(t, "ca"), secretSource("x"), ApplyOptions{FieldManager: DefaultFieldManager})
			if err == nil || wrote {
				t.Fatalf("EnsureTarget = wrote %v, %v; want an error", wrote, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// createCRD creates <plural>.<unique>.cabundle.test as the installer,
// with a conversion webhook when webhook is set.
func createCRD(t *testing.T, plural string, webhook bool) Object {
	t.Helper()
	group := uniqueName(t) + ".cabundle.test"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "s." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural + "s", Singular: plural, Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}},
				{Name: "v2", Served: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}},
			},
		},
	}
	if webhook {
		port := int32(443)
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "convert", Port: &port}},
			ConversionReviewVersions: []string{"v1"},
		}}
	}
	c := testClients(t).Extensions.ApiextensionsV1().CustomResourceDefinitions()
	out, err := c.Create(t.Context(), crd, metav1.CreateOptions{FieldManager: installer})
	if err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", crd.Name, err)
		}
	})
	return out
}

func TestEnsureTargetCRD(t *testing.T) {
	t.Parallel()
	inj := mustInjectable(t, KindCustomResourceDefinition)
	created := createCRD(t, "thing", true)
	name := created.GetName()
	ours := testBundle(t, "our-ca")
	src := secretSource("convert-ca")
	target := Target{Kind: inj.Kind(), Name: name}
	opts := ApplyOptions{FieldManager: DefaultFieldManager}

	out, wrote, err := EnsureTarget(t.Context(), inj, created, target, ours, src, opts)
	if err != nil || !wrote {
		t.Fatalf("EnsureTarget = wrote %v, %v; want a write", wrote, err)
	}
	if !bytes.Equal(inj.Bundle(out, ""), ours) {
		t.Errorf("conversion caBundle = %q, want ours", inj.Bundle(out, ""))
	}
	if got := managedLeaves(t, out, DefaultFieldManager); !slices.Equal(got, []string{annotationLeaf, "spec>conversion>webhook>clientConfig>caBundle"}) {
		t.Errorf("%s owns %q, want only the annotation and the conversion caBundle", DefaultFieldManager, got)
	}
	assertOnlyBundlesChanged(t, created, out)
	if _, wrote, err := EnsureTarget(t.Context(), inj, out, target, ours, src, opts); err != nil || wrote {
		t.Errorf("second EnsureTarget = wrote %v, %v; want no write", wrote, err)
	}

	if err := ReleaseTarget(t.Context(), inj, name, DefaultFieldManager); err != nil {
		t.Fatal(err)
	}
	released := getObject(t, inj, name)
	if b := inj.Bundle(released, ""); len(b) != 0 {
		t.Errorf("conversion caBundle after release = %q, want none", b)
	}
	if got := managedLeaves(t, released, DefaultFieldManager); len(got) != 0 {
		t.Errorf("%s still owns %q after release", DefaultFieldManager, got)
	}
	assertOnlyBundlesChanged(t, created, released)
	// Releasing again, or a CRD that is gone, writes nothing and is no error.
	if err := ReleaseTarget(t.Context(), inj, name, DefaultFieldManager); err != nil {
		t.Errorf("second ReleaseTarget: %v", err)
	}
	if err := ReleaseTarget(t.Context(), inj, "nothings.gone.cabundle.test", DefaultFieldManager); err != nil {
		t.Errorf("ReleaseTarget of a missing CRD: %v", err)
	}
}

func TestTargetRecord(t *testing.T) {
	kept := []Kept{
		{Target: Target{Kind: KindValidatingWebhookConfiguration, Name: "hooks", Webhooks: []string{"a.x", "b.x"}}, Source: secretSource("s")},
		{Target: Target{Kind: KindMutatingWebhookConfiguration, Name: "hooks"}, Source: secretSource("m")},
		{Target: Target{Kind: KindCustomResourceDefinition, Name: "things.x.io"}, Source: Source{Kind: KindConfigMap, Namespace: "ns", Name: "c", Key: "ca.crt"}},
	}
	data := TargetRecordData(kept)
	data["cabundle.v1.x.io"] = "Secret/default/apiservice/ca.crt" // an APIService entry: not ours
	data["cabundle-crd.Bad_Name"] = `{"source":"Secret/default/s/ca.crt"}`
	data["cabundle-validating.broken"] = `not json`
	good, bad := TargetsFromRecord(data)
	if len(good) != len(kept) {
		t.Errorf("TargetsFromRecord read %d good entries %v, want %d", len(good), good, len(kept))
	}
	for _, k := range kept {
		got, ok := good[k.Target.String()]
		if !ok || got.Source != k.Source || !slices.Equal(got.Target.Webhooks, k.Target.Webhooks) {
			t.Errorf("entry %s = %+v, want %+v", k.Target, got, k)
		}
	}
	for _, k := range []string{"CustomResourceDefinition/Bad_Name", "ValidatingWebhookConfiguration/broken"} {
		if bad[k] == nil {
			t.Errorf("bad entry %s not reported (bad: %v)", k, bad)
		}
	}
	if apiservices, _ := FromRecord(data); len(apiservices) != 1 {
		t.Errorf("FromRecord read %v, want the APIService entry alone", apiservices)
	}
}
