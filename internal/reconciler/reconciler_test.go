package reconciler

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const (
	// restoreLimit only bounds a hung test: these tests assert that a
	// restore happens (seen on a watch), not how fast. The latency is the
	// bench's to measure (go run ./internal/cmd/bench reconcile prints it),
	// where a loaded CI machine does not turn an SLO into a flake.
	restoreLimit = 10 * time.Second
	patchSeries  = `kmshealth_kube_api_requests_total{resource="apiservices",verb="PATCH"}`
	corrections  = `kmshealth_corrections_total{controller="cabundle"}`
)

func TestReconcileRestoresDrift(t *testing.T) {
	t.Parallel()
	name := unique(t)
	good, bad := newCA(t, "good"), newCA(t, "stale")
	managed(t, name, good)
	p := startReconciler(t, "--leader-elect=false")

	for i := range 3 {
		corrupt(t, apiserviceName(name), bad)
		took := waitForBundle(t, apiserviceName(name), good, restoreLimit)
		t.Logf("corruption %d restored after %s", i+1, took)
	}
	p.waitMetric(t, corrections, 3)
	ev := waitForEvent(t, apiserviceName(name), ReasonRestored, 5*time.Second)
	if !strings.Contains(ev.Message, "ConfigMap/default/"+name+"-ca/ca.crt") {
		t.Errorf("event message %q does not name the source", ev.Message)
	}
	if age := p.metric(t, `kmshealth_last_successful_sync_age_seconds{controller="cabundle"}`); age < 0 || age > 60 {
		t.Errorf("kmshealth_last_successful_sync_age_seconds = %v, want a recent sync", age)
	}
}

func TestReconcileNoWriteWithoutDrift(t *testing.T) {
	t.Parallel()
	name, sentinel := unique(t), unique(t)+"-sentinel"
	good := newCA(t, "good")
	src := managed(t, name, good)
	managed(t, sentinel, good)
	p := startReconciler(t, "--leader-elect=false", "--workers=1")
	// A reconciler that starts on in-sync objects writes nothing.
	waitForBundle(t, apiserviceName(name), good, restoreLimit)
	if got := p.metric(t, patchSeries); got != 0 {
		t.Fatalf("%d PATCH requests at start-up with nothing drifted", int(got))
	}

	// Events that change nothing the reconciler owns: a label on the
	// APIService, an unrelated key in the source.
	events := func(resource string) float64 {
		return p.metric(t, `kmshealth_watch_events_total{controller="cabundle",resource="`+resource+`"}`)
	}
	apiserviceEvents, configmapEvents := events("apiservices"), events("configmaps")
	ctx := context.Background()
	apis := agg(t).ApiregistrationV1().APIServices()
	if _, err := apis.Patch(ctx, apiserviceName(name), types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Patch(ctx, src.Name, types.MergePatchType, []byte(`{"data":{"unrelated":"x"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Both events are in, and every reconcile they caused has finished.
	p.waitFor(t, "both events handled", func(m map[string]float64) bool {
		return m[`kmshealth_watch_events_total{controller="cabundle",resource="apiservices"}`] > apiserviceEvents &&
			m[`kmshealth_watch_events_total{controller="cabundle",resource="configmaps"}`] > configmapEvents &&
			m[`workqueue_depth{controller="cabundle",name="cabundle"}`] == 0 &&
			m[`controller_runtime_active_workers{controller="cabundle"}`] == 0
	})
	if got := p.metric(t, patchSeries); got != 0 {
		t.Fatalf("%v PATCH requests after events that changed nothing of ours, want 0", got)
	}

	// The reconciler still writes on real drift.
	corrupt(t, apiserviceName(sentinel), newCA(t, "stale"))
	waitForBundle(t, apiserviceName(sentinel), good, restoreLimit)

	// Exactly one write: the sentinel's restore.
	p.waitMetric(t, corrections, 1)
	if got := p.metric(t, patchSeries); got != 1 {
		t.Errorf("%v PATCH requests, want exactly 1 (the sentinel's restore)", got)
	}
}

func TestReconcileSourceRotation(t *testing.T) {
	t.Parallel()
	name := unique(t)
	old, rotated := newCA(t, "old"), newCA(t, "rotated")
	src := managed(t, name, old)
	startReconciler(t, "--leader-elect=false")

	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cm, err := cms.Get(context.Background(), src.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ca.crt"] = string(old) + string(rotated) // overlap during rotation
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitForBundle(t, apiserviceName(name), append(bytes.Clone(old), rotated...), restoreLimit)
	t.Logf("rotation propagated after %s", took)
}

func TestReconcileInvalidSourceLeavesBundle(t *testing.T) {
	t.Parallel()
	name := unique(t)
	good := newCA(t, "good")
	src := managed(t, name, good)
	p := startReconciler(t, "--leader-elect=false")

	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cm, err := cms.Get(context.Background(), src.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ca.crt"] = "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n"
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, apiserviceName(name), ReasonSourceInvalid, 10*time.Second)

	if err := cms.Delete(context.Background(), src.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, apiserviceName(name), ReasonSourceMissing, 10*time.Second)

	live, err := agg(t).ApiregistrationV1().APIServices().Get(context.Background(), apiserviceName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(live.Spec.CABundle, good) {
		t.Errorf("an invalid or missing source changed the live caBundle to %.60q", live.Spec.CABundle)
	}
	if got := p.metric(t, patchSeries); got != 0 {
		t.Errorf("%v PATCH requests for an invalid source, want 0", got)
	}
	for _, reason := range []string{"source_invalid", "source_missing"} {
		if got := p.metric(t, `kmshealth_reconcile_errors_total{controller="cabundle",reason="`+reason+`"}`); got < 1 {
			t.Errorf("kmshealth_reconcile_errors_total{reason=%q} = %v, want >= 1", reason, got)
		}
	}
}

func TestReconcileLeaderElection(t *testing.T) {
	// Serial: it measures a take-over against 4 s leases, which a machine
	// busy with the parallel tests would stretch.
	name := unique(t)
	good, bad := newCA(t, "good"), newCA(t, "stale")
	managed(t, name, good)
	lease := []string{"--leader-elect=true", "--leader-elect-lease-name=" + name,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	a := startReconciler(t, append(lease, "--leader-elect-identity=a")...)
	b := startReconciler(t, append(lease, "--leader-elect-identity=b")...)
	replicas := map[string]*reconcilerProcess{"a": a, "b": b}

	leader := waitForLeader(t, name, "", 15*time.Second)
	for range 5 {
		corrupt(t, apiserviceName(name), bad)
		waitForBundle(t, apiserviceName(name), good, restoreLimit)
	}
	follower := map[string]string{"a": "b", "b": "a"}[leader]
	replicas[leader].waitMetric(t, corrections, 5)
	if got := replicas[follower].metric(t, patchSeries); got != 0 {
		t.Errorf("follower %s sent %v PATCH requests, want 0: only the leader writes", follower, got)
	}

	// Kill the leader without letting it release the Lease.
	killed := time.Now()
	_ = replicas[leader].Cmd.Process.Signal(syscall.SIGKILL)
	<-replicas[leader].Done()
	newLeader := waitForLeader(t, name, leader, 20*time.Second)
	t.Logf("leader %s killed; %s took over after %s (lease duration 4s)", leader, newLeader, time.Since(killed).Round(10*time.Millisecond))
	corrupt(t, apiserviceName(name), bad)
	waitForBundle(t, apiserviceName(name), good, restoreLimit)
	replicas[newLeader].waitMetric(t, corrections, 1)
}

// waitForLeader watches the Lease until a holder other than not holds it.
func waitForLeader(t *testing.T, lease, not string, limit time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	leases := env.Clientset().CoordinationV1().Leases("default")
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + lease})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || l.Spec.HolderIdentity == nil {
				continue
			}
			if holder := *l.Spec.HolderIdentity; holder != "" && holder != not {
				w.Stop()
				return holder
			}
		}
	}
	t.Fatalf("no new leader on Lease %s within %s", lease, limit)
	return ""
}

func TestReconcileSurvivesAPIServerRestart(t *testing.T) {
	// Serial: it restarts the package's one API server under every test.
	name := unique(t)
	good, bad := newCA(t, "good"), newCA(t, "stale")
	managed(t, name, good)
	p := startReconciler(t, "--leader-elect=true", "--leader-elect-lease-name="+name,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	waitForLeader(t, name, "", 15*time.Second)

	if err := env.RestartAPIServer(context.Background(), func() { time.Sleep(5 * time.Second) }); err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatalf("reconciler exited during the API server restart:\n%s", p.log.String())
	}
	corrupt(t, apiserviceName(name), bad)
	took := waitForBundle(t, apiserviceName(name), good, 30*time.Second)
	t.Logf("after the restart, drift restored in %s", took)
}

// TestReconcileRestoresReplacedAPIService: an installer rewrites the
// APIService from a manifest that knows nothing of kmshealth — no caBundle,
// no annotation — as `kubectl replace` or `helm upgrade --force` do. The
// record, not the annotation, says what to keep: the caBundle is back.
func TestReconcileRestoresReplacedAPIService(t *testing.T) {
	t.Parallel()
	name := unique(t)
	good := newCA(t, "good")
	managed(t, name, good)
	startReconciler(t, "--leader-elect=false")

	apis := agg(t).ApiregistrationV1().APIServices()
	live, err := apis.Get(context.Background(), apiserviceName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manifest := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: live.Name, ResourceVersion: live.ResourceVersion, Labels: map[string]string{"installed-by": "helm"}},
		Spec:       live.Spec,
	}
	manifest.Spec.CABundle = nil
	replaced, err := apis.Update(context.Background(), manifest, metav1.UpdateOptions{FieldManager: "kubectl-replace"})
	if err != nil {
		t.Fatal(err)
	}
	if len(replaced.Spec.CABundle) != 0 || replaced.Annotations[cabundle.SourceAnnotation] != "" {
		t.Fatalf("the replace kept the caBundle or the annotation; the test would prove nothing")
	}
	took := waitForBundle(t, apiserviceName(name), good, restoreLimit)
	t.Logf("replaced APIService restored after %s", took)
}

// TestReconcileRestoresRecreatedAPIService: the installer deletes the
// APIService and creates it again (a new UID) during an upgrade.
func TestReconcileRestoresRecreatedAPIService(t *testing.T) {
	t.Parallel()
	name := unique(t)
	good := newCA(t, "good")
	managed(t, name, good)
	startReconciler(t, "--leader-elect=false")

	apis := agg(t).ApiregistrationV1().APIServices()
	live, err := apis.Get(context.Background(), apiserviceName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apis.Delete(context.Background(), live.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := &apiregv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: live.Name}, Spec: live.Spec}
	fresh.Spec.CABundle = nil
	created, err := apis.Create(context.Background(), fresh, metav1.CreateOptions{FieldManager: "installer"})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == live.UID {
		t.Fatal("the APIService kept its UID; the test would prove nothing")
	}
	took := waitForBundle(t, apiserviceName(name), good, restoreLimit)
	t.Logf("re-created APIService restored after %s", took)
}

// TestReconcileMetricsNeedToken: /metrics is served over HTTPS through
// TokenReview and SubjectAccessReview: no token is 401, a ServiceAccount
// RBAC does not allow is 403, one with get on the /metrics non-resource URL
// is 200.
func TestReconcileMetricsNeedToken(t *testing.T) {
	t.Parallel()
	p := startReconciler(t, "--leader-elect=false")
	testenv.MetricsAccess(t, env.Clientset(), p.MetricsURL, "reconciler-metrics", "workqueue_depth")
}

// TestReconcileKeepsAPIServiceCreatedLater: the APIServices are one watch
// of every APIService. One the record names before it exists is kept from
// its creation on; events of an APIService nobody keeps reach the watch
// and reconcile nothing, write nothing.
func TestReconcileKeepsAPIServiceCreatedLater(t *testing.T) {
	t.Parallel()
	name := unique(t)
	good := newCA(t, "good")
	ctx := context.Background()
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "default", Name: name + "-ca", Key: "ca.crt"}
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: src.Name}, Data: map[string]string{"ca.crt": string(good)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), src.Name, metav1.DeleteOptions{}) })
	record(t, apiserviceName(name), src)
	p := startReconciler(t, "--leader-elect=false", "--workers=1")

	apis := agg(t).ApiregistrationV1().APIServices()
	create := func(svcName string) {
		t.Helper()
		port := int32(443)
		group := strings.TrimPrefix(svcName, "v1.")
		if _, err := apis.Create(ctx, &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: svcName},
			Spec: apiregv1.APIServiceSpec{Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
				Service: &apiregv1.ServiceReference{Namespace: "default", Name: name, Port: &port}},
		}, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = apis.Delete(context.Background(), svcName, metav1.DeleteOptions{}) })
	}

	// An APIService nobody keeps: created and changed, seen, not reconciled.
	const reconciles = `controller_runtime_reconcile_total{controller="cabundle",result="success"}`
	const apiserviceEvents = `kmshealth_watch_events_total{controller="cabundle",resource="apiservices"}`
	before := p.metric(t, reconciles)
	seen := p.metric(t, apiserviceEvents)
	unkept := apiserviceName(name + "-unkept")
	create(unkept)
	if _, err := apis.Patch(ctx, unkept, types.MergePatchType, []byte(`{"spec":{"caBundle":null,"versionPriority":16}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "the unkept APIService's events seen", func(m map[string]float64) bool {
		return m[apiserviceEvents] >= seen+2 && m[`workqueue_depth{controller="cabundle",name="cabundle"}`] == 0 &&
			m[`controller_runtime_active_workers{controller="cabundle"}`] == 0
	})
	if got := p.metric(t, reconciles); got != before {
		t.Errorf("%v reconciles after events of an APIService nobody keeps, want none", got-before)
	}

	// The kept one appears: its caBundle is written, once.
	create(apiserviceName(name))
	took := waitForBundle(t, apiserviceName(name), good, restoreLimit)
	t.Logf("APIService created after the start kept after %s", took)
	p.waitFor(t, corrections+" >= 1", func(m map[string]float64) bool { return m[corrections] >= 1 })
	// One write, or two: kube-apiserver's availability controller writes
	// the new APIService's status at about the time ours patches it, and a
	// reconcile that read the cache between the two writes the same bundle
	// again (seen under load). More than that is a loop.
	if got := p.metric(t, patchSeries); got < 1 || got > 2 {
		t.Errorf("%v PATCH requests, want 1 (the kept APIService's first bundle), at most 2", got)
	}
}
