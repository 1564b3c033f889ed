package reencrypt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

var (
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// TestStorageVersionMigrationAvailable_withoutController is serial (the
// package's tests share one KMS key and one migrator). The bed's API
// server serves storagemigration.k8s.io but no controller carries
// migrations out, as on a cluster whose kube-controller-manager lacks the
// feature gate: the check must say so, name the controller, and leave no
// probe behind.
func TestStorageVersionMigrationAvailable_withoutController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env.StopStorageVersionMigrator()

	start := time.Now()
	ok, why, err := reencrypt.StorageVersionMigrationAvailable(ctx, env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatal("StorageVersionMigrationAvailable = true without a migrator running")
	}
	if !strings.Contains(why, "storage-version-migrator-controller") || !strings.Contains(why, "StorageVersionMigrator") {
		t.Errorf("why = %q, want it to name the controller and its feature gate", why)
	}
	t.Logf("not available after %s: %s", time.Since(start).Round(time.Millisecond), why)
	assertNoMigrationsOfOurs(ctx, t)

	// MigrateWithSVM on such a cluster waits until its context ends and
	// still removes its migration.
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	if err := reencrypt.MigrateWithSVM(short, env.RESTConfig(), secretsGVR, "no-controller", t.Logf); err == nil {
		t.Fatal("MigrateWithSVM succeeded without a migrator")
	}
	assertNoMigrationsOfOurs(ctx, t)
}

// TestMigrateWithSVM is serial: it starts the bed's storage version
// migrator and rotates the package's KMS key. (The bed writes one Secret or
// ConfigMap when a migration of them is queued, so the migrator starts at
// once rather than at its informer's next bookmark; see
// testenv.Env.StartStorageVersionMigrator.)
//
// Objects written under key 1, the plugin rotated to key 2 and the API
// server on it: after MigrateWithSVM for secrets and configmaps, every
// Secret and ConfigMap in etcd names key 2, and no migration of ours is
// left.
func TestMigrateWithSVM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := env.StartStorageVersionMigrator(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.StopStorageVersionMigrator)

	start := time.Now()
	ok, why, err := reencrypt.StorageVersionMigrationAvailable(ctx, env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("StorageVersionMigrationAvailable = false with the migrator running: %s", why)
	}
	t.Logf("available after %s", time.Since(start).Round(time.Millisecond))
	assertNoMigrationsOfOurs(ctx, t)

	key1 := env.KMS.KeyID()
	ns := "svm-" + strings.ToLower(fmt.Sprint(time.Now().UnixNano()))
	c := env.Clientset().CoreV1()
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 25
	for i := range n {
		name := fmt.Sprintf("obj-%02d", i)
		if _, err := c.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"i": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range testenv.EncryptedResources {
		stored, err := env.StoredKeyIDs(ctx, r+"/"+ns+"/")
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != n {
			t.Fatalf("etcd holds %d %s in %s, want %d", len(stored), r, ns, n)
		}
		for k, id := range stored {
			if id != key1 {
				t.Fatalf("%s stored under %q before the rotation, want %q", k, id, key1)
			}
		}
	}

	key2 := key1 + "-svm"
	env.KMS.SetKeyID(key2)
	if err := env.WaitKeyInUse(ctx, key2); err != nil {
		t.Fatal(err)
	}
	// Before the migration the objects still need key 1: the check below
	// can fail.
	if stale := storedNotUnder(ctx, t, "secrets/"+ns+"/", key2); len(stale) != n {
		t.Fatalf("%d Secrets of %s not under %q before the migration, want all %d", len(stale), ns, key2, n)
	}

	// A migration of ours left by an interrupted run (here one created
	// with our labels just before, which the migrator may have begun) is
	// replaced.
	svms := env.Clientset().StoragemigrationV1beta1().StorageVersionMigrations()
	leftover, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   reencrypt.SVMName("test-rotation", metav1.GroupResource{Resource: "secrets"}),
			Labels: map[string]string{kube.ManagedByLabel: kube.ManagedByValue, reencrypt.SVMLabel: "test-rotation"},
		},
		Spec: svmv1beta1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: "secrets"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for _, gvr := range []schema.GroupVersionResource{secretsGVR, configMapsGVR} {
		start := time.Now()
		if err := reencrypt.MigrateWithSVM(ctx, env.RESTConfig(), gvr, "test-rotation", t.Logf); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s migrated in %s", gvr.Resource, time.Since(start).Round(time.Millisecond))
	}
	for _, r := range testenv.EncryptedResources {
		if stale := storedNotUnder(ctx, t, r+"/", key2); len(stale) > 0 {
			t.Errorf("after the migration %d %s in etcd are not under %q: %v", len(stale), r, key2, stale)
		}
	}
	assertNoMigrationsOfOurs(ctx, t)
	if _, err := svms.Get(ctx, leftover.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("the leftover migration %s is still there", leftover.Name)
	}
}

// TestMigrateWithSVM_refusesForeign is serial with the others (it
// creates a cluster-scoped migration). A migration of the same name that
// is not ours is neither replaced nor deleted; one of ours left by an
// interrupted run is replaced.
func TestMigrateWithSVM_refusesForeign(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svms := env.Clientset().StoragemigrationV1beta1().StorageVersionMigrations()
	gr := metav1.GroupResource{Resource: "secrets"}
	name := reencrypt.SVMName("foreign", gr)
	foreign, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       svmv1beta1.StorageVersionMigrationSpec{Resource: gr},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svms.Delete(context.Background(), name, metav1.DeleteOptions{}) })

	err = reencrypt.MigrateWithSVM(ctx, env.RESTConfig(), secretsGVR, "foreign", t.Logf)
	if err == nil || !strings.Contains(err.Error(), "not this re-encryption's") {
		t.Fatalf("MigrateWithSVM over a foreign migration = %v, want a refusal", err)
	}
	got, err := svms.Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.UID != foreign.UID {
		t.Fatalf("the foreign migration was touched: %v, %v", got, err)
	}
}

func TestSVMName(t *testing.T) {
	for _, tc := range []struct {
		name string
		gr   metav1.GroupResource
		want string
	}{
		{"prod", metav1.GroupResource{Resource: "secrets"}, "kmshealth-reencryption-prod-secrets"},
		{"prod", metav1.GroupResource{Group: "example.com", Resource: "widgets"}, "kmshealth-reencryption-prod-widgets.example.com"},
		{strings.Repeat("n", 250), metav1.GroupResource{Resource: "secrets"}, "kmshealth-reencryption-"},
		{"Upper_case", metav1.GroupResource{Resource: "secrets"}, "kmshealth-reencryption-"},
	} {
		got := reencrypt.SVMName(tc.name, tc.gr)
		if !strings.HasPrefix(got, tc.want) || (strings.HasSuffix(tc.want, "-") && len(got) != len(tc.want)+16) {
			t.Errorf("SVMName(%q, %v) = %q, want %q (or it followed by 16 hex digits)", tc.name, tc.gr, got, tc.want)
		}
		if len(got) > 253 {
			t.Errorf("SVMName(%q, %v) is %d long", tc.name, tc.gr, len(got))
		}
	}
}

// storedNotUnder lists the etcd keys under prefix not stored under keyID.
func storedNotUnder(ctx context.Context, t *testing.T, prefix, keyID string) []string {
	t.Helper()
	stored, err := env.StoredKeyIDs(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k, id := range stored {
		if id != keyID {
			out = append(out, fmt.Sprintf("%s (%q)", k, id))
		}
	}
	return out
}

func assertNoMigrationsOfOurs(ctx context.Context, t *testing.T) {
	t.Helper()
	list, err := env.Clientset().StoragemigrationV1beta1().StorageVersionMigrations().List(ctx, metav1.ListOptions{
		LabelSelector: kube.ManagedByLabel + "=" + kube.ManagedByValue,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		t.Errorf("StorageVersionMigration %s of ours left behind (labels %v)", s.Name, s.Labels)
	}
}
