package reconcilerinstall

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// env is the package's one control plane: real etcd and kube-apiserver.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, func(e *testenv.Env) { env = e })
}

func createNamespace(t *testing.T, core kubernetes.Interface, name string) {
	t.Helper()
	_, err := core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// clients are the installer's clients on the package's control plane.
func clients() install.Clients {
	return install.Clients{Core: env.Clientset(), Dynamic: dynamic.NewForConfigOrDie(env.RESTConfig())}
}

func observe(t *testing.T, c Config) *Live {
	t.Helper()
	l, err := Observe(context.Background(), clients(), c.Namespace, c.Name)
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
	if err := Apply(context.Background(), clients(), c); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); len(d) != 0 {
		t.Fatalf("drift right after Apply: %v", d)
	}
}

// checkNothingLeft fails when any object of the installation is left.
func checkNothingLeft(t *testing.T, c Config) {
	t.Helper()
	if l := observe(t, c); l.Exists() {
		t.Errorf("left behind: %v", l.Drift(Config{Namespace: c.Namespace, Name: c.Name, Image: "x", Replicas: 1}))
	}
}

func TestApplyObserveDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	for _, ns := range []string{"ri-apply", "ri-src-a", "ri-src-b"} {
		createNamespace(t, core, ns)
	}
	c := Config{
		Namespace: "ri-apply", Name: "rec", Image: install.DefaultImage("test"), Replicas: 2,
		CABundles: map[string]cabundle.Source{
			"v1.a.example.com": {Kind: cabundle.KindSecret, Namespace: "ri-src-a", Name: "ca", Key: "ca.crt"},
			"v1.b.example.com": {Kind: cabundle.KindConfigMap, Namespace: "ri-src-b", Name: "bundle", Key: "pem"},
		},
		Resources: install.Resources{CPURequest: "0.01", MemoryRequest: DefaultMemoryRequest, MemoryLimit: DefaultMemoryLimit},
	}
	mustApply(t, c)
	l := observe(t, c)
	got := l.Config()
	if !maps.Equal(got.CABundles, c.CABundles) || got.Replicas != 2 || got.Image != c.Image || got.CPURequest != "10m" || got.CreateNamespace {
		t.Errorf("observed %+v", got)
	}

	// kubectl scale: the Deployment drifts, and Config reports the live count.
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "rec", Namespace: "ri-apply"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := core.AppsV1().Deployments("ri-apply").UpdateScale(ctx, "rec", scale, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); !slices.Contains(d, "Deployment ri-apply/rec was changed") {
		t.Errorf("drift after scale: %v", d)
	}
	if r := observe(t, c).Config().Replicas; r != 5 {
		t.Errorf("observed replicas %d after scale, want 5", r)
	}
	mustApply(t, c)

	// kubectl edit of the ClusterRole: widening it is drift too.
	crs := core.RbacV1().ClusterRoles()
	cr, err := crs.Get(ctx, c.ClusterRoleName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr.Rules[0].Verbs = append(cr.Rules[0].Verbs, "delete")
	if _, err := crs.Update(ctx, cr, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); !slices.Contains(d, "ClusterRole "+c.ClusterRoleName()+" was changed") {
		t.Errorf("drift after edit: %v", d)
	}
	mustApply(t, c)
	if cr, _ := crs.Get(ctx, c.ClusterRoleName(), metav1.GetOptions{}); slices.Contains(cr.Rules[0].Verbs, "delete") {
		t.Errorf("Apply kept the widened rule: %v", cr.Rules[0].Verbs)
	}

	// A deleted Service is drift.
	if err := core.CoreV1().Services("ri-apply").Delete(ctx, "rec-metrics", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); !slices.Equal(d, []string{"Service ri-apply/rec-metrics is missing"}) {
		t.Errorf("drift after delete: %v", d)
	}
	mustApply(t, c)

	// Fewer sources and one replica: the Role in ri-src-b and the PDB go.
	delete(c.CABundles, "v1.b.example.com")
	c.Replicas = 1
	mustApply(t, c)
	if _, err := core.RbacV1().Roles("ri-src-b").Get(ctx, c.SourcesRoleName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Role in a namespace no longer named is still there (err=%v)", err)
	}
	if _, err := core.RbacV1().RoleBindings("ri-src-b").Get(ctx, c.SourcesRoleName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding in a namespace no longer named is still there (err=%v)", err)
	}
	if _, err := core.PolicyV1().PodDisruptionBudgets("ri-apply").Get(ctx, "rec", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PodDisruptionBudget kept with one replica (err=%v)", err)
	}

	if err := Delete(ctx, clients(), c.Namespace, c.Name, true); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, c)
	ns, err := core.CoreV1().Namespaces().Get(ctx, "ri-apply", metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("a namespace kmshealth did not create was deleted (err=%v)", err)
	}
}

func TestApplyRefusesForeignObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	createNamespace(t, core, "ri-foreign")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rec", Namespace: "ri-foreign"}}
	if _, err := core.CoreV1().ServiceAccounts("ri-foreign").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := Config{Namespace: "ri-foreign", Name: "rec", Image: "x", Replicas: 1}
	err := Apply(ctx, clients(), c)
	var foreign *install.ForeignError
	if !errors.As(err, &foreign) || foreign.ID.String() != "ServiceAccount ri-foreign/rec" || !errors.Is(err, install.ErrRefused) {
		t.Fatalf("Apply over a foreign ServiceAccount: %v", err)
	}
	if l := observe(t, c); l.Exists() {
		t.Error("a refused Apply wrote objects")
	}
	if err := Delete(ctx, clients(), c.Namespace, c.Name, false); err != nil {
		t.Fatal(err)
	}
	if _, err := core.CoreV1().ServiceAccounts("ri-foreign").Get(ctx, "rec", metav1.GetOptions{}); err != nil {
		t.Errorf("Delete removed a ServiceAccount that is not kmshealth's: %v", err)
	}

	// create_namespace over an existing namespace is refused too.
	c.Name, c.CreateNamespace = "other", true
	if err := Apply(ctx, clients(), c); !errors.Is(err, install.ErrForeignObject) || !strings.Contains(err.Error(), "create_namespace = false") {
		t.Errorf("create_namespace over an existing namespace: %v", err)
	}
	// A source namespace that does not exist fails before any write.
	c.CreateNamespace = false
	c.CABundles = map[string]cabundle.Source{"v1.x.example.com": {Kind: cabundle.KindSecret, Namespace: "ri-missing", Name: "x", Key: "k"}}
	if err := Apply(ctx, clients(), c); !errors.Is(err, install.ErrRefused) || !strings.Contains(err.Error(), `namespace "ri-missing" not found: it would hold Role ri-missing/kmshealth-reconciler-other-sources`) {
		t.Errorf("missing source namespace: %v", err)
	}
	checkNothingLeft(t, c)
}

func TestCreateNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	c := Config{Namespace: "ri-created", Name: "rec", Image: "x", Replicas: 1, CreateNamespace: true}
	mustApply(t, c)
	if !observe(t, c).NamespaceCreated() {
		t.Fatal("namespace not marked as created by kmshealth")
	}
	// create_namespace turned off: the namespace is handed over, so the
	// Delete that follows keeps it.
	c.CreateNamespace = false
	mustApply(t, c)
	ns, _ := core.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{})
	if _, ok := ns.Labels[install.InstanceLabel]; ok {
		t.Errorf("labels kept after create_namespace = false: %v", ns.Labels)
	}
	if err := Delete(ctx, clients(), c.Namespace, c.Name, true); err != nil {
		t.Fatal(err)
	}
	if ns, err := core.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("released namespace deleted (err=%v)", err)
	}

	c = Config{Namespace: "ri-created-2", Name: "rec", Image: "x", Replicas: 1, CreateNamespace: true}
	mustApply(t, c)
	if err := Delete(ctx, clients(), c.Namespace, c.Name, true); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, c)
	// There is no namespace controller here: the namespace stays Terminating.
	ns, err := core.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Error("namespace kmshealth created was not deleted")
	}
}

func TestWaitForRollout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	createNamespace(t, core, "ri-rollout")
	c := Config{Namespace: "ri-rollout", Name: "rec", Image: "x", Replicas: 2}
	mustApply(t, c)

	// No kubelet, no controller: the rollout never finishes.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err := WaitForRollout(short, clients(), c.Namespace, c.Name, nil)
	if err == nil || !strings.Contains(err.Error(), "did not roll out in time (observed generation 0 of 1, 0 of 2 replicas updated") {
		t.Fatalf("WaitForRollout without a controller: %v", err)
	}

	// Play the Deployment controller once, after the wait has seen the
	// Deployment (its first progress report).
	done := make(chan error, 1)
	seen := make(chan string, 10)
	go func() { done <- WaitForRollout(ctx, clients(), c.Namespace, c.Name, func(p string) { seen <- p }) }()
	select {
	case p := <-seen:
		t.Logf("waiting: %s", p)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForRollout reported no progress")
	}
	d, err := core.AppsV1().Deployments(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas, d.Status.ReadyReplicas = 2, 2, 2, 2
	if _, err := core.AppsV1().Deployments(c.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForRollout did not return after the status was rolled out")
	}
	if err := Delete(ctx, clients(), c.Namespace, c.Name, false); err != nil {
		t.Fatal(err)
	}
}

// TestTLSProfiles: the profiles round-trip through the record, each
// namespace of a profile or a target gets a Role naming exactly its
// objects, and a namespace no longer named loses its Role.
func TestTLSProfiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	for _, ns := range []string{"ri-tls", "ri-tls-a", "ri-tls-b"} {
		createNamespace(t, core, ns)
	}
	a := TLSProfile{Namespace: "ri-tls-a", Name: "profile", Targets: []tlsprofile.Target{
		{Kind: "Deployment", Namespace: "ri-tls-a", Name: "web"}, {Kind: "DaemonSet", Namespace: "ri-tls-b", Name: "agent"}}}
	b := TLSProfile{Namespace: "ri-tls-b", Name: "edge.profile"}
	c := Config{Namespace: "ri-tls", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true, TLSProfiles: []TLSProfile{b, a}}
	mustApply(t, c)
	got := observe(t, c).Config()
	if want := []TLSProfile{a, {Namespace: b.Namespace, Name: b.Name, Targets: []tlsprofile.Target{}}}; !reflect.DeepEqual(got.TLSProfiles, want) {
		t.Errorf("observed TLS profiles %+v, want %+v", got.TLSProfiles, want)
	}
	// The record is the reconciler's input: no argument names a profile.
	if args, none := Args(got), Args(Config{Namespace: c.Namespace, Name: c.Name}); !slices.Equal(args, none) {
		t.Errorf("args %v, want those of an installation keeping nothing, %v", args, none)
	}
	generation := func() int64 {
		d, err := core.AppsV1().Deployments(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Generation
	}
	before := generation()
	rules := func(ns string) []string {
		r, err := core.RbacV1().Roles(ns).Get(ctx, c.TLSProfileRoleName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rule := range r.Rules {
			out = append(out, fmt.Sprintf("%s/%s %v %v", strings.Join(rule.APIGroups, ","), strings.Join(rule.Resources, ","), rule.ResourceNames, rule.Verbs))
		}
		return out
	}
	if got, want := rules("ri-tls-a"), []string{
		"/configmaps [profile] [get list watch patch]",
		"events.k8s.io/events [] [create patch]",
		"apps/deployments [web] [get list watch patch]",
	}; !slices.Equal(got, want) {
		t.Errorf("Role in ri-tls-a:\n got %q\nwant %q", got, want)
	}
	if got, want := rules("ri-tls-b"), []string{
		"/configmaps [edge.profile] [get list watch patch]",
		"events.k8s.io/events [] [create patch]",
		"apps/daemonsets [agent] [get list watch patch]",
	}; !slices.Equal(got, want) {
		t.Errorf("Role in ri-tls-b:\n got %q\nwant %q", got, want)
	}

	// An out-of-band edit of the record is drift.
	if _, err := core.CoreV1().ConfigMaps("ri-tls").Patch(ctx, c.RecordName(), types.MergePatchType,
		[]byte(`{"data":{"tlsprofile.ri-tls-b.edge.profile":"[{\"kind\":\"Deployment\",\"namespace\":\"ri-tls-b\",\"name\":\"x\"}]"}}`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); !slices.Contains(d, "ConfigMap ri-tls/"+c.RecordName()+" was changed") {
		t.Errorf("drift after a record edit: %v", d)
	}

	// Only profile a, whose targets reach ri-tls-b: that Role keeps only the
	// DaemonSet. Then none: both Roles go.
	c.TLSProfiles = []TLSProfile{a}
	mustApply(t, c)
	if after := generation(); after != before {
		t.Errorf("changing tls_profiles changed the Deployment (generation %d → %d): only the record should change", before, after)
	}
	if got, want := rules("ri-tls-b"), []string{"apps/daemonsets [agent] [get list watch patch]"}; !slices.Equal(got, want) {
		t.Errorf("Role in ri-tls-b with profile a only:\n got %q\nwant %q", got, want)
	}
	c.TLSProfiles = nil
	mustApply(t, c)
	for _, ns := range []string{"ri-tls-a", "ri-tls-b"} {
		if _, err := core.RbacV1().Roles(ns).Get(ctx, c.TLSProfileRoleName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("TLS profiles Role in %s kept with no profiles (err=%v)", ns, err)
		}
	}
	if err := Delete(ctx, clients(), c.Namespace, c.Name, false); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, c)
}
