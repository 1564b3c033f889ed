package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// writeBoth writes one Secret and one ConfigMap named name in default.
func writeBoth(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	c := env.Clientset().CoreV1()
	if _, err := c.Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Secret %s: %v", name, err)
	}
	if _, err := c.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap %s: %v", name, err)
	}
}

// storedUnder reads the key ID the object's etcd value names.
func storedUnder(ctx context.Context, t *testing.T, resource, name string) string {
	t.Helper()
	key := "/registry/" + resource + "/default/" + name
	got, err := env.StoredKeyIDs(ctx, resource+"/default/"+name)
	if err != nil {
		t.Fatalf("StoredKeyIDs: %v", err)
	}
	id, ok := got[key]
	if !ok {
		t.Fatalf("etcd has no %s (got %v)", key, got)
	}
	return id
}

// TestKeyRotation is serial: it rotates the bed's one KMS key, which every
// object written after it is encrypted under.
//
// Secrets and ConfigMaps are both stored under the plugin's key as etcd
// shows it; after SetKeyID, WaitKeyInUse returns once the API server
// writes under the new key, objects written before keep naming the old
// one, objects written after name the new one.
func TestKeyRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := env.KMS.KeyID()
	writeBoth(ctx, t, "rotation-before")
	for _, r := range EncryptedResources {
		if got := storedUnder(ctx, t, r, "rotation-before"); got != before {
			t.Fatalf("%s written under key %q is stored under %q", r, before, got)
		}
	}

	after := before + "-rotated"
	// The bed stays on the new key: no other test here needs a particular
	// one, and rotating back would cost another wait of up to 20 s.
	env.KMS.SetKeyID(after)
	start := time.Now()
	if err := env.WaitKeyInUse(ctx, after); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver took the new key %s after SetKeyID", time.Since(start).Round(time.Millisecond))

	writeBoth(ctx, t, "rotation-after")
	for _, r := range EncryptedResources {
		if got := storedUnder(ctx, t, r, "rotation-before"); got != before {
			t.Errorf("%s written before the rotation now stored under %q, want still %q (nothing rewrote it)", r, got, before)
		}
		if got := storedUnder(ctx, t, r, "rotation-after"); got != after {
			t.Errorf("%s written after WaitKeyInUse stored under %q, want %q", r, got, after)
		}
	}

	// Every value under the prefix is reported, and an object the API
	// server has not encrypted (none here: the bed encrypts from the start)
	// would map to "".
	all, err := env.StoredKeyIDs(ctx, "secrets/")
	if err != nil {
		t.Fatal(err)
	}
	for k, id := range all {
		if id != before && id != after {
			t.Errorf("etcd %s stored under %q, want %q or %q", k, id, before, after)
		}
	}
}

// TestStorageVersionMigrationServed is serial: it starts and stops the
// bed's one storage version migrator.
//
// The API is served; the migrator starts once, runs a migration to
// Succeeded, and stops.
func TestStorageVersionMigrationServed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := env.Clientset().Discovery().ServerResourcesForGroupVersion("storagemigration.k8s.io/v1beta1")
	if err != nil {
		t.Fatalf("discovery of storagemigration.k8s.io/v1beta1: %v", err)
	}
	found := false
	for _, r := range res.APIResources {
		found = found || r.Name == "storageversionmigrations"
	}
	if !found {
		t.Fatalf("storagemigration.k8s.io/v1beta1 lacks storageversionmigrations: %+v", res.APIResources)
	}
	if err := env.StartStorageVersionMigrator(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.StartStorageVersionMigrator(ctx); err == nil {
		t.Error("a second StartStorageVersionMigrator succeeded, want an error")
	}

	// A migration of ConfigMaps runs to Succeeded, and the bed wrote its
	// nudge for it (else the migrator would wait for a watch bookmark).
	svms := env.Clientset().StoragemigrationV1beta1().StorageVersionMigrations()
	m, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-"},
		Spec:       svmv1beta1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: "configmaps"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svms.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	start := time.Now()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = "metadata.name=" + m.Name
			return svms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "metadata.name=" + m.Name
			return svms.Watch(ctx, o)
		},
	}
	if _, err := watchtools.UntilWithSync(ctx, lw, &svmv1beta1.StorageVersionMigration{}, nil, func(ev watch.Event) (bool, error) {
		s, ok := ev.Object.(*svmv1beta1.StorageVersionMigration)
		if ok && apimeta.IsStatusConditionTrue(s.Status.Conditions, string(svmv1beta1.MigrationFailed)) {
			return false, fmt.Errorf("migration failed: %+v", s.Status.Conditions)
		}
		return ok && apimeta.IsStatusConditionTrue(s.Status.Conditions, string(svmv1beta1.MigrationSucceeded)), nil
	}); err != nil {
		t.Fatalf("migration %s of configmaps: %v", m.Name, err)
	}
	t.Logf("migration of configmaps succeeded in %s", time.Since(start).Round(time.Millisecond))
	nudge, err := env.Clientset().CoreV1().ConfigMaps("default").Get(ctx, svmNudgeName, metav1.GetOptions{})
	if err != nil || nudge.Data["uid"] != string(m.UID) {
		t.Errorf("nudge ConfigMap for migration %s: %v, %v", m.UID, nudge.Data, err)
	}
	env.StopStorageVersionMigrator()
	env.StopStorageVersionMigrator() // a no-op
}
