package reencrypt_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
)

// uniqueName is a DNS label unique to the test.
func uniqueName(t *testing.T) string {
	sum := sha256.Sum256([]byte(t.Name()))
	return fmt.Sprintf("re-%x", sum[:6])
}

// newNamespace creates the test's namespace and deletes it at the end.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := uniqueName(t)
	core := env.Clientset()
	if _, err := core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	return ns
}

// makeSecrets writes n Secrets s-000… into ns.
func makeSecrets(t *testing.T, ns string, n int) {
	t.Helper()
	for i := range n {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%03d", i), Namespace: ns},
			Data:       map[string][]byte{"v": []byte(fmt.Sprintf("value %d", i))},
		}
		if _, err := env.Clientset().CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// makeConfigMaps writes n ConfigMaps c-000… into ns.
func makeConfigMaps(t *testing.T, ns string, n int) {
	t.Helper()
	for i := range n {
		c := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%03d", i), Namespace: ns},
			Data:       map[string]string{"v": fmt.Sprintf("value %d", i)},
		}
		if _, err := env.Clientset().CoreV1().ConfigMaps(ns).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// keys numbers the key IDs the tests rotate to.
var keys atomic.Int64

// rotate moves the test plugin to a key ID never used before and waits
// until kube-apiserver writes under it. Never back to an earlier key: the
// API server learns a key only from a Status poll, so a key it never saw
// between two rotations would leave it on the old one, and WaitKeyInUse
// would wait for a data key that is never wrapped.
func rotate(t *testing.T, ctx context.Context) string {
	t.Helper()
	id := fmt.Sprintf("k%d", keys.Add(1))
	env.KMS.SetKeyID(id)
	if err := env.WaitKeyInUse(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// writes records the object paths of every PUT a client sends.
type writes struct {
	mu    sync.Mutex
	paths []string
	// before, when set, runs before a PUT is sent (a test changes the
	// object there, to make the PUT conflict).
	before func(path string)
}

func (w *writes) config() *rest.Config {
	cfg := rest.CopyConfig(env.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling in tests
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return kube.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut {
				w.mu.Lock()
				w.paths = append(w.paths, req.URL.Path)
				before := w.before
				w.mu.Unlock()
				if before != nil {
					before(req.URL.Path)
				}
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// in returns the written object names under the path prefix, e.g.
// "/api/v1/namespaces/ns/secrets/".
func (w *writes) in(prefix string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.paths {
		if name, ok := strings.CutPrefix(p, prefix); ok {
			out = append(out, name)
		}
	}
	return out
}

// secrets returns the written Secrets' paths, whatever their namespace.
func (w *writes) secrets() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.paths {
		if strings.Contains(p, "/secrets/") {
			out = append(out, p)
		}
	}
	return out
}

func secretsPath(ns string) string    { return "/api/v1/namespaces/" + ns + "/secrets/" }
func configMapsPath(ns string) string { return "/api/v1/namespaces/" + ns + "/configmaps/" }

var crdOnce sync.Once

// pluginGate is the gate the provider builds, over reports of the real
// test plugin: each call probes the plugin's Status over its socket (as
// the reporter does), writes the node's condition onto the test's
// KMSHealth object (as the reporter does) and judges it with
// kmshealth.Observe (as the data source does).
func pluginGate(t *testing.T) reencrypt.Gate {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cl := install.Clients{Core: env.Clientset(), Dynamic: dyn}
	crdOnce.Do(func() {
		err = reporterinstall.InstallCRD(ctx, cl, reporterinstall.DefaultConfig("kube-system", "test"))
	})
	if err != nil {
		t.Fatal(err)
	}
	tg := kmshealth.DefaultTarget()
	tg.Name = uniqueName(t)
	c := reporterinstall.DefaultConfig("kube-system", "test")
	c.Target = tg
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := reporterinstall.CreateTarget(cctx, cl, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(tg.GVR()).Delete(context.Background(), tg.Name, metav1.DeleteOptions{}) })
	b := &kmshealth.ConditionBuilder{Node: "cp-1"}
	return func(ctx context.Context) (reencrypt.Health, error) {
		sock := kmshealth.Socket{KeyID: "1", Endpoint: env.KMS.Endpoint(), Path: env.KMS.Socket()}
		var plugins []kmshealth.Plugin
		for _, r := range kmshealth.Probe(ctx, []kmshealth.Socket{sock}, 5*time.Second, time.Now) {
			plugins = append(plugins, r.Plugin())
		}
		cond := b.Build(plugins, time.Now())
		if err := kmshealth.ApplyCondition(ctx, dyn, tg, kmshealth.Kind, cond, kmshealth.ReporterFieldManager(b.Node)); err != nil {
			return reencrypt.Health{}, err
		}
		obs, err := kmshealth.Observe(ctx, dyn, kmshealth.Query{Target: tg, MaxStaleness: 2 * time.Minute})
		if err != nil {
			return reencrypt.Health{}, err
		}
		h := obs.Health
		return reencrypt.Health{Target: tg.String(), RotationReady: h.RotationReady, Problems: h.Problems, KEKIDs: h.ActiveKEKIDs}, nil
	}
}

// options are a run's options for the test: its record in ns, the test's
// gate, small pages so a few objects make several.
func options(t *testing.T, ns string, gate reencrypt.Gate) reencrypt.Options {
	return reencrypt.Options{
		Namespace: ns, Name: "run", KeyID: env.KMS.KeyID(), Method: reencrypt.MethodRewrite,
		PageSize: 10, Concurrency: 4, Gate: gate,
		Log: func(format string, args ...any) { t.Logf(format, args...) },
	}
}
