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
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

var (
	env    *testenv.Env
	binary string // the real provider binary, run in reconcile mode
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kmshealth-reconciler-test-")
	if err != nil {
		panic(err)
	}
	binary, err = devenv.BuildProvider(context.Background(), dir, "test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, func(e *testenv.Env) { env = e })
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
	proc, err := devenv.StartReconcile(context.Background(), binary, log,
		append([]string{"--kubeconfig=" + env.Kubeconfig, "--namespace=default"}, args...)...)
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := p.metric(t, series)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s = %v, want %v", series, got, want)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newCA returns a fresh self-signed CA certificate in PEM.
func newCA(t testing.TB, cn string) []byte {
	t.Helper()
	return testpki.MustCertPEM(cn, testpki.Options{})
}

// managed creates an APIService and a source ConfigMap holding bundle, and
// applies the bundle exactly as the provider resource does.
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

// waitForEvent waits for an Event with reason about the APIService.
func waitForEvent(t testing.TB, apiservice, reason string, limit time.Duration) *corev1.Event {
	t.Helper()
	deadline := time.Now().Add(limit)
	sel := fields.Set{"involvedObject.name": apiservice, "reason": reason}.AsSelector().String()
	for {
		list, err := env.Clientset().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			return &list.Items[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event for %s within %s", reason, apiservice, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
