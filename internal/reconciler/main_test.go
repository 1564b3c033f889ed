package reconciler

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

var (
	env    *testenv.Env
	binary string // the real provider binary, run in reconcile mode
)

func TestMain(m *testing.M) {
	if _, child := os.LookupEnv("KMSHEALTH_HELPER_ARGS"); child {
		os.Exit(m.Run()) // a child of TestCommandLine needs no control plane
	}
	testenv.MainWithProvider(m, func(e *testenv.Env, bin string) { env, binary = e, bin })
}

func agg(t testing.TB) aggregator.Interface {
	t.Helper()
	c, err := aggregator.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reconcilerProcess is one running `reconcile` process of the real binary.
type reconcilerProcess struct {
	*devenv.Process
	log *devenv.SyncBuffer
}

// startReconciler runs the real binary against the test API server and
// waits until it is ready (caches synced). It is stopped with SIGTERM when
// the test ends; its log is printed when the test failed.
func startReconciler(t testing.TB, args ...string) *reconcilerProcess {
	t.Helper()
	log := &devenv.SyncBuffer{}
	proc, err := devenv.StartReconcile(context.Background(), binary, log, env.Token,
		append([]string{"--kubeconfig=" + env.Kubeconfig, "--namespace=default", "--record-configmap=" + recordName(t)}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	p := &reconcilerProcess{Process: proc, log: log}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("reconciler log:\n%s", log.String())
		}
	})
	return p
}

// metric returns the value of one series (name plus labels exactly as
// exposed), 0 when absent.
func (p *reconcilerProcess) metric(t testing.TB, series string) float64 {
	t.Helper()
	v, err := p.Metric(series)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitMetric waits until series equals want: a counter increments just
// after the write it counts, which the test may observe first.
func (p *reconcilerProcess) waitMetric(t testing.TB, series string, want float64) {
	t.Helper()
	p.waitFor(t, fmt.Sprintf("%s = %v", series, want), func(m map[string]float64) bool { return m[series] == want })
}

// waitFor scrapes the process's metrics until done holds for them (the
// process offers no watch of its metrics).
func (p *reconcilerProcess) waitFor(t testing.TB, what string, done func(map[string]float64) bool) {
	t.Helper()
	var last map[string]float64
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		m, err := p.Metrics()
		last = m
		return err == nil && done(m), err
	})
	if err != nil {
		t.Fatalf("%s: not within 10s (%v); kmshealth series: %v", what, err, kmshealthSeries(last))
	}
}

// kmshealthSeries is the kmshealth_* part of a scrape, for failure messages.
func kmshealthSeries(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "kmshealth_") {
			out[k] = v
		}
	}
	return out
}

// newCA returns a fresh self-signed CA certificate in PEM.
func newCA(t testing.TB, cn string) []byte {
	t.Helper()
	return testpki.MustCertPEM(cn, testpki.Options{})
}

// recordName is the test's own reconciler record, in namespace default.
func recordName(t testing.TB) string { return unique(t) + "-record" }

// record adds apiservice with its source to the test's reconciler record,
// as kmshealth_reconciler does: one server-side apply per entry, so the
// entries of one test add up.
func record(t testing.TB, apiservice string, src cabundle.Source) {
	t.Helper()
	ac := corev1ac.ConfigMap(recordName(t), "default").WithData(cabundle.RecordData(map[string]cabundle.Source{apiservice: src}))
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Apply(context.Background(), ac, metav1.ApplyOptions{FieldManager: "test-" + apiservice, Force: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), recordName(t), metav1.DeleteOptions{}) })
}

// recordData adds data to the test's reconciler record under manager,
// as kmshealth_reconciler writes entries; each manager's entries replace
// its previous ones (server-side apply), the others' stay.
func recordData(t testing.TB, manager string, data map[string]string) {
	t.Helper()
	ac := corev1ac.ConfigMap(recordName(t), "default").WithData(data)
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Apply(context.Background(), ac, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), recordName(t), metav1.DeleteOptions{}) })
}

// managed creates an APIService and a source ConfigMap holding bundle,
// applies the bundle exactly as the provider resource does, and records
// the APIService in the reconciler's record.
func managed(t testing.TB, name string, bundle []byte) cabundle.Source {
	t.Helper()
	ctx := context.Background()
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "default", Name: name + "-ca", Key: "ca.crt"}
	cms := env.Clientset().CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: src.Name}, Data: map[string]string{"ca.crt": string(bundle)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := int32(443)
	group := name + ".example.com"
	apis := agg(t).ApiregistrationV1().APIServices()
	live, err := apis.Create(ctx, &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + group},
		Spec: apiregv1.APIServiceSpec{Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "default", Name: name, Port: &port}},
	}, metav1.CreateOptions{FieldManager: "installer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = apis.Delete(context.Background(), live.Name, metav1.DeleteOptions{})
		_ = cms.Delete(context.Background(), src.Name, metav1.DeleteOptions{})
	})
	if _, _, err := cabundle.Ensure(ctx, agg(t).ApiregistrationV1(), live, bundle, src, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager}); err != nil {
		t.Fatal(err)
	}
	record(t, live.Name, src)
	return src
}

func apiserviceName(name string) string { return "v1." + name + ".example.com" }

// corrupt overwrites the caBundle the way a stale installer's Update does.
func corrupt(t testing.TB, apiservice string, bundle []byte) {
	t.Helper()
	apis := agg(t).ApiregistrationV1().APIServices()
	svc, err := apis.Get(context.Background(), apiservice, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.CABundle = bundle
	if _, err := apis.Update(context.Background(), svc, metav1.UpdateOptions{FieldManager: "legacy-installer"}); err != nil {
		t.Fatal(err)
	}
}

// waitForBundle watches the APIService until its caBundle equals want and
// returns how long that took.
func waitForBundle(t testing.TB, apiservice string, want []byte, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	apis := agg(t).ApiregistrationV1().APIServices()
	list, err := apis.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", apiservice).String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 1 && bytes.Equal(list.Items[0].Spec.CABundle, want) {
		return time.Since(start)
	}
	w, err := apis.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", apiservice).String(), ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if svc, ok := ev.Object.(*apiregv1.APIService); ok && bytes.Equal(svc.Spec.CABundle, want) {
			return time.Since(start)
		}
	}
	got, _ := apis.Get(context.Background(), apiservice, metav1.GetOptions{})
	t.Fatalf("caBundle of %s not restored within %s; live: %.60q", apiservice, limit, got.Spec.CABundle)
	return 0
}

// waitForEvent watches for an Event with reason about the APIService.
func waitForEvent(t testing.TB, apiservice, reason string, limit time.Duration) *corev1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	events := env.Clientset().CoreV1().Events("default")
	sel := fields.Set{"involvedObject.name": apiservice, "reason": reason}.AsSelector().String()
	lw := kube.ListWatch(events.List, events.Watch, func(o *metav1.ListOptions) { o.FieldSelector = sel })
	var found *corev1.Event
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Event{}, func(s cache.Store) (bool, error) {
		if items := s.List(); len(items) > 0 {
			found = items[0].(*corev1.Event)
		}
		return found != nil, nil
	}, func(ev watch.Event) (bool, error) {
		found, _ = ev.Object.(*corev1.Event)
		return found != nil, nil
	})
	if err != nil {
		t.Fatalf("no %s Event for %s within %s: %v", reason, apiservice, limit, err)
	}
	return found
}

// unique returns a short DNS-safe name per test.
func unique(t testing.TB) string {
	n := strings.ToLower(strings.TrimPrefix(t.Name(), "TestReconcile"))
	n = strings.NewReplacer("_", "-", "/", "-").Replace(n)
	if len(n) > 30 {
		n = n[:30]
	}
	return strings.Trim(n, "-")
}
