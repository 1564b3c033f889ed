package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
)

// EncryptedResources are the resources the bed's EncryptionConfiguration
// encrypts through the KMS v2 plugin (identity stays the fallback reader).
var EncryptedResources = []string{"secrets", "configmaps"}

// StoredKeyIDs reads etcd directly (the bed owns it) and returns, for every
// key under /registry/<prefix>, the KMS key ID its stored value was
// encrypted under: prefix is e.g. "secrets/", "configmaps/" or
// "secrets/<namespace>/". A value not written through a KMS v2 provider
// (identity, before encryption was configured) maps to "" — a key ID is
// never empty. A KMS v2 value that does not parse is an error.
func (e *Env) StoredKeyIDs(ctx context.Context, prefix string) (map[string]string, error) {
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{e.EtcdEndpoint}, DialTimeout: 5 * time.Second, Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("connect to the bed's etcd %s: %w", e.EtcdEndpoint, err)
	}
	defer func() { _ = etcd.Close() }()
	full := "/registry/" + strings.TrimPrefix(prefix, "/")
	resp, err := etcd.Get(ctx, full, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read %s* from etcd: %w", full, err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		env, err := kmstest.ParseEnvelope(kv.Value)
		switch {
		case errors.Is(err, kmstest.ErrNotKMSv2):
			out[string(kv.Key)] = ""
		case err != nil:
			return nil, fmt.Errorf("etcd key %s: %w", kv.Key, err)
		default:
			out[string(kv.Key)] = env.KeyID
		}
	}
	return out, nil
}

// keyCanary is the Secret WaitKeyInUse writes to see which key the API
// server encrypts under.
const keyCanary = "kmshealth-testenv-key-canary"

// kmsNudge is how often WaitKeyInUse asks kube-apiserver's KMS health
// check, which calls the plugin's Status once its cached answer is older
// than 20 s.
const kmsNudge = time.Second

// WaitKeyInUse waits until kube-apiserver encrypts new writes under keyID,
// typically after e.KMS.SetKeyID(keyID), and proves it from etcd.
//
// kube-apiserver learns the plugin's key ID only from Status: its own loop
// calls it every 60 s, and GET /healthz/kms-providers calls it when the
// last answer is older than 20 s (k8s.io/apiserver
// pkg/server/options/encryptionconfig: kmsv2PluginHealthzPositiveInterval,
// kmsPluginHealthzPositiveTTL). On a new key ID it calls Encrypt to wrap a
// new data key and switches to it. So after a rotation the API server goes
// on writing under the old key for up to 20 s while it is asked (this
// helper asks every second) and up to 60 s when nobody asks; this is the
// delay a re-encryption must wait out (the gate: the plugins'
// reports agree on the new key, then the API server has to pick it up).
//
// The signal waited on is the plugin's own Encrypt under keyID
// (kmstest.Plugin.Encrypted); one more health check then returns only
// after the API server's rotation (it holds the probe's lock) has stored
// the new data key, and a canary Secret written after that must be stored
// under keyID in etcd, else this returns an error.
func (e *Env) WaitKeyInUse(ctx context.Context, keyID string) error {
	if keyID == "" {
		return errors.New("WaitKeyInUse: keyID is empty")
	}
	client, err := kubernetes.NewForConfig(e.RESTConfig())
	if err != nil {
		return fmt.Errorf("client for %s: %w", e.Host, err)
	}
	healthz := func() error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/healthz/kms-providers").DoRaw(ctx)
		return err
	}
	taken := e.KMS.Encrypted(keyID)
	tick := time.NewTicker(kmsNudge)
	defer tick.Stop()
	started := time.Now()
wait:
	for {
		// An error here is the plugin's, or the server's, while it is
		// unhealthy; the caller set that up, and the deadline reports it.
		_ = healthz()
		select {
		case <-taken:
			break wait
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver did not take KMS key ID %q within %s (plugin's current key: %q): %w",
				keyID, time.Since(started).Round(time.Millisecond), e.KMS.KeyID(), ctx.Err())
		}
	}
	if err := healthz(); err != nil {
		return fmt.Errorf("KMS health check after the plugin wrapped a data key under %q: %w", keyID, err)
	}

	secrets := client.CoreV1().Secrets(metav1.NamespaceDefault)
	canary := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: keyCanary},
		StringData: map[string]string{"keyID": keyID, "at": time.Now().UTC().Format(time.RFC3339Nano)},
	}
	if _, err := secrets.Update(ctx, canary, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, canary, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create key canary Secret default/%s: %w", keyCanary, err)
		}
	} else if err != nil {
		return fmt.Errorf("update key canary Secret default/%s: %w", keyCanary, err)
	}
	stored, err := e.StoredKeyIDs(ctx, "secrets/default/"+keyCanary)
	if err != nil {
		return err
	}
	key := "/registry/secrets/default/" + keyCanary
	if got := stored[key]; got != keyID {
		return fmt.Errorf("the plugin wrapped a data key under %q, yet the canary written after it is stored under %q (etcd %s)", keyID, got, key)
	}
	return nil
}
