package reconcilerinstall

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// TestReconcilerAttacks tries, with the reconciler's real token (bound to
// a pod on a node, as the kubelet requests it), what a compromised
// reconciler could, and requires the API server to deny each — through
// RBAC (which objects) or the admission policies installed beside it
// (which fields). The legitimate writes still go through.
func TestReconcilerAttacks(t *testing.T) {
	// Serial: it installs the cluster-scoped KMSHealth CRD through the
	// installer, as TestPoliciesMatchEverySubresource does.
	ctx := context.Background()
	core := env.Clientset()
	agg := aggregator.NewForConfigOrDie(env.RESTConfig())
	admin := clients()
	for _, ns := range []string{"rec-attack", "rec-attack-src"} {
		createNamespace(t, core, ns)
	}
	ca := testpki.MustCertPEM("attack CA", testpki.Options{})
	for _, name := range []string{"api-ca", "other"} {
		if _, err := core.CoreV1().Secrets("rec-attack-src").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"ca.crt": ca}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	managed, unmanaged := createAPIService(t, agg, "managed"), createAPIService(t, agg, "unmanaged")
	src := cabundle.Source{Kind: cabundle.KindSecret, Namespace: "rec-attack-src", Name: "api-ca", Key: "ca.crt"}
	c := Config{Namespace: "rec-attack", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true,
		CABundles: map[string]cabundle.Source{managed.Name: src}}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })

	// The KMS target, as the reporter installs it.
	target := reporterinstall.DefaultConfig("kube-system", "attack")
	if err := reporterinstall.InstallCRD(ctx, admin, target); err != nil {
		t.Fatal(err)
	}
	if err := reporterinstall.CreateTarget(ctx, admin, target); err != nil {
		t.Fatal(err)
	}

	cfg := asReconciler(t, c)
	asCore := kubernetes.NewForConfigOrDie(cfg)
	asAgg := aggregator.NewForConfigOrDie(cfg).ApiregistrationV1()
	asDyn := dynamic.NewForConfigOrDie(cfg)
	apiservices := c.PolicyName("apiservices")
	redirectOpts := func(name string, opts metav1.PatchOptions) error {
		patch := []byte(`{"spec":{"service":{"namespace":"rec-attack","name":"evil","port":443}}}`)
		_, err := asAgg.APIServices().Patch(ctx, name, types.MergePatchType, patch, opts)
		return err
	}
	redirect := func(name string) error { return redirectOpts(name, metav1.PatchOptions{}) }
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	// Probed by dry run: a probe that went through before the policy took
	// effect must not change what the test checks.
	testenv.WaitForPolicy(t, apiservices, func() error { return redirectOpts(managed.Name, dryRun) })

	// The legitimate write: the caBundle of the managed APIService, as the
	// reconciler applies it.
	live, err := agg.ApiregistrationV1().APIServices().Get(ctx, managed.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cabundle.Apply(ctx, asAgg, cabundle.DesiredFor(live, ca, src), cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager, Force: true}); err != nil {
		t.Fatalf("the reconciler cannot write the caBundle it keeps: %v", err)
	}

	testenv.Denied(t, "the reconciler's token points a managed APIService at another Service", redirect(managed.Name),
		testenv.PolicyDenial(apiservices), "may not change spec.service")
	bundle := func(name string) error {
		l, err := agg.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cabundle.Apply(ctx, asAgg, cabundle.DesiredFor(l, ca, src), cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager, Force: true})
		return err
	}
	testenv.Denied(t, "the reconciler's token writes the caBundle of an APIService it does not keep", bundle(unmanaged.Name),
		`cannot patch resource "apiservices"`)
	testenv.Denied(t, "the reconciler's token writes the caBundle of the local APIService v1.", bundle("v1."),
		`cannot patch resource "apiservices"`)
	// It lists and watches every APIService (one watch of the kind, the
	// price of a cheap kept APIService) but may read no other by name, and
	// write none: the API server denies every write of one it does not
	// keep, whatever the verb.
	if l, err := asAgg.APIServices().List(ctx, metav1.ListOptions{}); err != nil || !slices.ContainsFunc(l.Items, func(s apiregv1.APIService) bool { return s.Name == unmanaged.Name }) {
		t.Errorf("the reconciler's token cannot list every APIService (its one watch of the kind): %v", err)
	}
	_, err = asAgg.APIServices().Get(ctx, unmanaged.Name, metav1.GetOptions{})
	testenv.Denied(t, "the reconciler's token reads an APIService it does not keep by name", err, `cannot get resource "apiservices"`)
	testenv.Denied(t, "the reconciler's token points an APIService it does not keep at another Service", redirect(unmanaged.Name),
		`cannot patch resource "apiservices"`)
	replaced, err := agg.ApiregistrationV1().APIServices().Get(ctx, unmanaged.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replaced.Spec.Service.Name = "evil"
	_, err = asAgg.APIServices().Update(ctx, replaced, metav1.UpdateOptions{})
	testenv.Denied(t, "the reconciler's token replaces an APIService it does not keep", err, `cannot update resource "apiservices"`)
	testenv.Denied(t, "the reconciler's token deletes an APIService it does not keep", asAgg.APIServices().Delete(ctx, unmanaged.Name, metav1.DeleteOptions{}),
		`cannot delete resource "apiservices"`)
	_, err = asCore.CoreV1().Secrets("rec-attack-src").Get(ctx, "other", metav1.GetOptions{})
	testenv.Denied(t, "the reconciler's token reads a Secret it was not given", err, `cannot get resource "secrets"`)
	_, err = asCore.EventsV1().Events("kube-system").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "x-"}, EventTime: metav1.NowMicro(), Reason: "Forged", Action: "Forge",
		ReportingController: "kmshealth-reconciler", ReportingInstance: "x", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Namespace", Name: "kube-system", APIVersion: "v1"},
	}, metav1.CreateOptions{})
	testenv.Denied(t, "the reconciler's token creates an Event in kube-system", err, `cannot create resource "events"`)

	// Reports cannot be forged; the rollup can be written.
	kms := c.PolicyName("kms-status")
	forged := kmshealth.ConditionBuilder{Node: "node-x"}
	forgedCond := func() metav1.Condition {
		return forged.Build([]kmshealth.Plugin{{KeyID: "1", KEKID: "forged", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}, time.Now())
	}
	forge := func() error {
		return kmshealth.ApplyCondition(ctx, asDyn, target.Target, kmshealth.Kind, forgedCond(), kmshealth.ReporterFieldManager("node-x"))
	}
	testenv.WaitForPolicy(t, kms, func() error {
		return kmshealth.DryRunCondition(ctx, asDyn, target.Target, kmshealth.Kind, forgedCond(), kmshealth.ReporterFieldManager("node-x"))
	})
	testenv.Denied(t, "the reconciler's token writes a reporter's condition", forge(), testenv.PolicyDenial(kms), "never add or change a report")
	rollup := metav1.Condition{Type: kmshealth.DegradedCondition, Status: metav1.ConditionTrue, Reason: kmshealth.ReasonMissing, Message: "x", LastTransitionTime: metav1.Now()}
	if err := kmshealth.ApplyCondition(ctx, asDyn, target.Target, kmshealth.Kind, rollup, kmshealth.AggregatorFieldManager); err != nil {
		t.Errorf("the reconciler cannot write %s: %v", kmshealth.DegradedCondition, err)
	}

	// Defense in depth: were its RBAC widened (a kubectl edit of the
	// ClusterRole), the policy still keeps the reconciler off the local
	// APIService v1. and off every field but the caBundle.
	widen := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "attack-widened"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{apiregv1.GroupName}, Resources: []string{"apiservices"}, Verbs: []string{"get", "patch"}},
			// Issue 21: what a wider role reaches besides — /status, and
			// the KMS target itself rather than its /status.
			{APIGroups: []string{apiregv1.GroupName}, Resources: []string{"apiservices/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{target.Target.Group}, Resources: []string{target.Target.Resource}, Verbs: []string{"patch", "delete"}},
		}}
	if _, err := core.RbacV1().ClusterRoles().Create(ctx, widen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "attack-widened"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: widen.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.Namespace, Name: c.ServiceAccountName()}}}
	if _, err := core.RbacV1().ClusterRoleBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.RbacV1().ClusterRoleBindings().Delete(context.Background(), bind.Name, metav1.DeleteOptions{})
		_ = core.RbacV1().ClusterRoles().Delete(context.Background(), widen.Name, metav1.DeleteOptions{})
	})
	// The local APIService v1. serves the core API from kube-apiserver
	// itself; with spec.service set, the aggregator would forward core
	// traffic to that Service.
	testenv.WaitForPolicy(t, apiservices, func() error { return redirectOpts("v1.", dryRun) }) // the widened RBAC is in force
	testenv.Denied(t, "with widened RBAC, the reconciler's token points the local APIService v1. at a Service", redirect("v1."),
		testenv.PolicyDenial(apiservices), "only on APIServices with spec.service")
	testenv.Denied(t, "with widened RBAC, the reconciler's token redirects an unmanaged APIService", redirect(unmanaged.Name),
		testenv.PolicyDenial(apiservices), "may not change spec.service")
	testenv.Denied(t, "with widened RBAC, the reconciler's token writes the caBundle of an APIService it does not keep", bundle(unmanaged.Name),
		testenv.PolicyDenial(apiservices), "may write only the APIServices it keeps")
	if err := bundle(managed.Name); err != nil {
		t.Errorf("with widened RBAC, the reconciler can no longer write the caBundle it keeps: %v", err)
	}
	_, err = asAgg.APIServices().Patch(ctx, managed.Name, types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"Available","status":"True","reason":"Forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`), metav1.PatchOptions{}, "status")
	testenv.Denied(t, "with widened RBAC, the reconciler's token forges a managed APIService's /status", err,
		testenv.PolicyDenial(apiservices), "may not write an APIService through a subresource")
	kmsTarget := asDyn.Resource(target.Target.GVR())
	_, err = kmsTarget.Patch(ctx, target.Target.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"forged":"yes"}}}`), metav1.PatchOptions{})
	testenv.Denied(t, "with widened RBAC, the reconciler's token changes the KMS target itself", err,
		testenv.PolicyDenial(kms), "may only update the status of the KMS target")
	testenv.Denied(t, "with widened RBAC, the reconciler's token deletes the KMS target",
		kmsTarget.Delete(ctx, target.Target.Name, metav1.DeleteOptions{}), testenv.PolicyDenial(kms), "may only update the status of the KMS target")
}

// asReconciler is a client configuration with the reconciler's real token,
// bound to a pod on a Node made for the test, as the kubelet requests it.
func asReconciler(t *testing.T, c Config) *rest.Config {
	t.Helper()
	nodes := env.Clientset().CoreV1().Nodes()
	node := "node-" + c.Namespace
	if _, err := nodes.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes.Delete(context.Background(), node, metav1.DeleteOptions{}) })
	return testenv.AsToken(env.RESTConfig(), testenv.PodToken(t, env.Clientset(), c.Namespace, c.ServiceAccountName(), node))
}

// createAPIService creates an aggregated APIService (with spec.service)
// and deletes it when the test ends.
func createAPIService(t *testing.T, agg aggregator.Interface, name string) *apiregv1.APIService {
	t.Helper()
	port := int32(443)
	group := name + ".attack.example.com"
	svc, err := agg.ApiregistrationV1().APIServices().Create(context.Background(), &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + group},
		Spec: apiregv1.APIServiceSpec{Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "rec-attack", Name: name, Port: &port}},
	}, metav1.CreateOptions{FieldManager: "installer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agg.ApiregistrationV1().APIServices().Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
	})
	return svc
}
