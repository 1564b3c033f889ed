package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

const keyUsageAddr = "data.kmshealth_kms_key_usage.test"

// keyUsageConfig is a kmshealth_kms_key_usage "test" with the given body.
func keyUsageConfig(body string) string {
	return providerBlock() + "\ndata \"kmshealth_kms_key_usage\" \"test\" {\n" + body + "\n}\n"
}

// writeRunRecord writes the record of the re-encryption namespace/name as
// kmshealth_kms_reencryption does: a run under keyID over the Secrets,
// finished at finished (unfinished when zero), over Secrets and ConfigMaps.
func writeRunRecord(t *testing.T, namespace, name, keyID string, started, finished time.Time) {
	t.Helper()
	ctx := context.Background()
	rec := reencrypt.Record{KeyID: keyID, Resources: []string{"secrets", "configmaps"}, Path: reencrypt.PathRewrite, StartedAt: metav1.NewTime(started)}
	if !finished.IsZero() {
		at := metav1.NewTime(finished)
		rec.FinishedAt = &at
		rec.Progress = []reencrypt.ResourceProgress{{Resource: "secrets", Complete: true}, {Resource: "configmaps", Complete: true}}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	cms := env.Clientset().CoreV1().ConfigMaps(namespace)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: reencrypt.RecordName(name)}, Data: map[string]string{reencrypt.RecordKey: string(b)}}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("write re-encryption record: %v", err)
	}
}

// rewriteEncrypted updates every Secret and ConfigMap of the cluster
// unchanged but those named in skip ("namespace/name" of a Secret), which
// stores each under the API server's current key: what the re-encryption
// resource's rewrite path does. ConfigMaps too, as the test bed may encrypt
// them. A conflict means someone else just wrote the object, which
// re-encrypted it.
func rewriteEncrypted(t *testing.T, skip ...string) {
	t.Helper()
	ctx := context.Background()
	core := env.Clientset().CoreV1()
	secrets, err := core.Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		key := s.Namespace + "/" + s.Name
		if slices.Contains(skip, key) {
			continue
		}
		_, err := core.Secrets(s.Namespace).Update(ctx, &s, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("rewrite Secret %s: %v", key, err)
		}
	}
	configMaps, err := core.ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configMaps.Items {
		_, err := core.ConfigMaps(c.Namespace).Update(ctx, &c, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("rewrite ConfigMap %s/%s: %v", c.Namespace, c.Name, err)
		}
	}
}

// restartAfter restarts kube-apiserver so that its reported start is at
// least kmshealth.StartedAfterMargin after the recorded time at, and waits
// until its watch caches of Secrets and ConfigMaps finished their initial
// lists, which read and decrypt every stored object.
func restartAfter(t *testing.T, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Not a synchronisation: the process must start late enough by the wall
	// clock, and nothing signals that. The extra second: the reported start
	// (process_start_time_seconds) may be up to a second early.
	down := func() { time.Sleep(time.Until(at.Add(kmshealth.StartedAfterMargin + time.Second))) }
	if err := env.RestartAPIServer(ctx, down); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	// kube-apiserver offers no watch of its own metrics: poll them.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		body, err := env.Clientset().Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err == nil {
			u, perr := kmshealth.ParseKeyUsage(body)
			if perr != nil {
				t.Fatal(perr)
			}
			if u.WatchCacheInitializations["secrets"] > 0 && u.WatchCacheInitializations["configmaps"] > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Secrets and ConfigMaps watch caches of the restarted kube-apiserver did not initialize (last error %v)", err)
		case <-tick.C:
		}
	}
}

// TestAccKMSKeyUsage_retire carries a rotation through on the test API
// server and reads retire_ready at each step: false while the run is
// unfinished, while kube-apiserver has not restarted since it finished,
// and while one Secret is still under the old key (its start decrypted it);
// true once every Secret is rewritten and kube-apiserver started again.
func TestAccKMSKeyUsage_retire(t *testing.T) {
	// Serial: it rotates the package API server's KMS key, rewrites every
	// Secret of the cluster and restarts kube-apiserver three times, which
	// parallel tests would see as outages and as writes under their feet.
	tg := newKMSHealthTarget(t)
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	oldKey := env.KMS.KeyID()
	newKey := oldKey + "-keyuse" // sorts after oldKey: keys.0 is the old key, keys.1 the new
	for i := range 3 {
		mustCreateSecret(t, ns, fmt.Sprintf("s%d", i), map[string][]byte{"k": []byte("v")})
	}
	left := ns + "/s2" // the Secret the first run misses

	// The rotation: the plugin returns the new key; kube-apiserver takes it
	// at its start (its Status poll would, within a minute).
	env.KMS.SetKeyID(newKey)
	restartAfter(t, time.Now())
	mustReport(t, tg, "cp-1", healthyPlugin("1", newKey, reportNow()))
	started := time.Now()
	writeRunRecord(t, ns, "rotate", newKey, started, time.Time{})

	ref := ns + "/rotate"
	config := keyUsageConfig(targetArg(tg) + fmt.Sprintf("retire_key_id = %q\nreencryption = %q\n", oldKey, ref))
	reason := func(parts ...string) resource.TestCheckFunc {
		return resource.TestMatchResourceAttr(keyUsageAddr, "retire_reason", literalRE(parts...))
	}
	var finished time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(keyUsageAddr, "retire_ready", "false"),
					reason("re-encryption run "+ref+" has not finished"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.#", "2"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.key_id", oldKey),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.active", "false"),
					// The restart read every Secret written before it under the old key.
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.in_use", "true"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.1.key_id", newKey),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.1.key_id_hash", mustKeyIDHash(t, newKey)),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.1.active", "true"),
					resource.TestCheckResourceAttr(keyUsageAddr, "active_key_id_hash", mustKeyIDHash(t, newKey)),
				),
			},
			// The run rewrites every Secret but one and finishes; this
			// kube-apiserver started before, so it proves nothing yet.
			{
				PreConfig: func() {
					rewriteEncrypted(t, left)
					finished = time.Now()
					writeRunRecord(t, ns, "rotate", newKey, started, finished)
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(keyUsageAddr, "retire_ready", "false"),
					reason("before re-encryption run "+ref+" finished", "restart it"),
					resource.TestMatchResourceAttr(keyUsageAddr, "keys.1.to_storage", regexp.MustCompile(`^[1-9][0-9]*$`)),
				),
			},
			// Restarted: its start decrypted the one Secret left under the old key.
			{
				PreConfig: func() { restartAfter(t, finished) },
				Config:    config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(keyUsageAddr, "retire_ready", "false"),
					reason(fmt.Sprintf("decrypted 1 object(s) with key %q since it started", oldKey)),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.from_storage", "1"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.in_use", "true"),
					resource.TestCheckResourceAttrSet(keyUsageAddr, "keys.0.last_from_storage"),
				),
			},
			// The run again, complete this time, and a restart after it.
			{
				PreConfig: func() {
					rewriteEncrypted(t)
					finished = time.Now()
					writeRunRecord(t, ns, "rotate", newKey, started, finished)
					restartAfter(t, finished)
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(keyUsageAddr, "retire_ready", "true"),
					reason("after re-encryption run "+ref+" finished", fmt.Sprintf("decrypted none with key %q", oldKey), "every other kube-apiserver"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.from_storage", "0"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.in_use", "false"),
					resource.TestCheckNoResourceAttr(keyUsageAddr, "keys.0.last_from_storage"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.1.in_use", "true"),
					resource.TestCheckResourceAttr(keyUsageAddr, "unknown_key_id_hashes.#", "0"),
				),
			},
			// The new key is not retirable: the run re-encrypted under it.
			{
				Config: keyUsageConfig(targetArg(tg) + fmt.Sprintf("retire_key_id = %q\nreencryption = %q\n", newKey, ref)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(keyUsageAddr, "retire_ready", "false"),
					reason(fmt.Sprintf("re-encrypted under %q, the key to retire", newKey)),
				),
			},
			// A run that was never recorded.
			{
				Config: keyUsageConfig(targetArg(tg) + fmt.Sprintf("retire_key_id = %q\nreencryption = %q\n", oldKey, ns+"/never")),
				Check:  reason("no re-encryption run is recorded"),
			},
		},
	})
}

func mustKeyIDHash(t *testing.T, keyID string) string {
	t.Helper()
	h, err := kmshealth.KeyIDHash(keyID)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAccKMSKeyUsage_badInput: bad arguments fail the plan, naming the
// attribute and what it takes, before anything is read.
func TestAccKMSKeyUsage_badInput(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config:      keyUsageConfig(`retire_key_id = "1"`),
				ExpectError: literalRE("Invalid Attribute Combination", "These attributes must be configured together", "retire_key_id", "reencryption"),
			},
			{
				Config:      keyUsageConfig(`reencryption = "kube-system/rotate"`),
				ExpectError: literalRE("Invalid Attribute Combination", "These attributes must be configured together", "retire_key_id", "reencryption"),
			},
			{
				Config:      keyUsageConfig("retire_key_id = \"1\"\nreencryption = \"rotate-b\"\n"),
				ExpectError: literalRE("Invalid reencryption", `"rotate-b" is not <namespace>/<name> of a kmshealth_kms_reencryption, e.g. kube-system/rotate-b`),
			},
			{
				Config:      keyUsageConfig("retire_key_id = \"1\"\nreencryption = \"Kube/rotate\"\n"),
				ExpectError: literalRE("Invalid reencryption", `"Kube/rotate": namespace:`),
			},
			{
				Config:      keyUsageConfig("retire_key_id = \"\"\nreencryption = \"kube-system/rotate\"\n"),
				ExpectError: literalRE("Invalid retire_key_id", "the key ID is empty"),
			},
		},
	})
}

// TestAccKMSKeyUsage_forbidden: without get on /metrics the read fails,
// naming the rule to add; with it, the same credentials read.
func TestAccKMSKeyUsage_forbidden(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	mustReport(t, tg, "cp-1", healthyPlugin("1", env.KMS.KeyID(), reportNow()))
	ns, sa, changeRole := getOnlyReader(t, tg)
	config := fmt.Sprintf("provider \"kmshealth\" {\n  config_path = %q\n}\n\ndata \"kmshealth_kms_key_usage\" \"test\" {\n%s\n}\n",
		serviceAccountKubeconfig(t, ns, sa), targetArg(tg))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config:      config,
				ExpectError: literalRE("Cannot read kube-apiserver /metrics: forbidden", `nonResourceURLs: ["/metrics"], verbs: ["get"]`),
			},
			{
				PreConfig: func() {
					changeRole(func(role *rbacv1.ClusterRole) {
						role.Rules = append(role.Rules, rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}})
					})
				},
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.#", "1"),
					resource.TestCheckResourceAttr(keyUsageAddr, "keys.0.key_id", env.KMS.KeyID()),
					resource.TestCheckResourceAttr(keyUsageAddr, "retire_ready", "false"),
					reasonContains("retire_key_id is not set"),
					resource.TestCheckResourceAttrSet(keyUsageAddr, "apiserver_started_at"),
				),
			},
		},
	})
}

func reasonContains(s string) resource.TestCheckFunc {
	return resource.TestMatchResourceAttr(keyUsageAddr, "retire_reason", regexp.MustCompile(regexp.QuoteMeta(s)))
}

// TestKeyUsageJoin: the usage of each key ID is joined by its hash, and a
// hash kube-apiserver used that no key ID matches is listed as unknown
// (here key "1" of the captured rotation, when only "2" is reported).
func TestKeyUsageJoin(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "kmshealth", "testdata", "metrics", "restarted-one-left.txt"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := kmshealth.ParseKeyUsage(body)
	if err != nil {
		t.Fatal(err)
	}
	var m kmsKeyUsageModel
	m.setUsage(u, []string{"2", "2"})
	if len(m.Keys) != 1 {
		t.Fatalf("keys %+v, want one entry for key 2", m.Keys)
	}
	k := m.Keys[0]
	if k.KeyID.ValueString() != "2" || !k.Active.ValueBool() || !k.InUse.ValueBool() || k.FromStorage.ValueInt64() != 4 || k.ToStorage.ValueInt64() != 0 ||
		k.LastFromStorage.IsNull() || !k.LastToStorage.IsNull() {
		t.Errorf("key 2: %+v; want active, in use, 4 reads, no write", k)
	}
	if want := []string{mustKeyIDHash(t, "1")}; !slices.Equal(m.UnknownKeyIDHashes, want) {
		t.Errorf("unknown key hashes %v, want %v", m.UnknownKeyIDHashes, want)
	}
	if m.APIServerStartedAt.ValueString() != "2026-11-26T00:23:24Z" || m.ActiveKeyIDHash.ValueString() != mustKeyIDHash(t, "2") {
		t.Errorf("started at %s, active %s", m.APIServerStartedAt, m.ActiveKeyIDHash)
	}
}
