package reencrypt_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	before := rotate(t, ctx)
	ns := newNamespace(t)
	makeSecrets(t, ns, 25)
	makeConfigMaps(t, ns, 15)
	for _, prefix := range []string{"secrets/" + ns + "/", "configmaps/" + ns + "/"} {
		for k, id := range storedUnder(t, ctx, prefix) {
			if id != before {
				t.Fatalf("%s stored under %q before the rotation, want %s", k, id, before)
			}
		}
	}

	after := rotate(t, ctx)
	if got := storedUnder(t, ctx, "secrets/"+ns+"/")["/registry/secrets/"+ns+"/s-000"]; got != before {
		t.Fatalf("s-000 is stored under %q right after the rotation, want still %s", got, before)
	}

	o := options(t, ns, pluginGate(t))
	o.KeyID = after
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
			if id != after {
				t.Errorf("%s is stored under key %q after the run, want %s", k, id, after)
			}
		}
	}
}

// TestRun_autoPath is serial: it starts the bed's storage version
// migrator and rotates the package's KMS key.
//
// method = auto rewrites where no controller carries
// StorageVersionMigrations out, and takes StorageVersionMigration where
// one does; either way every Secret and ConfigMap ends up under the new
// key in etcd, and the record says which path ran.
func TestRun_autoPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env.StopStorageVersionMigrator()
	ns := newNamespace(t)
	gate := pluginGate(t)
	for _, tc := range []struct {
		migrator bool
		wantPath string
	}{
		{false, reencrypt.PathRewrite},
		{true, reencrypt.PathStorageVersionMigration},
	} {
		t.Run(tc.wantPath, func(t *testing.T) {
			if tc.migrator {
				if err := env.StartStorageVersionMigrator(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(env.StopStorageVersionMigrator)
			}
			makeSecrets(t, ns, 5) // under the previous key
			key := rotate(t, ctx)
			o := options(t, ns, gate)
			o.Name, o.KeyID, o.Method = "auto", key, reencrypt.MethodAuto
			o.Resources = []string{"secrets", "configmaps"}
			rec, err := reencrypt.Run(ctx, env.RESTConfig(), o)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Path != tc.wantPath || !rec.Complete() {
				t.Fatalf("record %+v: want a finished run by %s", rec, tc.wantPath)
			}
			for _, prefix := range []string{"secrets/", "configmaps/"} {
				for k, id := range storedUnder(t, ctx, prefix) {
					if id != key {
						t.Errorf("%s is stored under key %q after the run, want %s", k, id, key)
					}
				}
			}
			// The next subtest writes its Secrets again under this key.
			for i := range 5 {
				if err := env.Clientset().CoreV1().Secrets(ns).Delete(ctx, fmt.Sprintf("s-%03d", i), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
