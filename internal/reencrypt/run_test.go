package reencrypt_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

// The tests of this file share the test plugin's key and list every
// Secret of the cluster, so they stay serial (no t.Parallel).

func TestCheckHealth(t *testing.T) {
	ready := func(keks map[string]string) reencrypt.Health {
		return reencrypt.Health{Target: "t", RotationReady: true, KEKIDs: keks}
	}
	for _, tc := range []struct {
		name    string
		h       reencrypt.Health
		keyID   string
		wantErr string // "" passes
	}{
		{"one plugin on the key", ready(map[string]string{"1": "k-b"}), "k-b", ""},
		{"one plugin on another key", ready(map[string]string{"1": "k-a"}), "k-b", `on key "k-a"`},
		{"newest socket writes", ready(map[string]string{"1": "k-a", "2": "k-b"}), "k-b", ""},
		{"newest socket by number, not by string", ready(map[string]string{"9": "k-a", "10": "k-b"}), "k-b", ""},
		{"old socket's key is not the write key", ready(map[string]string{"1": "k-a", "2": "k-b"}), "k-a", `on key "k-b"`},
		{"not ready", reencrypt.Health{Target: "t", Problems: []string{"node cp-1: plugin 1 unhealthy"}}, "k-b", "node cp-1: plugin 1 unhealthy"},
		{"no kekID at all", ready(map[string]string{}), "k-b", "no node reports a kekID"},
		{"kube-apiserver not on the key yet", reencrypt.Health{Target: "t", RotationReady: true, KEKIDs: map[string]string{"1": "k-b"}, APIServer: "kube-apiserver still writes with the key whose hash is sha256:x"}, "k-b", "still writes with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := reencrypt.CheckHealth(tc.h, tc.keyID)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("passed, want a refusal with %q", tc.wantErr)
			case tc.wantErr != "" && (!strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, reencrypt.ErrGate)):
				t.Fatalf("refusal %q: want ErrGate and %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseResource(t *testing.T) {
	for _, tc := range []struct {
		in, group, resource, wantErr string
	}{
		{in: "secrets", resource: "secrets"},
		{in: "configmaps", resource: "configmaps"},
		{in: "widgets.example.com", group: "example.com", resource: "widgets"},
		{in: "", wantErr: "empty"},
		{in: "*.*", wantErr: "wildcards"},
		{in: "Secrets", wantErr: "not a resource name"},
		{in: "secrets.Bad_Group", wantErr: "not an API group"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			gr, err := reencrypt.ParseResource(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseResource(%q) = %v, %v; want an error with %q", tc.in, gr, err, tc.wantErr)
				}
				return
			}
			if err != nil || gr.Group != tc.group || gr.Resource != tc.resource {
				t.Fatalf("ParseResource(%q) = %v, %v; want %s.%s", tc.in, gr, err, tc.resource, tc.group)
			}
		})
	}
}

// TestRun_rewritesEveryObject: every Secret and ConfigMap is written back
// once, unchanged, the record says the run finished, and a second run
// writes nothing.
func TestRun_rewritesEveryObject(t *testing.T) {
	ns := newNamespace(t)
	makeSecrets(t, ns, 23)
	makeConfigMaps(t, ns, 7)
	before, err := env.Clientset().CoreV1().Secrets(ns).Get(context.Background(), "s-005", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var w writes
	o := options(t, ns, pluginGate(t))
	o.Resources = []string{"secrets", "configmaps"}
	rec, err := reencrypt.Run(context.Background(), w.config(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.in(secretsPath(ns)); len(got) != 23 {
		t.Errorf("%d Secrets of %s written, want 23: %v", len(got), ns, got)
	}
	// The run's own record is a ConfigMap of ns too.
	if got := w.in(configMapsPath(ns)); len(got) < 7 {
		t.Errorf("%d ConfigMaps of %s written, want at least 7: %v", len(got), ns, got)
	}
	if !rec.Complete() || rec.Path != reencrypt.PathRewrite || rec.KeyID != o.KeyID {
		t.Fatalf("record %+v: want a finished rewrite under %q", rec, o.KeyID)
	}
	for _, p := range rec.Progress {
		if !p.Complete || p.Continue != "" || p.Done < 7 {
			t.Errorf("progress %+v: want complete", p)
		}
	}
	stored, err := reencrypt.ReadRecord(context.Background(), env.Clientset(), ns, "run")
	if err != nil || !stored.Complete() {
		t.Fatalf("stored record %+v, %v: want the finished run", stored, err)
	}
	after, err := env.Clientset().CoreV1().Secrets(ns).Get(context.Background(), "s-005", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(after.Data["v"]) != string(before.Data["v"]) || !maps(after.Labels, before.Labels) {
		t.Errorf("Secret changed by the rewrite: %v → %v", before, after)
	}

	var again writes
	if _, err := reencrypt.Run(context.Background(), again.config(), o); err != nil {
		t.Fatal(err)
	}
	if got := again.in("/api/v1/"); len(got) != 0 {
		t.Errorf("a finished run wrote again: %v", got)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRun_resumesAtRecordedPage: a run cancelled after its first page
// records where it was; the next run starts at that page and does not
// write the first page's objects again.
func TestRun_resumesAtRecordedPage(t *testing.T) {
	ns := newNamespace(t)
	makeSecrets(t, ns, 35)
	gate := pluginGate(t)

	var first writes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := options(t, ns, gate)
	var pages atomic.Int32
	o.AfterPage = func(string, reencrypt.ResourceProgress) {
		if pages.Add(1) == 1 {
			cancel()
		}
	}
	if _, err := reencrypt.Run(ctx, first.config(), o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	rec, err := reencrypt.ReadRecord(context.Background(), env.Clientset(), ns, "run")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Complete() || len(rec.Progress) != 1 || rec.Progress[0].Continue == "" || rec.Progress[0].Done != o.PageSize {
		t.Fatalf("record after one page: %+v, want one page of %d done and a continue token", rec, o.PageSize)
	}
	firstPage := first.secrets()
	if int64(len(firstPage)) != o.PageSize {
		t.Fatalf("first run wrote %d objects, want one page (%d): %v", len(firstPage), o.PageSize, firstPage)
	}

	var second writes
	o.AfterPage = nil
	rec, err = reencrypt.Run(context.Background(), second.config(), o)
	if err != nil {
		t.Fatal(err)
	}
	rest := second.secrets()
	for _, p := range firstPage {
		if slices.Contains(rest, p) {
			t.Errorf("the resumed run wrote %s again", p)
		}
	}
	ours := append(first.in(secretsPath(ns)), second.in(secretsPath(ns))...)
	slices.Sort(ours)
	if len(ours) != 35 || len(slices.Compact(ours)) != 35 {
		t.Errorf("Secrets of %s written over both runs: %v, want each of the 35 once", ns, ours)
	}
	if !rec.Complete() || rec.Progress[0].Done != int64(len(firstPage)+len(rest)) {
		t.Errorf("record %+v: want complete with %d done", rec, len(firstPage)+len(rest))
	}
}

// TestRun_conflict: an object written by someone else between the LIST
// and the run's update is left as that writer made it, and counted done.
func TestRun_conflict(t *testing.T) {
	ns := newNamespace(t)
	makeSecrets(t, ns, 12)
	secrets := env.Clientset().CoreV1().Secrets(ns)
	target := secretsPath(ns) + "s-003"
	var w writes
	var changed atomic.Bool
	w.before = func(path string) {
		if path != target || !changed.CompareAndSwap(false, true) {
			return
		}
		s, err := secrets.Get(context.Background(), "s-003", metav1.GetOptions{})
		if err == nil {
			s.Data["v"] = []byte("theirs")
			_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("concurrent write: %v", err)
		}
	}
	rec, err := reencrypt.Run(context.Background(), w.config(), options(t, ns, pluginGate(t)))
	if err != nil {
		t.Fatal(err)
	}
	if !changed.Load() {
		t.Fatal("the run never wrote s-003")
	}
	s, err := secrets.Get(context.Background(), "s-003", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["v"]) != "theirs" {
		t.Errorf("s-003 = %q: the run overwrote a concurrent write", s.Data["v"])
	}
	if n := len(w.in(secretsPath(ns))); n != 12 {
		t.Errorf("%d updates of %s's Secrets sent, want 12 (the conflicting one is not retried)", n, ns)
	}
	if !rec.Complete() {
		t.Errorf("record %+v: want complete", rec)
	}
}

// TestRun_gateRefuses: an unhealthy plugin, or one on another key, stops
// the run before it writes anything, with the reason.
func TestRun_gateRefuses(t *testing.T) {
	ns := newNamespace(t)
	makeSecrets(t, ns, 3)
	gate := pluginGate(t)
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, o *reencrypt.Options)
		wantErr string
	}{
		{"unhealthy plugin", func(t *testing.T, _ *reencrypt.Options) {
			env.KMS.SetHealthz("kms unreachable")
			t.Cleanup(func() { env.KMS.SetHealthz("ok") })
		}, "are not healthy"},
		{"plugin on another key", func(_ *testing.T, o *reencrypt.Options) {
			o.KeyID = "not-the-key"
		}, `not on key_id "not-the-key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, ns, gate)
			tc.setup(t, &o)
			var w writes
			_, err := reencrypt.Run(context.Background(), w.config(), o)
			if !errors.Is(err, reencrypt.ErrGate) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run: %v, want the gate's refusal with %q", err, tc.wantErr)
			}
			if got := w.in("/api/v1/"); len(got) != 0 {
				t.Errorf("a refused run wrote: %v", got)
			}
			if rec, err := reencrypt.ReadRecord(context.Background(), env.Clientset(), ns, "run"); err != nil || rec != nil {
				t.Errorf("record after a refusal: %+v, %v; want none", rec, err)
			}
		})
	}
}

// TestRun_newKeyStartsOver: a finished run's record under another key is
// not this run's: it starts over, from the first page.
func TestRun_newKeyStartsOver(t *testing.T) {
	ns := newNamespace(t)
	makeSecrets(t, ns, 4)
	gate := pluginGate(t)
	o := options(t, ns, gate)
	if _, err := reencrypt.Run(context.Background(), env.RESTConfig(), o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o.KeyID = rotate(t, ctx)
	var w writes
	rec, err := reencrypt.Run(context.Background(), w.config(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rec.KeyID != o.KeyID || !rec.Complete() {
		t.Errorf("record %+v: want a finished run under key %s", rec, o.KeyID)
	}
	if n := len(w.in(secretsPath(ns))); n != 4 {
		t.Errorf("%d Secrets of %s written under the new key, want all 4", n, ns)
	}
}

// TestRun_methodStorageVersionMigrationUnavailable: asking for
// StorageVersionMigration where it is not available fails and says how
// to fall back; nothing is written.
func TestRun_methodStorageVersionMigrationUnavailable(t *testing.T) {
	ns := newNamespace(t)
	o := options(t, ns, pluginGate(t))
	o.Method = reencrypt.MethodStorageVersionMigration
	var w writes
	_, err := reencrypt.Run(context.Background(), w.config(), o)
	if err == nil || !strings.Contains(err.Error(), "StorageVersionMigration is not available") || !strings.Contains(err.Error(), `method = "auto"`) {
		t.Fatalf("run: %v, want StorageVersionMigration unavailable with the fallback", err)
	}
	if got := w.in("/api/v1/"); len(got) != 0 {
		t.Errorf("wrote: %v", got)
	}
}

// TestRun_unservedResource: a resource the API server does not serve is
// an error naming it, before the gate and before any write.
func TestRun_unservedResource(t *testing.T) {
	ns := newNamespace(t)
	o := options(t, ns, func(context.Context) (reencrypt.Health, error) {
		t.Error("the gate was consulted for a resource that does not exist")
		return reencrypt.Health{}, nil
	})
	o.Resources = []string{"secrets", "widgets.example.com"}
	_, err := reencrypt.Run(context.Background(), env.RESTConfig(), o)
	if err == nil || !strings.Contains(err.Error(), `resource "widgets.example.com": the API server does not serve it`) {
		t.Fatalf("run: %v, want the unserved resource named", err)
	}
}

// TestDeleteRecord removes our record and nothing else: a ConfigMap of
// the record's name that is not ours stays.
func TestDeleteRecord(t *testing.T) {
	ns := newNamespace(t)
	o := options(t, ns, pluginGate(t))
	if _, err := reencrypt.Run(context.Background(), env.RESTConfig(), o); err != nil {
		t.Fatal(err)
	}
	cms := env.Clientset().CoreV1().ConfigMaps(ns)
	if err := reencrypt.DeleteRecord(context.Background(), env.Clientset(), ns, "run"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(context.Background(), reencrypt.RecordName("run"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("record after delete: %v, want NotFound", err)
	}
	if err := reencrypt.DeleteRecord(context.Background(), env.Clientset(), ns, "run"); err != nil {
		t.Fatalf("deleting a deleted record: %v", err)
	}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: reencrypt.RecordName("other"), Namespace: ns}}
	if _, err := cms.Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := reencrypt.DeleteRecord(context.Background(), env.Clientset(), ns, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(context.Background(), foreign.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("a ConfigMap not labelled %s=%s was deleted: %v", kube.ManagedByLabel, kube.ManagedByValue, err)
	}
	o.Name = "other"
	if _, err := reencrypt.Run(context.Background(), env.RESTConfig(), o); err == nil || !strings.Contains(err.Error(), "is not kmshealth's") {
		t.Fatalf("run over a foreign ConfigMap: %v, want a refusal", err)
	}
}
