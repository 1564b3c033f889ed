package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// fakePod is a ServiceAccount directory as kubelet mounts it, with the
// files named in files ("token", "ca.crt") and the environment variables
// of a pod whose API server Service is at 10.96.0.1:443.
func fakePod(t *testing.T, files ...string) (map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		content := []byte("sa-token-from-file")
		if f == "ca.crt" {
			content = testpki.MustCertPEM("kubernetes", testpki.Options{})
		}
		if err := os.WriteFile(filepath.Join(dir, f), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, dir
}

// configured is what the provider does: the attributes merged over the
// environment (FromEnv), with the ServiceAccount directory injected.
func configured(t *testing.T, attrs Config, env map[string]string, saDir string) Config {
	t.Helper()
	defaults, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	defaults.Pod.ServiceAccountDir = saDir
	return attrs.Merge(defaults)
}

func TestInCluster(t *testing.T) {
	t.Run("nothing configured in a pod: the ServiceAccount", func(t *testing.T) {
		env, dir := fakePod(t, "token", "ca.crt")
		conn, err := NewLazy(configured(t, Config{}, env, dir), "ua").Connection()
		if err != nil {
			t.Fatalf("Connection() unexpected error: %v", err)
		}
		cfg := conn.REST
		if cfg.Host != "https://10.96.0.1:443" || cfg.BearerToken != "sa-token-from-file" ||
			cfg.BearerTokenFile != filepath.Join(dir, "token") || cfg.CAFile != filepath.Join(dir, "ca.crt") {
			t.Errorf("in-cluster config host, token, token file, CA file = %q, %q, %q, %q; want the pod's",
				cfg.Host, cfg.BearerToken, cfg.BearerTokenFile, cfg.CAFile)
		}
		if cfg.UserAgent != "ua" || cfg.QPS != 50 {
			t.Errorf("in-cluster config UserAgent, QPS = %q, %v, want ua, 50", cfg.UserAgent, cfg.QPS)
		}
		if !conn.InCluster || !strings.Contains(conn.ServerFrom, "KUBERNETES_SERVICE_HOST") ||
			!strings.Contains(strings.Join(conn.Credentials, ";"), "ServiceAccount token") {
			t.Errorf("Connection = %+v, want it to say in-cluster, KUBERNETES_SERVICE_HOST and the ServiceAccount token", conn)
		}
	})

	t.Run("IPv6 service host", func(t *testing.T) {
		env, dir := fakePod(t, "token", "ca.crt")
		env["KUBERNETES_SERVICE_HOST"] = "fd00::1"
		cfg, err := configured(t, Config{}, env, dir).RESTConfig("ua")
		if err != nil || cfg.Host != "https://[fd00::1]:443" {
			t.Fatalf("RESTConfig() = %v, %v, want host https://[fd00::1]:443", cfg, err)
		}
	})

	t.Run("KUBE_TOKEN replaces the ServiceAccount token, as in hashicorp/kubernetes", func(t *testing.T) {
		env, dir := fakePod(t, "ca.crt") // no token file needed then
		env["KUBE_TOKEN"] = "other-token"
		conn, err := configured(t, Config{}, env, dir).Connect("ua")
		if err != nil {
			t.Fatalf("Connect() unexpected error: %v", err)
		}
		if conn.REST.BearerToken != "other-token" || conn.REST.BearerTokenFile != "" || conn.REST.Host != "https://10.96.0.1:443" {
			t.Errorf("in-cluster config token, token file, host = %q, %q, %q, want other-token, none, the pod's", conn.REST.BearerToken, conn.REST.BearerTokenFile, conn.REST.Host)
		}
		if got := strings.Join(conn.Credentials, ";"); !strings.Contains(got, "KUBE_TOKEN environment variable") {
			t.Errorf("Credentials = %q, want it to name KUBE_TOKEN", got)
		}
	})

	t.Run("host in a pod: no in-cluster", func(t *testing.T) {
		env, dir := fakePod(t, "token", "ca.crt")
		conn, err := configured(t, Config{Host: "https://elsewhere.example.test", Token: "t"}, env, dir).Connect("ua")
		if err != nil {
			t.Fatalf("Connect() unexpected error: %v", err)
		}
		if conn.InCluster || conn.REST.Host != "https://elsewhere.example.test" || conn.REST.CAFile != "" {
			t.Errorf("Connection = %+v, want the configured host and nothing of the pod", conn)
		}
	})

	t.Run("KUBE_CONFIG_PATH in a pod: no in-cluster", func(t *testing.T) {
		env, dir := fakePod(t, "token", "ca.crt")
		env["KUBE_CONFIG_PATH"] = writeFile(t, "config", twoContexts)
		conn, err := configured(t, Config{}, env, dir).Connect("ua")
		if err != nil {
			t.Fatalf("Connect() unexpected error: %v", err)
		}
		if conn.InCluster || conn.REST.Host != "https://alpha.example.test:6443" {
			t.Errorf("Connection = %+v, want the kubeconfig's server", conn)
		}
	})

	t.Run("no ca.crt: system roots, and the message says so", func(t *testing.T) {
		env, dir := fakePod(t, "token")
		conn, err := configured(t, Config{}, env, dir).Connect("ua")
		if err != nil {
			t.Fatalf("Connect() unexpected error: %v", err)
		}
		if conn.REST.CAFile != "" || !strings.Contains(conn.ServerFrom, "system's root CAs") {
			t.Errorf("CAFile, ServerFrom = %q, %q; want none and a note on the system roots", conn.REST.CAFile, conn.ServerFrom)
		}
	})

	errorCases := []struct {
		name  string
		attrs Config
		env   map[string]string // added to the pod's
		files []string
		want  []string
	}{
		{name: "no token file", files: []string{"ca.crt"}, want: []string{"running in a pod (KUBERNETES_SERVICE_HOST=10.96.0.1) without a readable ServiceAccount token", "token", "automountServiceAccountToken: true"}},
		{name: "client certificate needs a host", attrs: Config{ClientCertificate: testCert, ClientKey: testKey}, files: []string{"token", "ca.crt"},
			want: []string{"client_certificate, client_key set, but neither host nor config_path/config_paths", "takes nothing but a token", "set host (e.g. https://kubernetes.default.svc)"}},
		{name: "KUBE_INSECURE needs a host", env: map[string]string{"KUBE_INSECURE": "true"}, files: []string{"token", "ca.crt"},
			want: []string{"KUBE_INSECURE set, but neither host"}},
		{name: "exec needs a host", attrs: Config{Exec: &Exec{APIVersion: "client.authentication.k8s.io/v1", Command: "get-token"}}, files: []string{"token", "ca.crt"},
			want: []string{"exec set, but neither host"}},
		{name: "basic auth needs a host", env: map[string]string{"KUBE_USER": "bob", "KUBE_PASSWORD": "pw"}, files: []string{"token", "ca.crt"},
			want: []string{"KUBE_USER, KUBE_PASSWORD set"}},
	}
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			env, dir := fakePod(t, tt.files...)
			for k, v := range tt.env {
				env[k] = v
			}
			_, err := configured(t, tt.attrs, env, dir).Connect("ua")
			if err == nil {
				t.Fatal("Connect() succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Connect() error = %q, want it to contain %q", err, w)
				}
			}
		})
	}

	t.Run("outside a pod, nothing configured: the clear error", func(t *testing.T) {
		_, dir := fakePod(t, "token", "ca.crt") // files alone do not make a pod
		for _, env := range []map[string]string{nil, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}} {
			_, err := configured(t, Config{}, env, dir).Connect("ua")
			if err == nil || !strings.Contains(err.Error(), "no Kubernetes connection configured") {
				t.Errorf("env %v: Connect() error = %v, want the no-configuration error", env, err)
			}
		}
	})
}

// TestConnectionDescribes: a Connection says which settings chose the
// server and the credentials, naming the KUBE_* variable when the value
// came from one.
func TestConnectionDescribes(t *testing.T) {
	kubeconfig := writeFile(t, "config", twoContexts)
	cert := string(testpki.MustCertPEM("alice", testpki.Options{NotCA: true}))
	tests := []struct {
		name     string
		attrs    Config
		env      map[string]string
		wantFrom []string
		wantCred []string
	}{
		{name: "host attribute, token from KUBE_TOKEN", attrs: Config{Host: "https://h"}, env: map[string]string{"KUBE_TOKEN": "t"},
			wantFrom: []string{"the host attribute"}, wantCred: []string{"bearer token from the KUBE_TOKEN environment variable"}},
		{name: "KUBE_HOST, client certificate attribute", attrs: Config{ClientCertificate: cert, ClientKey: testKey}, env: map[string]string{"KUBE_HOST": "https://h"},
			wantFrom: []string{"the KUBE_HOST environment variable"}, wantCred: []string{`client certificate (subject "CN=alice", valid until`, "from the client_certificate attribute"}},
		{name: "kubeconfig from KUBE_CONFIG_PATH, current context", env: map[string]string{"KUBE_CONFIG_PATH": kubeconfig},
			wantFrom: []string{`the server of cluster "alpha" of context "alpha" (the current context) in kubeconfig "` + kubeconfig + `" (KUBE_CONFIG_PATH environment variable)`},
			wantCred: []string{`bearer token of the kubeconfig user "alpha"`}},
		{name: "kubeconfig, config_context and KUBE_CTX_CLUSTER", attrs: Config{ConfigPath: kubeconfig, ConfigContext: "beta"}, env: map[string]string{"KUBE_CTX_CLUSTER": "alpha"},
			wantFrom: []string{`cluster "alpha" (chosen by the KUBE_CTX_CLUSTER environment variable) of context "beta" (chosen by the config_context attribute)`, "(config_path attribute)"},
			wantCred: []string{`user "beta"`}},
		{name: "host overrides the kubeconfig", attrs: Config{ConfigPath: kubeconfig, Host: "https://h"},
			wantFrom: []string{"the host attribute (it overrides the kubeconfig's server)"}},
		{name: "basic auth from KUBE_USER", attrs: Config{Host: "https://h"}, env: map[string]string{"KUBE_USER": "bob", "KUBE_PASSWORD": "pw"},
			wantCred: []string{`basic auth as "bob" from the KUBE_USER environment variable`}},
		{name: "exec block", attrs: Config{Host: "https://h", Exec: &Exec{APIVersion: "client.authentication.k8s.io/v1", Command: "get-token"}},
			wantCred: []string{`exec plugin "get-token" from the exec block`}},
		{name: "anonymous", attrs: Config{Host: "https://h"}, wantCred: []string{"none: requests are anonymous"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := configured(t, tt.attrs, tt.env, "").Connect("ua")
			if err != nil {
				t.Fatalf("Connect() unexpected error: %v", err)
			}
			creds := strings.Join(conn.Credentials, "; ")
			for _, w := range tt.wantFrom {
				if !strings.Contains(conn.ServerFrom, w) {
					t.Errorf("ServerFrom = %q, want it to contain %q", conn.ServerFrom, w)
				}
			}
			for _, w := range tt.wantCred {
				if !strings.Contains(creds, w) {
					t.Errorf("Credentials = %q, want them to contain %q", creds, w)
				}
			}
		})
	}

	t.Run("proxy_url from KUBE_PROXY_URL, password redacted", func(t *testing.T) {
		conn, err := configured(t, Config{Host: "https://h"}, map[string]string{"KUBE_PROXY_URL": "http://u:hunter2@proxy:3128"}, "").Connect("ua")
		if err != nil {
			t.Fatalf("Connect() unexpected error: %v", err)
		}
		if want := "http://u:xxxxx@proxy:3128 (KUBE_PROXY_URL environment variable)"; conn.Proxy != want {
			t.Errorf("Proxy = %q, want %q", conn.Proxy, want)
		}
	})
}
