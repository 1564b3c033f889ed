package testenv

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var env *Env

func TestMain(m *testing.M) { Main(m, func(e *Env) { env = e }) }

// TestSecretsEncryptedThroughKMSv2 proves the wiring end to end: a Secret
// written through the API server lands in etcd sealed by the KMS v2 plugin,
// and reads back in clear through the API server.
func TestSecretsEncryptedThroughKMSv2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "kms-wiring", Namespace: "default"},
		StringData: map[string]string{"password": "hunter2-plaintext-marker"},
	}
	if _, err := env.Clientset().CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{env.EtcdEndpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer func() { _ = etcd.Close() }()
	resp, err := etcd.Get(ctx, "/registry/secrets/default/kms-wiring")
	if err != nil {
		t.Fatalf("etcd get: %v", err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd holds %d values for the secret, want 1", len(resp.Kvs))
	}
	raw := resp.Kvs[0].Value
	wantPrefix := "k8s:enc:kms:v2:" + KMSProviderName + ":"
	if !strings.HasPrefix(string(raw), wantPrefix) {
		t.Fatalf("etcd value starts %q, want prefix %q", raw[:min(len(raw), 40)], wantPrefix)
	}
	if bytes.Contains(raw, []byte("hunter2-plaintext-marker")) {
		t.Fatal("etcd value contains the plaintext")
	}

	got, err := env.Clientset().CoreV1().Secrets("default").Get(ctx, "kms-wiring", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if string(got.Data["password"]) != "hunter2-plaintext-marker" {
		t.Fatalf("read back %q", got.Data["password"])
	}
}

// TestServerReportsRealVersion guards the kube-testserver ldflags: clients
// must see a real v1.35 server, not v0.0.0-master.
func TestServerReportsRealVersion(t *testing.T) {
	v, err := env.Clientset().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != "1" || !strings.HasPrefix(v.GitVersion, "v1.35.") {
		t.Fatalf("server version %+v, want v1.35.x", v)
	}
}
