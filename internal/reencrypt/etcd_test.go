package reencrypt_test

import (
	"context"
	"testing"
	"time"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

// storedUnder reads from etcd the KMS key ID of every object under
// /registry/<prefix>.
func storedUnder(t *testing.T, ctx context.Context, prefix string) map[string]string {
	t.Helper()
	got, err := env.StoredKeyIDs(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRun_reencryptsUnderNewKey is the rotation end to end on the rewrite
// path: Secrets and ConfigMaps written under key 1, the plugin rotated to
// key 2 and kube-apiserver writing under it, the objects still stored under
// 1 (nothing re-encrypts them by itself), a run under key 2, and then every
// Secret and ConfigMap of the cluster stored under 2, read from etcd.
func TestRun_reencryptsUnderNewKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	useKey(t, "1")
	if err := env.WaitKeyInUse(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	makeSecrets(t, ns, 25)
	makeConfigMaps(t, ns, 15)
	for _, prefix := range []string{"secrets/" + ns + "/", "configmaps/" + ns + "/"} {
		for k, id := range storedUnder(t, ctx, prefix) {
			if id != "1" {
				t.Fatalf("%s stored under %q before the rotation, want 1", k, id)
			}
		}
	}

	useKey(t, "2")
	if err := env.WaitKeyInUse(ctx, "2"); err != nil {
		t.Fatal(err)
	}
	if got := storedUnder(t, ctx, "secrets/"+ns+"/")["/registry/secrets/"+ns+"/s-000"]; got != "1" {
		t.Fatalf("s-000 is stored under %q right after the rotation, want still 1", got)
	}

	o := options(t, ns, pluginGate(t))
	o.KeyID = "2"
	o.Resources = []string{"secrets", "configmaps"}
	rec, err := reencrypt.Run(ctx, env.RESTConfig(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Complete() {
		t.Fatalf("record %+v: want finished", rec)
	}
	for _, prefix := range []string{"secrets/", "configmaps/"} {
		stored := storedUnder(t, ctx, prefix)
		if len(stored) == 0 {
			t.Fatalf("etcd has nothing under /registry/%s", prefix)
		}
		for k, id := range stored {
			if id != "2" {
				t.Errorf("%s is stored under key %q after the run, want 2", k, id)
			}
		}
	}
}
