package reconciler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

const (
	rbacProxyPatches     = `kmshealth_kube_api_requests_total{resource="deployments",verb="PATCH"}`
	rbacProxyCorrections = `kmshealth_corrections_total{controller="rbacproxy"}`
	rbacProxyInSync      = `kmshealth_reconciles_total{controller="rbacproxy",result="in_sync"}`
	rbacProxyInvalid     = `kmshealth_reconcile_errors_total{controller="rbacproxy",reason="invalid_record"}`
)

// rbacProxyClients are what rbacproxy's Uninstall talks to env with.
func rbacProxyClients() install.Clients {
	return install.Clients{Core: env.Clientset(), Dynamic: dynamic.NewForConfigOrDie(env.RESTConfig())}
}

func rbacProxyEvents(resource string) string {
	return `kmshealth_watch_events_total{controller="rbacproxy",resource="` + resource + `"}`
}

// userDeployment is the workload as its own installer (Helm, a manifest
// applied with kubectl) writes it: knowing nothing of kmshealth.
func userDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"installed-by": "helm"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"example.com/owner": "team-a"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "app", Image: "example.com/app:1",
						Args:         []string{"--listen=127.0.0.1:8080"},
						Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

// rbacProxyFixture creates the user's Deployment, then protects it as
// kmshealth_rbac_proxy_sidecar does: the config ConfigMap (config file and
// record) first, then kmshealth's fields of the pod template, each by
// server-side apply as rbacproxy.FieldManager.
func rbacProxyFixture(t *testing.T, name string) rbacproxy.Config {
	t.Helper()
	ctx := context.Background()
	deployments := env.Clientset().AppsV1().Deployments("default")
	live, err := deployments.Create(ctx, userDeployment(name), metav1.CreateOptions{FieldManager: "helm"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rbacproxy.Config{
		Target:             rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "default", Name: name},
		UpstreamPort:       8080,
		ServiceAccountName: "default",
		Authorization: rbacproxy.Authorization{ResourceAttributes: &rbacproxy.ResourceAttributes{
			Namespace: "default", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "status", Name: name,
		}},
	}
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cm, err := cfg.ConfigMapApply()
	if err != nil {
		t.Fatal(err)
	}
	apply := metav1.ApplyOptions{FieldManager: rbacproxy.FieldManager, Force: true}
	if _, err := cms.Apply(ctx, cm, apply); err != nil {
		t.Fatal(err)
	}
	w, err := cfg.WorkloadApply(live.UID)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := deployments.Apply(ctx, w.Deployment, apply)
	if err != nil {
		t.Fatal(err)
	}
	if diffs, err := cfg.Diff(&applied.Spec.Template); err != nil || len(diffs) > 0 {
		t.Fatalf("the fixture's apply left the workload out of sync (%v): %q", err, diffs)
	}
	t.Cleanup(func() {
		_ = deployments.Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cms.Delete(context.Background(), rbacproxy.ObjectName(cfg.Target), metav1.DeleteOptions{})
	})
	return cfg
}

// startRBACProxyReconciler runs the reconciler keeping the workloads of cfgs.
func startRBACProxyReconciler(t *testing.T, extra []string, cfgs ...rbacproxy.Config) *reconcilerProcess {
	t.Helper()
	args := append([]string{"--leader-elect=false"}, extra...)
	kept := make([]rbacproxy.Kept, len(cfgs))
	for i, cfg := range cfgs {
		kept[i] = rbacproxy.Kept{Target: cfg.Target}
	}
	recordData(t, "test-rbac-proxy", rbacproxy.RecordData(kept))
	return startReconciler(t, args...)
}

// kubectlReplace rewrites the Deployment from the user's manifest, as
// `kubectl replace` or `helm upgrade --force` do: an Update by another
// field manager without kmshealth's sidecar, volumes and annotation.
func kubectlReplace(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	replaced, err := env.Clientset().AppsV1().Deployments("default").Update(context.Background(), userDeployment(name), metav1.UpdateOptions{FieldManager: "kubectl-replace"})
	if err != nil {
		t.Fatal(err)
	}
	if hasSidecar(&replaced.Spec.Template) {
		t.Fatal("the replace kept the sidecar; the test would prove nothing")
	}
	return replaced
}

func hasSidecar(tmpl *corev1.PodTemplateSpec) bool {
	return slices.ContainsFunc(tmpl.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == rbacproxy.ContainerName }) ||
		slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == rbacproxy.ConfigVolumeName }) ||
		tmpl.Annotations[rbacproxy.ConfigHashAnnotation] != ""
}

// inSync is the library's own comparison, on the live object.
func inSync(cfg rbacproxy.Config) func(*appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool {
		ok, err := cfg.InSync(&d.Spec.Template)
		return err == nil && ok
	}
}

// restoredAfter watches the Deployment from before change (the
// out-of-band write) runs, and says how long after change began the watch
// showed the sidecar back: the restore latency, without the time a watch
// takes to start.
func restoredAfter(t *testing.T, cfg rbacproxy.Config, change func()) (time.Duration, *appsv1.Deployment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deployments := env.Clientset().AppsV1().Deployments("default")
	sel := fields.OneTermEqualSelector("metadata.name", cfg.Target.Name).String()
	list, err := deployments.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	w, err := deployments.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	change()
	for ev := range w.ResultChan() {
		if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type != watch.Deleted && inSync(cfg)(d) {
			return time.Since(start), d
		}
	}
	t.Fatalf("the sidecar of %s was not restored within 30s", cfg.Target)
	return 0, nil
}

// rbacProxyIdle waits until every event the watches have received is reconciled.
func (p *reconcilerProcess) rbacProxyIdle(t *testing.T, what string, done func(map[string]float64) bool) {
	t.Helper()
	p.waitFor(t, what, func(m map[string]float64) bool {
		return done(m) && m[`workqueue_depth{controller="rbacproxy",name="rbacproxy"}`] == 0 &&
			m[`controller_runtime_active_workers{controller="rbacproxy"}`] == 0
	})
}

// assertUserPartKept checks the replace's own fields are what the user
// wrote: the restore touched kmshealth's fields only.
func assertUserPartKept(t *testing.T, live *appsv1.Deployment) {
	t.Helper()
	want := userDeployment(live.Name).Spec.Template
	got := live.Spec.Template
	if len(got.Spec.Containers) != 1 {
		t.Fatalf("containers = %d, want the user's one", len(got.Spec.Containers))
	}
	c, w := got.Spec.Containers[0], want.Spec.Containers[0]
	if c.Name != w.Name || c.Image != w.Image || !slices.Equal(c.Args, w.Args) ||
		!equality.Semantic.DeepEqual(c.Ports, w.Ports) || !equality.Semantic.DeepEqual(c.VolumeMounts, w.VolumeMounts) {
		t.Errorf("the user's container changed: %+v", c)
	}
	if !slices.ContainsFunc(got.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" && v.EmptyDir != nil }) {
		t.Errorf("the user's volume %q is gone: %+v", "data", got.Spec.Volumes)
	}
	if got.Annotations["example.com/owner"] != "team-a" || live.Labels["installed-by"] != "helm" {
		t.Errorf("the user's annotation or label changed: %v, %v", got.Annotations, live.Labels)
	}
	if n := len(got.Spec.InitContainers); n != 1 {
		t.Errorf("%d init containers, want only the sidecar", n)
	}
}

// TestReconcileRBACProxyRestoresReplaced: a kubectl replace (or Helm
// upgrade) of the workload drops the sidecar, its volume and the config
// hash annotation; the reconciler, learning the workload from the config
// ConfigMap alone, puts them back and leaves the user's part alone.
func TestReconcileRBACProxyRestoresReplaced(t *testing.T) {
	t.Parallel()
	cfg := rbacProxyFixture(t, unique(t))
	p := startRBACProxyReconciler(t, nil, cfg)
	p.rbacProxyIdle(t, "first reconcile in sync", func(m map[string]float64) bool { return m[rbacProxyInSync] >= 1 })

	const rounds = 3
	for i := range rounds {
		took, live := restoredAfter(t, cfg, func() { kubectlReplace(t, cfg.Target.Name) })
		t.Logf("replace %d: sidecar restored %s after the replace was sent", i+1, took.Round(time.Millisecond))
		assertUserPartKept(t, live)
	}
	ev := waitForEvent(t, cfg.Target.Name, ReasonRBACProxyRestored, 5*time.Second)
	if !strings.Contains(ev.Message, "ConfigMap default/"+rbacproxy.ObjectName(cfg.Target)) || !strings.Contains(ev.Message, rbacproxy.ContainerName) {
		t.Errorf("Event message %q names neither the record nor the sidecar", ev.Message)
	}
	// One write per replace: a restore is in sync at once, never a loop.
	p.rbacProxyIdle(t, "restores counted", func(m map[string]float64) bool { return m[rbacProxyCorrections] == rounds })
	if got := p.metric(t, rbacProxyPatches); got != rounds {
		t.Errorf("%v PATCH requests on deployments, want %d (one per replace)", got, rounds)
	}
}

// TestReconcileRBACProxyNoWriteInSync: with everything in sync, the
// reconciler sends no write, at start-up or on events that change nothing
// of ours; real drift of another workload is still restored, with one write.
func TestReconcileRBACProxyNoWriteInSync(t *testing.T) {
	t.Parallel()
	name := unique(t)
	cfg := rbacProxyFixture(t, name)
	sentinel := rbacProxyFixture(t, name+"-sentinel")
	p := startRBACProxyReconciler(t, []string{"--workers=1"}, cfg, sentinel)
	p.rbacProxyIdle(t, "both reconciled in sync", func(m map[string]float64) bool { return m[rbacProxyInSync] >= 2 })
	if got := p.metric(t, rbacProxyPatches); got != 0 {
		t.Fatalf("%v PATCH requests at start-up with nothing drifted", got)
	}

	// A new image of the user's container (a new template), a scale and a
	// label on the record: events, none of them about our fields.
	ctx := context.Background()
	inSyncBefore := p.metric(t, rbacProxyInSync)
	deploymentEvents, configmapEvents := p.metric(t, rbacProxyEvents("deployments")), p.metric(t, rbacProxyEvents("configmaps"))
	deployments := env.Clientset().AppsV1().Deployments("default")
	for _, patch := range []string{
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"example.com/app:2"}]}}}}`,
		`{"spec":{"replicas":3}}`,
	} {
		if _, err := deployments.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "helm"}); err != nil {
			t.Fatal(err)
		}
	}
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Patch(ctx, rbacproxy.ObjectName(cfg.Target), types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Both events are in and reconciled in sync (one reconcile at least:
	// the two are for the same key); the scale changed no template, so
	// it is not even an event.
	p.rbacProxyIdle(t, "the events reconciled", func(m map[string]float64) bool {
		return m[rbacProxyEvents("deployments")] > deploymentEvents && m[rbacProxyEvents("configmaps")] > configmapEvents &&
			m[rbacProxyInSync] > inSyncBefore
	})
	if got := p.metric(t, rbacProxyPatches); got != 0 {
		t.Fatalf("%v PATCH requests after events that changed nothing of ours, want 0", got)
	}

	took, _ := restoredAfter(t, sentinel, func() { kubectlReplace(t, sentinel.Target.Name) })
	t.Logf("sentinel restored after %s", took.Round(time.Millisecond))
	p.rbacProxyIdle(t, "the sentinel's restore counted", func(m map[string]float64) bool { return m[rbacProxyCorrections] == 1 })
	if got := p.metric(t, rbacProxyPatches); got != 1 {
		t.Errorf("%v PATCH requests, want exactly 1 (the sentinel's restore)", got)
	}
}

// TestReconcileRBACProxyInvalidRecord: a record.json that does not decode
// is reported by a Warning Event on the ConfigMap and a metric, and
// nothing is written — not even when the sidecar is then removed.
func TestReconcileRBACProxyInvalidRecord(t *testing.T) {
	t.Parallel()
	cfg := rbacProxyFixture(t, unique(t))
	p := startRBACProxyReconciler(t, nil, cfg)
	p.rbacProxyIdle(t, "first reconcile in sync", func(m map[string]float64) bool { return m[rbacProxyInSync] >= 1 })

	ctx := context.Background()
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cmName := rbacproxy.ObjectName(cfg.Target)
	if _, err := cms.Patch(ctx, cmName, types.MergePatchType, []byte(`{"data":{"record.json":"{\"version\":1,\"config\":{\"target\""}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	ev := waitForEvent(t, cmName, ReasonRBACProxyRecordInvalid, 10*time.Second)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, rbacproxy.RecordKey) || !strings.Contains(ev.Message, "re-apply the kmshealth_rbac_proxy_sidecar resource") {
		t.Errorf("Event %s %q does not say what is wrong and what to do", ev.Type, ev.Message)
	}
	p.rbacProxyIdle(t, "the invalid record counted", func(m map[string]float64) bool { return m[rbacProxyInvalid] >= 1 })

	// With the record unusable, removing the sidecar and touching the
	// record again is reconciled — and still writes nothing.
	kubectlReplace(t, cfg.Target.Name)
	if _, err := cms.Patch(ctx, cmName, types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p.rbacProxyIdle(t, "the touched record reconciled", func(m map[string]float64) bool { return m[rbacProxyInvalid] >= 2 })
	if got := p.metric(t, rbacProxyPatches); got != 0 {
		t.Errorf("%v PATCH requests with an invalid record, want 0", got)
	}
	live, err := env.Clientset().AppsV1().Deployments("default").Get(ctx, cfg.Target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hasSidecar(&live.Spec.Template) {
		t.Error("the sidecar was injected from an invalid record")
	}
}

// TestReconcileRBACProxyRecreated: the installer deletes the workload and
// creates it again (a new UID) without the sidecar: it gets it back.
func TestReconcileRBACProxyRecreated(t *testing.T) {
	t.Parallel()
	cfg := rbacProxyFixture(t, unique(t))
	p := startRBACProxyReconciler(t, nil, cfg)
	p.rbacProxyIdle(t, "first reconcile in sync", func(m map[string]float64) bool { return m[rbacProxyInSync] >= 1 })

	ctx := context.Background()
	deployments := env.Clientset().AppsV1().Deployments("default")
	old, err := deployments.Get(ctx, cfg.Target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var created *appsv1.Deployment
	took, live := restoredAfter(t, cfg, func() {
		if err := deployments.Delete(ctx, cfg.Target.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if created, err = deployments.Create(ctx, userDeployment(cfg.Target.Name), metav1.CreateOptions{FieldManager: "helm"}); err != nil {
			t.Fatal(err)
		}
		if created.UID == old.UID || hasSidecar(&created.Spec.Template) {
			t.Fatal("the re-created Deployment kept its UID or the sidecar; the test would prove nothing")
		}
	})
	t.Logf("re-created Deployment got the sidecar %s after the delete was sent", took.Round(time.Millisecond))
	assertUserPartKept(t, live)
	if live.UID != created.UID {
		t.Errorf("UID %s, want the re-created %s", live.UID, created.UID)
	}
	p.rbacProxyIdle(t, "the restore counted", func(m map[string]float64) bool { return m[rbacProxyCorrections] == 1 })
	if got := p.metric(t, rbacProxyPatches); got != 1 {
		t.Errorf("%v PATCH requests, want 1: nothing while deleted, one restore", got)
	}
}

// TestReconcileRBACProxyFieldManager: --field-manager names the caBundle
// resources' manager and nothing else. A platform team that sets it to its
// own name still gets a sidecar restored under rbacproxy.FieldManager —
// the manager kmshealth_rbac_proxy_sidecar releases on destroy —, so the
// destroy after a restore leaves nothing of ours in the workload.
func TestReconcileRBACProxyFieldManager(t *testing.T) {
	t.Parallel()
	cfg := rbacProxyFixture(t, unique(t))
	p := startRBACProxyReconciler(t, []string{"--field-manager=platform-team"}, cfg)
	p.rbacProxyIdle(t, "first reconcile in sync", func(m map[string]float64) bool { return m[rbacProxyInSync] >= 1 })

	_, live := restoredAfter(t, cfg, func() { kubectlReplace(t, cfg.Target.Name) })
	for _, f := range live.ManagedFields {
		if f.Manager == "platform-team" {
			t.Errorf("the restore wrote as --field-manager %q: %s", f.Manager, f.FieldsV1)
		}
	}
	p.Stop()
	ctx := context.Background()
	if err := cfg.Uninstall(ctx, rbacProxyClients()); err != nil {
		t.Fatal(err)
	}
	after, err := env.Clientset().AppsV1().Deployments("default").Get(ctx, cfg.Target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hasSidecar(&after.Spec.Template) {
		t.Errorf("the sidecar, its volumes or annotation stayed after the destroy: %+v", after.Spec.Template)
	}
}
