package reconcilerinstall

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// TestReconcilerWebhookAttacks tries, with the reconciler's real pod-bound
// token, what a compromised reconciler could do to the webhook
// configurations and CRDs whose caBundles it keeps — redirect a webhook,
// weaken it, touch another webhook or configuration, rewrite a CRD — and
// requires the API server to deny each, by RBAC and, once RBAC is
// widened, by the admission policy naming its rule. The caBundle writes
// themselves go through.
func TestReconcilerWebhookAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	ext := apiextensionsclient.NewForConfigOrDie(env.RESTConfig())
	for _, ns := range []string{"rec-wh-attack", "rec-wh-attack-src"} {
		createNamespace(t, core, ns)
	}
	ca := testpki.MustCertPEM("webhook attack CA", testpki.Options{})
	if _, err := core.CoreV1().Secrets("rec-wh-attack-src").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook-ca"}, Data: map[string][]byte{"ca.crt": ca}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := cabundle.Source{Kind: cabundle.KindSecret, Namespace: "rec-wh-attack-src", Name: "hook-ca", Key: "ca.crt"}
	kept := createAttackVWC(t, core, "kept-hooks")
	unkept := createAttackVWC(t, core, "unkept-hooks")
	keptCRD := createAttackCRD(t, ext, "kept")
	unkeptCRD := createAttackCRD(t, ext, "unkept")
	c := Config{Namespace: "rec-wh-attack", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true,
		WebhookCABundles: []cabundle.Kept{
			{Target: cabundle.Target{Kind: cabundle.KindValidatingWebhookConfiguration, Name: kept, Webhooks: []string{"a.attack.test"}}, Source: src},
			{Target: cabundle.Target{Kind: cabundle.KindCustomResourceDefinition, Name: keptCRD}, Source: src},
		}}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })

	cfg := asReconciler(t, c)
	asCore := kubernetes.NewForConfigOrDie(cfg)
	asExt := apiextensionsclient.NewForConfigOrDie(cfg)
	as := cabundle.Clients{Core: asCore, Aggregator: aggregator.NewForConfigOrDie(cfg), Extensions: asExt}
	hooksPolicy, crdPolicy := c.PolicyName("webhook-configurations"), c.PolicyName("crds")
	vwcs := asCore.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	crds := asExt.ApiextensionsV1().CustomResourceDefinitions()
	jsonPatch := func(name, patch string, opts metav1.PatchOptions) error {
		_, err := vwcs.Patch(ctx, name, types.JSONPatchType, []byte(patch), opts)
		return err
	}
	crdPatch := func(name, patch string, sub ...string) error {
		_, err := crds.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, sub...)
		return err
	}
	redirect := `[{"op":"replace","path":"/webhooks/0/clientConfig/service/name","value":"evil"}]`
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	testenv.WaitForPolicy(t, hooksPolicy, func() error { return jsonPatch(kept, redirect, dryRun) })
	testenv.WaitForPolicy(t, crdPolicy, func() error {
		_, err := crds.Patch(ctx, keptCRD, types.MergePatchType, []byte(`{"spec":{"conversion":{"webhook":{"clientConfig":{"service":{"name":"evil"}}}}}}`), dryRun)
		return err
	})

	// The legitimate writes: the caBundles it keeps, as the controller applies them.
	ensure := func(kind, name string, webhooks ...string) error {
		inj, err := cabundle.For(kind, as)
		if err != nil {
			t.Fatal(err)
		}
		admin, _ := cabundle.For(kind, cabundle.Clients{Core: core, Extensions: ext})
		live, err := admin.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = cabundle.EnsureTarget(ctx, inj, live, cabundle.Target{Kind: kind, Name: name, Webhooks: webhooks}, ca, src,
			cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager, Force: true})
		return err
	}
	if err := ensure(cabundle.KindValidatingWebhookConfiguration, kept, "a.attack.test"); err != nil {
		t.Errorf("the reconciler cannot write the webhook caBundle it keeps: %v", err)
	}
	if err := ensure(cabundle.KindCustomResourceDefinition, keptCRD); err != nil {
		t.Errorf("the reconciler cannot write the conversion caBundle it keeps: %v", err)
	}

	// Each field of a kept webhook the policy pins.
	hookRule := "may change no field of a webhook but clientConfig.caBundle"
	for _, tt := range []struct{ what, patch, rule string }{
		{"redirects clientConfig.service", redirect, hookRule},
		{"sets url", `[{"op":"remove","path":"/webhooks/0/clientConfig/service"},{"op":"add","path":"/webhooks/0/clientConfig/url","value":"https://evil.example.com/"}]`, hookRule},
		{"changes rules", `[{"op":"replace","path":"/webhooks/0/rules/0/resources","value":["secrets"]}]`, hookRule},
		{"changes failurePolicy", `[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`, hookRule},
		{"sets namespaceSelector", `[{"op":"add","path":"/webhooks/0/namespaceSelector","value":{"matchLabels":{"x":"y"}}}]`, hookRule},
		{"changes objectSelector", `[{"op":"add","path":"/webhooks/0/objectSelector","value":{"matchLabels":{"x":"y"}}}]`, hookRule},
		{"changes sideEffects", `[{"op":"replace","path":"/webhooks/0/sideEffects","value":"NoneOnDryRun"}]`, hookRule},
		{"changes matchPolicy", `[{"op":"replace","path":"/webhooks/0/matchPolicy","value":"Exact"}]`, hookRule},
		{"removes a webhook", `[{"op":"remove","path":"/webhooks/1"}]`, "may not add, remove or rename webhooks"},
		{"writes the caBundle of a webhook it does not keep", `[{"op":"add","path":"/webhooks/1/clientConfig/caBundle","value":"` + b64(ca) + `"}]`, "only of the webhooks it keeps"},
		{"adds a label", `[{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`, "may change no metadata"},
	} {
		testenv.Denied(t, "the reconciler's token "+tt.what+" of a kept webhook configuration", jsonPatch(kept, tt.patch, metav1.PatchOptions{}),
			testenv.PolicyDenial(hooksPolicy), tt.rule)
	}
	testenv.Denied(t, "the reconciler's token redirects the conversion webhook of a kept CRD",
		crdPatch(keptCRD, `{"spec":{"conversion":{"webhook":{"clientConfig":{"service":{"name":"evil"}}}}}}`),
		testenv.PolicyDenial(crdPolicy), "no field of a CustomResourceDefinition but spec.conversion.webhook.clientConfig.caBundle")
	testenv.Denied(t, "the reconciler's token stops serving a version of a kept CRD",
		crdPatch(keptCRD, `{"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`),
		testenv.PolicyDenial(crdPolicy), "no field of a CustomResourceDefinition")

	// RBAC: other objects, other verbs, subresources.
	testenv.Denied(t, "the reconciler's token writes the caBundle of a configuration it does not keep",
		ensure(cabundle.KindValidatingWebhookConfiguration, unkept), `cannot patch resource "validatingwebhookconfigurations"`)
	testenv.Denied(t, "the reconciler's token writes the conversion caBundle of a CRD it does not keep",
		ensure(cabundle.KindCustomResourceDefinition, unkeptCRD), `cannot patch resource "customresourcedefinitions"`)
	// It lists and watches every webhook configuration (one watch of the
	// kind, the price of a cheap kept object) but may read no other by
	// name, and write none: the API server denies every write of one it
	// does not keep, whatever the verb.
	if l, err := vwcs.List(ctx, metav1.ListOptions{}); err != nil || !slices.ContainsFunc(l.Items, func(o admissionregistrationv1.ValidatingWebhookConfiguration) bool { return o.Name == unkept }) {
		t.Errorf("the reconciler's token cannot list every webhook configuration (its one watch of the kind): %v", err)
	}
	_, err := vwcs.Get(ctx, unkept, metav1.GetOptions{})
	testenv.Denied(t, "the reconciler's token reads a configuration it does not keep by name", err, `cannot get resource "validatingwebhookconfigurations"`)
	testenv.Denied(t, "the reconciler's token redirects a configuration it does not keep", jsonPatch(unkept, redirect, metav1.PatchOptions{}),
		`cannot patch resource "validatingwebhookconfigurations"`)
	admin, err := core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, unkept, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin.Webhooks[0].ClientConfig.Service.Name = "evil"
	_, err = vwcs.Update(ctx, admin, metav1.UpdateOptions{})
	testenv.Denied(t, "the reconciler's token replaces a configuration it does not keep", err, `cannot update resource "validatingwebhookconfigurations"`)
	testenv.Denied(t, "the reconciler's token deletes a configuration it does not keep", vwcs.Delete(ctx, unkept, metav1.DeleteOptions{}),
		`cannot delete resource "validatingwebhookconfigurations"`)
	testenv.Denied(t, "the reconciler's token deletes a kept configuration", vwcs.Delete(ctx, kept, metav1.DeleteOptions{}),
		`cannot delete resource "validatingwebhookconfigurations"`)
	_, err = vwcs.Create(ctx, attackVWC("created-by-reconciler"), metav1.CreateOptions{})
	testenv.Denied(t, "the reconciler's token creates a webhook configuration", err, `cannot create resource "validatingwebhookconfigurations"`)
	testenv.Denied(t, "the reconciler's token writes a kept CRD's status", crdPatch(keptCRD, `{"status":{"storedVersions":["v1","v2"]}}`, "status"),
		`cannot patch resource "customresourcedefinitions/status"`)

	// Defense in depth: with RBAC widened to every verb on these kinds
	// and their subresources, the policies still hold.
	widen := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "wh-attack-widened"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{admissionregistrationv1.GroupName}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"*"}},
		{APIGroups: []string{apiextensionsv1.GroupName}, Resources: []string{"customresourcedefinitions", "customresourcedefinitions/status"}, Verbs: []string{"*"}},
	}}
	if _, err := core.RbacV1().ClusterRoles().Create(ctx, widen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "wh-attack-widened"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: widen.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.Namespace, Name: c.ServiceAccountName()}}}
	if _, err := core.RbacV1().ClusterRoleBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.RbacV1().ClusterRoleBindings().Delete(context.Background(), bind.Name, metav1.DeleteOptions{})
		_ = core.RbacV1().ClusterRoles().Delete(context.Background(), widen.Name, metav1.DeleteOptions{})
	})
	testenv.WaitForPolicy(t, hooksPolicy, func() error { return jsonPatch(unkept, redirect, dryRun) }) // the widened RBAC is in force
	testenv.Denied(t, "with widened RBAC, the reconciler's token redirects a configuration it does not keep", jsonPatch(unkept, redirect, metav1.PatchOptions{}),
		testenv.PolicyDenial(hooksPolicy), "may write only the webhook configurations it keeps")
	testenv.Denied(t, "with widened RBAC, the reconciler's token writes the caBundle of a configuration it does not keep",
		ensure(cabundle.KindValidatingWebhookConfiguration, unkept), testenv.PolicyDenial(hooksPolicy), "may write only the webhook configurations it keeps")
	testenv.Denied(t, "with widened RBAC, the reconciler's token deletes a kept configuration", vwcs.Delete(ctx, kept, metav1.DeleteOptions{}),
		testenv.PolicyDenial(hooksPolicy), "never create or delete one")
	_, err = vwcs.Create(ctx, attackVWC("created-by-reconciler"), metav1.CreateOptions{})
	testenv.Denied(t, "with widened RBAC, the reconciler's token creates a webhook configuration", err,
		testenv.PolicyDenial(hooksPolicy), "never create or delete one")
	testenv.Denied(t, "with widened RBAC, the reconciler's token redirects a kept webhook", jsonPatch(kept, redirect, metav1.PatchOptions{}),
		testenv.PolicyDenial(hooksPolicy), hookRule)
	testenv.Denied(t, "with widened RBAC, the reconciler's token writes a kept CRD's status", crdPatch(keptCRD, `{"status":{"storedVersions":["v1","v2"]}}`, "status"),
		testenv.PolicyDenial(crdPolicy), "may not write the status")
	testenv.Denied(t, "with widened RBAC, the reconciler's token rewrites a CRD it does not keep",
		crdPatch(unkeptCRD, `{"spec":{"conversion":{"webhook":{"clientConfig":{"service":{"name":"evil"}}}}}}`),
		testenv.PolicyDenial(crdPolicy), "may write only the CustomResourceDefinitions it keeps")
	testenv.Denied(t, "with widened RBAC, the reconciler's token deletes a kept CRD", crds.Delete(ctx, keptCRD, metav1.DeleteOptions{}),
		testenv.PolicyDenial(crdPolicy), "never create or delete one")
	if err := ensure(cabundle.KindValidatingWebhookConfiguration, kept, "a.attack.test"); err != nil {
		t.Errorf("with widened RBAC, the reconciler can no longer write the caBundle it keeps: %v", err)
	}
}

func b64(b []byte) string {
	return base64.StdEncoding.EncodeToString(b)
}

// attackVWC is a configuration with webhooks a and b.
func attackVWC(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	port := int32(443)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	o := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, n := range []string{"a.attack.test", "b.attack.test"} {
		o.Webhooks = append(o.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:         n,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "rec-wh-attack", Name: "hook", Port: &port}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"attack.test"}, APIVersions: []string{"v1"}, Resources: []string{"things"}}}},
			FailurePolicy: &fail, SideEffects: &none, MatchPolicy: &equivalent, AdmissionReviewVersions: []string{"v1"},
		})
	}
	return o
}

func createAttackVWC(t *testing.T, core kubernetes.Interface, name string) string {
	t.Helper()
	c := core.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := c.Create(context.Background(), attackVWC(name), metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func createAttackCRD(t *testing.T, ext apiextensionsclient.Interface, prefix string) string {
	t.Helper()
	group := prefix + ".attack.test"
	port := int32(443)
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: schema}, {Name: "v2", Served: true, Schema: schema}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "rec-wh-attack", Name: "convert", Port: &port}},
				ConversionReviewVersions: []string{"v1"},
			}},
		},
	}
	c := ext.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := c.Create(context.Background(), crd, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}) })
	return crd.Name
}

// TestWebhookPoliciesCoverEverySubresource asks the API server (discovery)
// for every subresource of the kinds whose caBundles the reconciler
// writes, and requires the admission policies to match each: a widened
// role must find no way around them.
func TestWebhookPoliciesCoverEverySubresource(t *testing.T) {
	c := Config{Namespace: "ns", Name: "rec"}
	matched := map[string][]string{}
	for _, p := range []install.Policy{WebhookConfigurationPolicy(c), CRDPolicy(c)} {
		matched[p.Group] = append(matched[p.Group], p.Resources...)
	}
	disc := env.Clientset().Discovery()
	for _, r := range webhookResources {
		gv := r.group + "/v1"
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		found := false
		for _, res := range list.APIResources {
			if res.Name != r.resource && !strings.HasPrefix(res.Name, r.resource+"/") {
				continue
			}
			found = found || res.Name == r.resource
			if !slices.Contains(matched[r.group], res.Name) {
				t.Errorf("the API server serves %s %s, which no reconciler admission policy matches", gv, res.Name)
			}
		}
		if !found {
			t.Errorf("discovery of %s has no %s", gv, r.resource)
		}
	}
}

// TestWebhookCABundlesReadBack: what Apply recorded is what Observe reads
// back (import and drift of kmshealth_reconciler.webhook_ca_bundles).
func TestWebhookCABundlesReadBack(t *testing.T) {
	createNamespace(t, env.Clientset(), "rec-wh-readback")
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "default", Name: "ca", Key: "ca.crt"}
	c := Config{Namespace: "rec-wh-readback", Name: "rec", Image: "x", Replicas: 1, WebhookCABundles: []cabundle.Kept{
		{Target: cabundle.Target{Kind: cabundle.KindCustomResourceDefinition, Name: "things.example.com"}, Source: src},
		{Target: cabundle.Target{Kind: cabundle.KindValidatingWebhookConfiguration, Name: "hooks", Webhooks: []string{"a.example.com", "b.example.com"}}, Source: src},
	}}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })
	if got := observe(t, c).Config().WebhookCABundles; !reflect.DeepEqual(got, c.WebhookCABundles) {
		t.Errorf("read back %+v, want %+v", got, c.WebhookCABundles)
	}
	// Webhook configurations: list and watch of every one (one watch of
	// the kind), get and patch of the kept ones; CRDs: every verb by name.
	role := BuildClusterRole(c)
	var got []string
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "validatingwebhookconfigurations") || slices.Contains(r.Resources, "customresourcedefinitions") && slices.Contains(r.ResourceNames, "things.example.com") {
			got = append(got, fmt.Sprintf("%s %v %v", r.Resources[0], r.Verbs, r.ResourceNames))
		}
	}
	want := []string{
		"validatingwebhookconfigurations [list watch] []",
		"validatingwebhookconfigurations [get patch] [hooks]",
		"customresourcedefinitions [get list watch patch] [things.example.com]",
	}
	if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("ClusterRole rules of the webhook kinds %q, want %q", got, want)
	}
}
