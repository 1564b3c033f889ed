package reporterinstall

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// env is the package's one control plane: real etcd and kube-apiserver.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, func(e *testenv.Env) { env = e })
}

func clients(t *testing.T) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return env.Clientset(), dyn
}

func installClients(t *testing.T) install.Clients {
	core, dyn := clients(t)
	return install.Clients{Core: core, Dynamic: dyn}
}

func createNamespace(t *testing.T, core kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	_, err := core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func observe(t *testing.T, c Config) *Live {
	t.Helper()
	l, err := Observe(context.Background(), installClients(t), c.Namespace, c.Name, c.Target)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func drift(t *testing.T, c Config) []string {
	t.Helper()
	return observe(t, c).Drift(c)
}

func mustApply(t *testing.T, c Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Apply(ctx, installClients(t), c); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); len(d) != 0 {
		t.Fatalf("drift right after Apply: %v", d)
	}
}

func mustDelete(t *testing.T, c Config, installCRD bool) Deleted {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Delete(ctx, installClients(t), c.Namespace, c.Name, c.Target, installCRD)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkNothingLeft fails when any object of the installation is left.
func checkNothingLeft(t *testing.T, c Config) {
	t.Helper()
	if l := observe(t, c); l.Exists() {
		t.Errorf("left behind: %v", l.Drift(c))
	}
}

// writeCondition writes a condition on the target as fieldManager, the way
// a reporter does (server-side apply of one list entry of the status).
func writeCondition(t *testing.T, dyn dynamic.Interface, target kmshealth.Target, kind, typ, fieldManager string) {
	t.Helper()
	c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: kmshealth.ReasonAsExpected, Message: "[]", LastTransitionTime: metav1.Now()}
	if err := kmshealth.ApplyCondition(context.Background(), dyn, target, kind, c, fieldManager); err != nil {
		t.Fatal(err)
	}
}

func conditionTypes(t *testing.T, dyn dynamic.Interface, target kmshealth.Target) []string {
	t.Helper()
	obj, err := kmshealth.GetTarget(context.Background(), dyn, target)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range kmshealth.Conditions(obj) {
		out = append(out, c.Type)
	}
	slices.Sort(out)
	return out
}

// createTargetCRD serves group/v1 <plural> (Kind kind), cluster-scoped with
// the KMSHealth status schema, like an operator's CR would, creates the
// object name and removes both when the test ends.
func createTargetCRD(t *testing.T, dyn dynamic.Interface, group, kind, plural, name string) kmshealth.Target {
	t.Helper()
	ctx := context.Background()
	crd := kmshealth.CRD()
	crd.SetName(plural + "." + group)
	crd.SetLabels(nil)
	genericConditions(t, crd)
	must(t, unstructured.SetNestedField(crd.Object, group, "spec", "group"))
	must(t, unstructured.SetNestedStringMap(crd.Object, map[string]string{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)}, "spec", "names"))
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	versions[0].(map[string]any)["name"] = "v1"
	must(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	crds := dyn.Resource(kmshealth.CRDGVR)
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := crds.Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete CRD %s: %v", crd.GetName(), err)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := kube.WaitFor(wctx, crds, crd.GetName(), kmshealth.Established); err != nil {
		t.Fatal(err)
	}
	target := kmshealth.Target{Group: group, Version: "v1", Resource: plural, Name: name}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(group + "/v1")
	obj.SetKind(kind)
	obj.SetName(name)
	if _, err := dyn.Resource(target.GVR()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return target
}

// genericConditions loosens a copy of the KMSHealth CRD's conditions to
// what an operator's CR allows: any condition type and reason.
func genericConditions(t *testing.T, crd *unstructured.Unstructured) {
	t.Helper()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	conds, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "status", "properties", "conditions")
	items := conds["items"].(map[string]any)
	delete(items, "x-kubernetes-validations")
	props := items["properties"].(map[string]any)
	props["type"] = map[string]any{"type": "string", "maxLength": int64(316)}
	props["reason"] = map[string]any{"type": "string", "minLength": int64(1), "maxLength": int64(1024)}
	must(t, unstructured.SetNestedMap(v, conds, "schema", "openAPIV3Schema", "properties", "status", "properties", "conditions"))
	versions[0] = v
	must(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestApplyObserveDelete(t *testing.T) {
	ctx := context.Background()
	core, dyn := clients(t)
	createNamespace(t, core, "rep-apply", nil)
	c := DefaultConfig("rep-apply", "test")
	mustApply(t, c)
	l := observe(t, c)
	if !l.CRDInstalled() || !l.ObjectCreated() {
		t.Fatalf("CRD installed %v, object created %v", l.CRDInstalled(), l.ObjectCreated())
	}
	if ok, err := kmshealth.Established(l.CRD()); !ok || err != nil {
		t.Errorf("CRD not established after Apply (err=%v)", err)
	}
	got, ok := l.Config()
	if !ok || !slices.Equal(got.Args(), c.Args()) || got.Image != c.Image || !got.InstallCRD || got.CPURequest != "10m" || got.RunAsUser != 0 {
		t.Errorf("observed %+v (ok=%v)", got, ok)
	}
	// A second Apply is a no-op that keeps the CRD established.
	mustApply(t, c)

	// Reporters and someone else write conditions on the object.
	target := kmshealth.DefaultTarget()
	writeCondition(t, dyn, target, kmshealth.Kind, kmshealth.ReporterConditionType("cp-1"), kmshealth.ReporterFieldManager("cp-1"))
	writeCondition(t, dyn, target, kmshealth.Kind, kmshealth.ReporterConditionType("cp-2"), "someone")
	if got := conditionTypes(t, dyn, target); !slices.Equal(got, []string{"KMSHealthReporter_cp-1", "KMSHealthReporter_cp-2"}) {
		t.Errorf("conditions %v", got)
	}
	mustApply(t, c) // the installation's own apply keeps the status alone
	if got := conditionTypes(t, dyn, target); len(got) != 2 {
		t.Errorf("conditions after Apply %v", got)
	}

	// kubectl edit of the DaemonSet's arguments is drift.
	ds, err := core.AppsV1().DaemonSets(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	must(t, err)
	ds.Spec.Template.Spec.Containers[0].Args = append(ds.Spec.Template.Spec.Containers[0].Args[:1], "--interval=5m")
	_, err = core.AppsV1().DaemonSets(c.Namespace).Update(ctx, ds, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	if d := drift(t, c); !slices.Equal(d, []string{"DaemonSet rep-apply/kmshealth-reporter was changed"}) {
		t.Errorf("drift after edit: %v", d)
	}
	// A deleted ClusterRoleBinding and a changed CRD are drift too.
	must(t, core.RbacV1().ClusterRoleBindings().Delete(ctx, c.ClusterRoleName(), metav1.DeleteOptions{}))
	patch := []byte(`[{"op":"replace","path":"/spec/versions/0/additionalPrinterColumns/0/name","value":"Broken"}]`)
	_, err = dyn.Resource(kmshealth.CRDGVR).Patch(ctx, kmshealth.CRDName, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-patch"})
	must(t, err)
	d := drift(t, c)
	for _, want := range []string{"ClusterRoleBinding kmshealth-reporter:rep-apply:kmshealth-reporter is missing", "CustomResourceDefinition kmshealths.kmshealth.io was changed"} {
		if !slices.Contains(d, want) {
			t.Errorf("drift %v lacks %q", d, want)
		}
	}
	mustApply(t, c)
	// A deleted target object is recreated.
	must(t, dyn.Resource(target.GVR()).Delete(ctx, target.Name, metav1.DeleteOptions{}))
	if d := drift(t, c); !slices.Equal(d, []string{"kmshealths.kmshealth.io cluster is missing"}) {
		t.Errorf("drift after the object was deleted: %v", d)
	}
	mustApply(t, c)

	del := mustDelete(t, c, true)
	if len(del.Kept) != 0 {
		t.Errorf("kept %v", del.Kept)
	}
	checkNothingLeft(t, c)
	if _, err := dyn.Resource(kmshealth.CRDGVR).Get(ctx, kmshealth.CRDName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("CRD still there after Delete returned (err=%v)", err)
	}
	if ns, err := core.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("the namespace was deleted (err=%v)", err)
	}
}

// TestCustomTarget reports to an operator-style object without the CRD:
// Delete removes only kmshealth's conditions and keeps the object.
func TestCustomTarget(t *testing.T) {
	core, dyn := clients(t)
	createNamespace(t, core, "rep-custom", nil)
	target := createTargetCRD(t, dyn, "ops.example.com", "KubeAPIServer", "kubeapiservers", "cluster")
	c := DefaultConfig("rep-custom", "test")
	c.Target, c.InstallCRD = target, false
	c.SocketDir, c.Sockets = "", []string{"unix:///var/run/kmsplugin/kms-1.sock"}
	mustApply(t, c)
	l := observe(t, c)
	if l.CRD() != nil {
		t.Error("install_crd = false installed the KMSHealth CRD")
	}
	if l.Object() == nil || l.ObjectCreated() {
		t.Errorf("target object %v: want the user's, untouched", l.Object())
	}
	for _, node := range []string{"cp-1", "cp-2"} {
		writeCondition(t, dyn, target, "KubeAPIServer", kmshealth.ReporterConditionType(node), kmshealth.ReporterFieldManager(node))
	}
	writeCondition(t, dyn, target, "KubeAPIServer", kmshealth.DegradedCondition, kmshealth.AggregatorFieldManager)
	writeCondition(t, dyn, target, "KubeAPIServer", "Available", "operator")

	del := mustDelete(t, c, false)
	slices.Sort(del.Conditions)
	if !slices.Equal(del.Conditions, []string{"KMSHealthReporter_cp-1", "KMSHealthReporter_cp-2", "KMSPluginsDegraded"}) {
		t.Errorf("removed %v", del.Conditions)
	}
	if got := conditionTypes(t, dyn, target); !slices.Equal(got, []string{"Available"}) {
		t.Errorf("conditions left %v, want only the operator's", got)
	}
	checkNothingLeft(t, c)
}

func TestApplyRefuses(t *testing.T) {
	ctx := context.Background()
	core, dyn := clients(t)

	// A namespace that forbids hostPath volumes.
	createNamespace(t, core, "rep-restricted", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	c := DefaultConfig("rep-restricted", "test")
	err := Apply(ctx, installClients(t), c)
	if !errors.Is(err, install.ErrRefused) || !strings.Contains(err.Error(), `namespace "rep-restricted" enforces the "baseline" Pod Security Standard`) {
		t.Errorf("Apply into a baseline namespace: %v", err)
	}
	if err := Apply(ctx, installClients(t), DefaultConfig("rep-missing", "test")); !errors.Is(err, install.ErrRefused) || !strings.Contains(err.Error(), `namespace "rep-missing" not found`) {
		t.Errorf("Apply into a missing namespace: %v", err)
	}

	// A ServiceAccount and a CRD of someone else.
	createNamespace(t, core, "rep-foreign", nil)
	_, err = core.CoreV1().ServiceAccounts("rep-foreign").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName}}, metav1.CreateOptions{})
	must(t, err)
	crds := dyn.Resource(kmshealth.CRDGVR)
	_, err = crds.Apply(ctx, kmshealth.CRDName, kmshealth.CRD(), metav1.ApplyOptions{FieldManager: "kubectl"})
	must(t, err)
	t.Cleanup(func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := crds.Delete(wctx, kmshealth.CRDName, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		if err := kube.WaitGone(wctx, crds, kmshealth.CRDName); err != nil {
			t.Error(err)
		}
	})
	c = DefaultConfig("rep-foreign", "test")
	err = Apply(ctx, installClients(t), c)
	if !errors.Is(err, install.ErrForeignObject) || !strings.Contains(err.Error(), "ServiceAccount rep-foreign/kmshealth-reporter exists and was not created by this installation") ||
		!strings.Contains(err.Error(), "CustomResourceDefinition kmshealths.kmshealth.io exists and was not created by this installation") ||
		!strings.Contains(err.Error(), "set install_crd = false to report to it as it is") {
		t.Fatalf("Apply over foreign objects: %v", err)
	}
	if l := observe(t, c); l.Installed() || l.Exists() {
		t.Error("a refused Apply wrote objects")
	}
	if _, err := Delete(ctx, installClients(t), c.Namespace, c.Name, c.Target, true); err != nil {
		t.Fatal(err)
	}
	if _, err := core.CoreV1().ServiceAccounts("rep-foreign").Get(ctx, DefaultName, metav1.GetOptions{}); err != nil {
		t.Errorf("Delete removed a ServiceAccount that is not kmshealth's: %v", err)
	}
	if crd, err := crds.Get(ctx, kmshealth.CRDName, metav1.GetOptions{}); err != nil || crd.GetDeletionTimestamp() != nil {
		t.Errorf("Delete removed a CRD kmshealth did not install (err=%v)", err)
	}

	// With install_crd = false the existing CRD is used as it is; the
	// object name is someone else's business.
	c.Name = "other"
	c.InstallCRD = false
	mustApply(t, c)
	mustDelete(t, c, false)
	checkNothingLeft(t, c)
}

// TestInstallCRDHandOver: turning install_crd off hands the CRD and the
// object over, so Delete keeps them; a CRD holding someone else's objects
// is kept too.
func TestInstallCRDHandOver(t *testing.T) {
	ctx := context.Background()
	core, dyn := clients(t)
	createNamespace(t, core, "rep-handover", nil)
	crds := dyn.Resource(kmshealth.CRDGVR)
	objects := dyn.Resource(kmshealth.DefaultTarget().GVR())
	t.Cleanup(func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = crds.Delete(wctx, kmshealth.CRDName, metav1.DeleteOptions{})
		if err := kube.WaitGone(wctx, crds, kmshealth.CRDName); err != nil {
			t.Error(err)
		}
	})
	c := DefaultConfig("rep-handover", "test")
	mustApply(t, c)
	c.InstallCRD = false
	mustApply(t, c)
	l := observe(t, c)
	if l.CRD() == nil || l.CRDInstalled() || l.Object() == nil || l.ObjectCreated() {
		t.Fatalf("after install_crd = false: CRD %v (ours %v), object %v (ours %v)", l.CRD() != nil, l.CRDInstalled(), l.Object() != nil, l.ObjectCreated())
	}
	if l.CRD().GetLabels()["app.kubernetes.io/managed-by"] != "kmshealth" {
		t.Errorf("released CRD lost the labels of crd.yaml: %v", l.CRD().GetLabels())
	}
	mustDelete(t, c, true)
	if _, err := crds.Get(ctx, kmshealth.CRDName, metav1.GetOptions{}); err != nil {
		t.Errorf("a handed-over CRD was deleted: %v", err)
	}
	if _, err := objects.Get(ctx, "cluster", metav1.GetOptions{}); err != nil {
		t.Errorf("a handed-over object was deleted: %v", err)
	}
	must(t, crds.Delete(ctx, kmshealth.CRDName, metav1.DeleteOptions{}))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, kube.WaitGone(wctx, crds, kmshealth.CRDName))

	// Someone creates another KMSHealth object: the CRD outlives Delete.
	c.InstallCRD = true
	mustApply(t, c)
	staging := BuildObject(c)
	staging.SetName("staging")
	staging.SetLabels(nil)
	_, err := objects.Create(ctx, staging, metav1.CreateOptions{})
	must(t, err)
	del := mustDelete(t, c, true)
	if len(del.Kept) != 1 || !strings.Contains(del.Kept[0], "would delete the KMSHealth objects staging") {
		t.Errorf("kept %v", del.Kept)
	}
	if _, err := objects.Get(ctx, "staging", metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's KMSHealth object was deleted: %v", err)
	}
	if _, err := objects.Get(ctx, "cluster", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the installation's own object is still there (err=%v)", err)
	}
}
