package reconciler

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

func caClients(t testing.TB) cabundle.Clients {
	t.Helper()
	return cabundle.Clients{Core: env.Clientset(), Aggregator: agg(t), Extensions: apiextensionsclient.NewForConfigOrDie(env.RESTConfig())}
}

var webhookGVRs = map[string]schema.GroupVersionResource{
	cabundle.KindValidatingWebhookConfiguration: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"),
	cabundle.KindCustomResourceDefinition:       apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
}

// waitForSlots watches the object until every slot's caBundle equals want.
func waitForSlots(t testing.TB, inj cabundle.Injectable, name string, slots []string, want []byte, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	ri := dynamic.NewForConfigOrDie(env.RESTConfig()).Resource(webhookGVRs[inj.Kind()])
	lw := kube.ListWatch(ri.List, ri.Watch, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	})
	done := func() (bool, error) {
		live, err := inj.Get(ctx, name)
		if err != nil {
			return false, nil //nolint:nilerr // not there yet: wait for the next event
		}
		for _, s := range slots {
			if !bytes.Equal(inj.Bundle(live, s), want) {
				return false, nil
			}
		}
		return true, nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, nil, func(cache.Store) (bool, error) { return done() }, func(watch.Event) (bool, error) { return done() })
	if err != nil {
		live, _ := inj.Get(context.Background(), name)
		t.Fatalf("caBundle of %s %s not restored within %s: %v (live: %+v)", inj.Kind(), name, limit, err, live)
	}
	return time.Since(start)
}

// TestReconcileWebhookRestoresAfterReplace: the webhook's installer
// replaces its configuration (and a CRD) with a manifest that has no
// caBundle and no annotation, as `kubectl replace` does; the real
// reconcile process puts back exactly the caBundles it keeps, from its
// record, and leaves the webhook it does not keep alone; a configuration
// deleted and created again is kept again.
func TestReconcileWebhookRestoresAfterReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := unique(t)
	good := newCA(t, "good")
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "default", Name: name + "-ca", Key: "ca.crt"}
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: src.Name}, Data: map[string]string{"ca.crt": string(good)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), src.Name, metav1.DeleteOptions{}) })

	// The installer's objects.
	port := int32(443)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	manifest := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, n := range []string{"a.reconcile.test", "b.reconcile.test"} {
		manifest.Webhooks = append(manifest.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: n,
			ClientConfig:  admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Port: &port}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}})
	}
	vwcs := env.Clientset().AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := vwcs.Create(ctx, manifest, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vwcs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	group := name + ".reconcile.test"
	objSchema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
	crdManifest := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: objSchema}, {Name: "v2", Served: true, Schema: objSchema}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "convert", Port: &port}},
				ConversionReviewVersions: []string{"v1"}}}},
	}
	crds := caClients(t).Extensions.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crdManifest, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crdManifest.Name, metav1.DeleteOptions{}) })

	// What kmshealth_webhook_cabundle and kmshealth_reconciler write.
	kept := []cabundle.Kept{
		{Target: cabundle.Target{Kind: cabundle.KindValidatingWebhookConfiguration, Name: name, Webhooks: []string{"a.reconcile.test"}}, Source: src},
		{Target: cabundle.Target{Kind: cabundle.KindCustomResourceDefinition, Name: crdManifest.Name}, Source: src},
	}
	injs := map[string]cabundle.Injectable{}
	for _, k := range kept {
		inj, err := cabundle.For(k.Target.Kind, caClients(t))
		if err != nil {
			t.Fatal(err)
		}
		injs[k.Target.Kind] = inj
		live, err := inj.Get(ctx, k.Target.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := cabundle.EnsureTarget(ctx, inj, live, k.Target, good, src, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager}); err != nil {
			t.Fatal(err)
		}
	}
	rec := corev1ac.ConfigMap(recordName(t), "default").WithData(cabundle.TargetRecordData(kept))
	if _, err := cms.Apply(ctx, rec, metav1.ApplyOptions{FieldManager: "test", Force: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), recordName(t), metav1.DeleteOptions{}) })
	p := startReconciler(t, "--leader-elect=false")

	// kubectl replace with the installer's manifests: no caBundle, no annotation.
	for i := range 2 {
		live, err := vwcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		replaced := manifest.DeepCopy()
		replaced.ResourceVersion = live.ResourceVersion
		if _, err := vwcs.Update(ctx, replaced, metav1.UpdateOptions{FieldManager: "installer"}); err != nil {
			t.Fatal(err)
		}
		took := waitForSlots(t, injs[cabundle.KindValidatingWebhookConfiguration], name, []string{"a.reconcile.test"}, good, restoreLimit)
		t.Logf("replace %d of the webhook configuration restored after %s", i+1, took)
	}
	liveCRD, err := crds.Get(ctx, crdManifest.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replacedCRD := crdManifest.DeepCopy()
	replacedCRD.ResourceVersion = liveCRD.ResourceVersion
	if _, err := crds.Update(ctx, replacedCRD, metav1.UpdateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
	took := waitForSlots(t, injs[cabundle.KindCustomResourceDefinition], crdManifest.Name, []string{""}, good, restoreLimit)
	t.Logf("replace of the CRD restored after %s", took)

	// Deleted and created again (a new UID): the one watch of every
	// validating webhook configuration hands the creation to its key.
	if err := vwcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vwcs.Create(ctx, manifest, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
	took = waitForSlots(t, injs[cabundle.KindValidatingWebhookConfiguration], name, []string{"a.reconcile.test"}, good, restoreLimit)
	t.Logf("re-created webhook configuration restored after %s", took)

	p.waitMetric(t, `kmshealth_corrections_total{controller="webhook-cabundle"}`, 4)
	live, err := vwcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b := live.Webhooks[1].ClientConfig.CABundle; len(b) != 0 {
		t.Errorf("webhook %s, which is not kept, got a caBundle", live.Webhooks[1].Name)
	}
	if got := live.Annotations[cabundle.SourceAnnotation]; got != src.String() {
		t.Errorf("annotation %s = %q after restore, want %q", cabundle.SourceAnnotation, got, src)
	}
	if !strings.Contains(p.log.String(), "webhook-cabundle") {
		t.Errorf("reconciler log does not mention the webhook-cabundle controller")
	}
}
