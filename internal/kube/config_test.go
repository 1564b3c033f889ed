package kube

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	testCA   = "-----BEGIN CERTIFICATE-----\nY2E=\n-----END CERTIFICATE-----\n"
	testCert = "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n"
	testKey  = "-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n"
)

// twoContexts is a kubeconfig whose current context is "alpha"; "beta"
// points at a different server and user.
const twoContexts = `apiVersion: v1
kind: Config
current-context: alpha
clusters:
- name: alpha
  cluster:
    server: https://alpha.example.test:6443
- name: beta
  cluster:
    server: https://beta.example.test:6443
contexts:
- name: alpha
  context: {cluster: alpha, user: alpha}
- name: beta
  context: {cluster: beta, user: beta}
users:
- name: alpha
  user: {token: alpha-token}
- name: beta
  user: {token: beta-token}
`

// gammaOnly is a second kubeconfig file adding context "gamma".
const gammaOnly = `apiVersion: v1
kind: Config
clusters:
- name: gamma
  cluster: {server: https://gamma.example.test:6443}
contexts:
- name: gamma
  context: {cluster: gamma, user: gamma}
users:
- name: gamma
  user: {token: gamma-token}
`

// writeFile writes content to name inside a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{name: "nothing set", env: nil, want: Config{}},
		{
			name: "every variable",
			env: map[string]string{
				"KUBE_HOST":                 "https://k8s.example.test",
				"KUBE_USER":                 "bob",
				"KUBE_PASSWORD":             "pw",
				"KUBE_TOKEN":                "tok",
				"KUBE_CLUSTER_CA_CERT_DATA": testCA,
				"KUBE_CLIENT_CERT_DATA":     testCert,
				"KUBE_CLIENT_KEY_DATA":      testKey,
				"KUBE_INSECURE":             "true",
				"KUBE_TLS_SERVER_NAME":      "api.internal",
				"KUBE_PROXY_URL":            "http://proxy.example.test:3128",
				"KUBE_CONFIG_PATH":          "/etc/kubeconfig",
				"KUBE_CTX":                  "prod",
				"KUBE_CTX_AUTH_INFO":        "admin",
				"KUBE_CTX_CLUSTER":          "prod-eu1",
				"KUBERNETES_SERVICE_HOST":   "10.96.0.1",
				"KUBERNETES_SERVICE_PORT":   "443",
			},
			want: Config{
				Host: "https://k8s.example.test", Username: "bob", Password: "pw", Token: "tok",
				ClusterCACertificate: testCA, ClientCertificate: testCert, ClientKey: testKey,
				Insecure: true, TLSServerName: "api.internal", ProxyURL: "http://proxy.example.test:3128",
				ConfigPath: "/etc/kubeconfig", ConfigContext: "prod", ConfigContextAuthInfo: "admin", ConfigContextCluster: "prod-eu1",
				Pod: Pod{ServiceHost: "10.96.0.1", ServicePort: "443"},
				fromEnv: []string{"host", "username", "password", "token", "cluster_ca_certificate", "client_certificate", "client_key",
					"tls_server_name", "proxy_url", "config_path", "config_context", "config_context_auth_info", "config_context_cluster", "insecure"},
			},
		},
		{
			name: "config paths list skips empty entries",
			env: map[string]string{
				"KUBE_CONFIG_PATHS": strings.Join([]string{"/a/config", "", "/b/config"}, string(os.PathListSeparator)),
				"KUBE_INSECURE":     "0",
			},
			want: Config{ConfigPaths: []string{"/a/config", "/b/config"}, fromEnv: []string{"config_paths"}},
		},
		{name: "bad insecure", env: map[string]string{"KUBE_INSECURE": "maybe"}, wantErr: `KUBE_INSECURE="maybe"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv() unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FromEnv() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestEnvVar: every attribute has the hashicorp/kubernetes variable.
func TestEnvVar(t *testing.T) {
	want := map[string]string{
		"host": "KUBE_HOST", "username": "KUBE_USER", "password": "KUBE_PASSWORD", "token": "KUBE_TOKEN",
		"cluster_ca_certificate": "KUBE_CLUSTER_CA_CERT_DATA", "client_certificate": "KUBE_CLIENT_CERT_DATA",
		"client_key": "KUBE_CLIENT_KEY_DATA", "insecure": "KUBE_INSECURE", "tls_server_name": "KUBE_TLS_SERVER_NAME",
		"proxy_url": "KUBE_PROXY_URL", "config_path": "KUBE_CONFIG_PATH", "config_paths": "KUBE_CONFIG_PATHS",
		"config_context": "KUBE_CTX", "config_context_auth_info": "KUBE_CTX_AUTH_INFO", "config_context_cluster": "KUBE_CTX_CLUSTER",
		"exec": "",
	}
	for attr, v := range want {
		if got := EnvVar(attr); got != v {
			t.Errorf("EnvVar(%q) = %q, want %q", attr, got, v)
		}
	}
}

func TestMerge(t *testing.T) {
	envExec := &Exec{Command: "env-plugin"}
	attrExec := &Exec{Command: "attr-plugin"}
	pod := Pod{ServiceHost: "10.96.0.1", ServicePort: "443"}
	env := Config{
		Host: "https://env", Username: "env-user", Password: "env-pw", Token: "env-token", ClusterCACertificate: "env-ca",
		ClientCertificate: "env-cert", ClientKey: "env-key", Insecure: true,
		TLSServerName: "env-sni", ProxyURL: "http://env-proxy", ConfigPaths: []string{"/env/a", "/env/b"},
		ConfigContext: "env-ctx", ConfigContextAuthInfo: "env-user", ConfigContextCluster: "env-cluster", Exec: envExec, Pod: pod,
	}
	everyEnvAttribute := []string{"host", "username", "password", "token", "cluster_ca_certificate", "client_certificate", "client_key",
		"tls_server_name", "proxy_url", "config_context", "config_context_auth_info", "config_context_cluster", "config_paths", "insecure"}
	withFromEnv := func(c Config, attrs ...string) Config { c.fromEnv = attrs; return c }
	tests := []struct {
		name  string
		attrs Config
		want  Config
	}{
		{name: "nothing explicit takes every default", attrs: Config{}, want: withFromEnv(env, everyEnvAttribute...)},
		{
			name: "explicit attributes win",
			attrs: Config{
				Host: "https://attr", Username: "attr-user", Password: "attr-pw", Token: "attr-token", ClusterCACertificate: "attr-ca",
				ClientCertificate: "attr-cert", ClientKey: "attr-key",
				TLSServerName: "attr-sni", ProxyURL: "http://attr-proxy", ConfigPaths: []string{"/attr"},
				ConfigContext: "attr-ctx", ConfigContextAuthInfo: "attr-user", ConfigContextCluster: "attr-cluster", Exec: attrExec,
			},
			want: Config{
				Host: "https://attr", Username: "attr-user", Password: "attr-pw", Token: "attr-token", ClusterCACertificate: "attr-ca",
				ClientCertificate: "attr-cert", ClientKey: "attr-key", Insecure: true,
				TLSServerName: "attr-sni", ProxyURL: "http://attr-proxy", ConfigPaths: []string{"/attr"},
				ConfigContext: "attr-ctx", ConfigContextAuthInfo: "attr-user", ConfigContextCluster: "attr-cluster", Exec: attrExec, Pod: pod,
				fromEnv: []string{"insecure"},
			},
		},
		{
			name:  "explicit config_path suppresses KUBE_CONFIG_PATHS",
			attrs: Config{ConfigPath: "/attr/config"},
			want: Config{
				Host: "https://env", Username: "env-user", Password: "env-pw", Token: "env-token", ClusterCACertificate: "env-ca",
				ClientCertificate: "env-cert", ClientKey: "env-key", Insecure: true,
				TLSServerName: "env-sni", ProxyURL: "http://env-proxy", ConfigPath: "/attr/config",
				ConfigContext: "env-ctx", ConfigContextAuthInfo: "env-user", ConfigContextCluster: "env-cluster", Exec: envExec, Pod: pod,
				fromEnv: []string{"host", "username", "password", "token", "cluster_ca_certificate", "client_certificate", "client_key",
					"tls_server_name", "proxy_url", "config_context", "config_context_auth_info", "config_context_cluster", "insecure"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.attrs.Merge(env); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Merge() =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}

	t.Run("explicit insecure = false beats KUBE_INSECURE", func(t *testing.T) {
		got := Config{Host: "https://h", InsecureSet: true}.Merge(Config{Insecure: true})
		if got.Insecure {
			t.Error("Merge() Insecure = true, want the explicit false")
		}
	})
}

func TestIsEmpty(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want bool
	}{
		{name: "zero", c: Config{}, want: true},
		{name: "explicit insecure = false and a pod", c: Config{InsecureSet: true, Pod: Pod{ServiceHost: "h", ServicePort: "1"}}, want: true},
		{name: "insecure", c: Config{Insecure: true}, want: false},
		{name: "tls_server_name", c: Config{TLSServerName: "x"}, want: false},
		{name: "host", c: Config{Host: "https://h"}, want: false},
		{name: "config_paths", c: Config{ConfigPaths: []string{"/p"}}, want: false},
		{name: "exec", c: Config{Exec: &Exec{}}, want: false},
		{name: "client key", c: Config{ClientKey: testKey}, want: false},
		{name: "username", c: Config{Username: "u"}, want: false},
		{name: "proxy_url", c: Config{ProxyURL: "http://p"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.IsEmpty(); got != tt.want {
				t.Errorf("IsEmpty() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRESTConfigErrors(t *testing.T) {
	kubeconfig := writeFile(t, "config", twoContexts)
	// A usable default kubeconfig that must never be read implicitly.
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", kubeconfig)
	missing := filepath.Join(t.TempDir(), "absent")
	tests := []struct {
		name string
		c    Config
		want []string // substrings the error must contain
	}{
		{name: "empty", c: Config{}, want: []string{"no Kubernetes connection configured", "host", "config_path", "KUBE_HOST", "inside a pod"}},
		{name: "only insecure", c: Config{Insecure: true}, want: []string{"no Kubernetes API server found: insecure set", "set host"}},
		{name: "only KUBE_TLS_SERVER_NAME", c: Config{TLSServerName: "x", fromEnv: []string{"tls_server_name"}}, want: []string{"KUBE_TLS_SERVER_NAME set", "set host"}},
		{name: "basic auth and token", c: Config{Host: "https://h", Username: "u", Token: "t", fromEnv: []string{"token"}}, want: []string{"basic auth (username) and a bearer token (KUBE_TOKEN) are both set", "remove one"}},
		{name: "password and token", c: Config{Host: "https://h", Password: "p", Token: "t"}, want: []string{"basic auth (password)"}},
		{name: "proxy_url scheme", c: Config{Host: "https://h", ProxyURL: "ftp://p:1"}, want: []string{`proxy_url "ftp://p:1" is not a usable proxy URL`, "http://proxy.example.com:3128"}},
		{name: "proxy_url without host", c: Config{Host: "https://h", ProxyURL: "proxy:3128", fromEnv: []string{"proxy_url"}}, want: []string{`KUBE_PROXY_URL "proxy:3128"`}},
		{name: "proxy_url password not echoed", c: Config{Host: "https://h", ProxyURL: "ftp://u:hunter2@p"}, want: []string{`"ftp://u:xxxxx@p"`}},
		{name: "config_context_cluster without kubeconfig", c: Config{Host: "https://h", ConfigContextCluster: "c1"}, want: []string{`config_context_cluster "c1" needs a kubeconfig`}},
		{name: "KUBE_CTX_AUTH_INFO without kubeconfig", c: Config{Host: "https://h", ConfigContextAuthInfo: "u1", fromEnv: []string{"config_context_auth_info"}}, want: []string{`KUBE_CTX_AUTH_INFO "u1" needs a kubeconfig`}},
		{name: "exec without command", c: Config{Host: "https://h", Exec: &Exec{APIVersion: "client.authentication.k8s.io/v1"}}, want: []string{"exec needs both command and api_version"}},
		{name: "unknown config_context_cluster", c: Config{ConfigPath: kubeconfig, ConfigContextCluster: "nope"}, want: []string{"load Kubernetes client configuration", `"nope"`}},
		{name: "config_path and config_paths", c: Config{ConfigPath: kubeconfig, ConfigPaths: []string{kubeconfig}}, want: []string{"config_path and config_paths are both set"}},
		{name: "missing config_path", c: Config{ConfigPath: missing}, want: []string{"config_path", missing, "no such file"}},
		{name: "missing config_paths entry", c: Config{ConfigPaths: []string{kubeconfig, missing}}, want: []string{"config_paths", missing}},
		{name: "insecure with CA", c: Config{Host: "https://h", Insecure: true, ClusterCACertificate: testCA}, want: []string{"insecure and cluster_ca_certificate are mutually exclusive"}},
		{name: "host without host name", c: Config{Host: "https://"}, want: []string{`host "https://"`}},
		{name: "host with bad scheme", c: Config{Host: "ftp://k8s.example.test"}, want: []string{`host "ftp://k8s.example.test"`}},
		{name: "host with space", c: Config{Host: "k8s example"}, want: []string{`host "k8s example"`}},
		{name: "token without server", c: Config{Token: "t"}, want: []string{"no Kubernetes API server found", "token set", "set host"}},
		{name: "KUBE_HOST not a URL", c: Config{Host: "k8s example", fromEnv: []string{"host"}}, want: []string{`KUBE_HOST "k8s example"`}},
		{name: "context without kubeconfig", c: Config{Host: "https://h", ConfigContext: "beta"}, want: []string{`config_context "beta"`, "config_path"}},
		{name: "unknown context", c: Config{ConfigPath: kubeconfig, ConfigContext: "nope"}, want: []string{"load Kubernetes client configuration", `"nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.RESTConfig("ua")
			if err == nil {
				t.Fatalf("RESTConfig() = %+v, want an error", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("RESTConfig() error = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestRESTConfigMissingPathUnwraps(t *testing.T) {
	_, err := Config{ConfigPath: filepath.Join(t.TempDir(), "absent")}.RESTConfig("ua")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RESTConfig() error = %v, want it to wrap os.ErrNotExist", err)
	}
}

func TestRESTConfig(t *testing.T) {
	kubeconfig := writeFile(t, "config", twoContexts)
	gamma := writeFile(t, "gamma", gammaOnly)
	home := filepath.Dir(kubeconfig)
	t.Setenv("HOME", home) // for the "~/" case; os.UserHomeDir reads $HOME
	t.Setenv("KUBECONFIG", gamma)
	exec := &Exec{
		APIVersion: "client.authentication.k8s.io/v1",
		Command:    "get-token",
		Args:       []string{"--cluster", "c1"},
		Env:        map[string]string{"ZONE": "z", "ACCOUNT": "a"},
	}
	tests := []struct {
		name      string
		c         Config
		wantHost  string
		wantToken string
	}{
		{name: "host and token, KUBECONFIG ignored", c: Config{Host: "https://k8s.example.test:6443", Token: "secret"}, wantHost: "https://k8s.example.test:6443", wantToken: "secret"},
		{name: "host without scheme gets https and keeps the token", c: Config{Host: "10.0.0.1:6443", Token: "secret"}, wantHost: "https://10.0.0.1:6443", wantToken: "secret"},
		{name: "explicit http scheme kept", c: Config{Host: "http://127.0.0.1:8080", Insecure: true}, wantHost: "http://127.0.0.1:8080"},
		{name: "kubeconfig current context", c: Config{ConfigPath: kubeconfig}, wantHost: "https://alpha.example.test:6443", wantToken: "alpha-token"},
		{name: "config_context selects context", c: Config{ConfigPath: kubeconfig, ConfigContext: "beta"}, wantHost: "https://beta.example.test:6443", wantToken: "beta-token"},
		{name: "tilde expanded", c: Config{ConfigPath: "~/config", ConfigContext: "beta"}, wantHost: "https://beta.example.test:6443", wantToken: "beta-token"},
		{name: "config_paths merged", c: Config{ConfigPaths: []string{kubeconfig, gamma}, ConfigContext: "gamma"}, wantHost: "https://gamma.example.test:6443", wantToken: "gamma-token"},
		{name: "host and token override kubeconfig", c: Config{ConfigPath: kubeconfig, ConfigContext: "beta", Host: "https://override.example.test", Token: "override"}, wantHost: "https://override.example.test", wantToken: "override"},
		{name: "config_context_cluster picks another cluster", c: Config{ConfigPath: kubeconfig, ConfigContextCluster: "beta"}, wantHost: "https://beta.example.test:6443", wantToken: "alpha-token"},
		{name: "config_context_auth_info picks another user", c: Config{ConfigPath: kubeconfig, ConfigContextAuthInfo: "beta"}, wantHost: "https://alpha.example.test:6443", wantToken: "beta-token"},
		{name: "both pick across contexts", c: Config{ConfigPath: kubeconfig, ConfigContext: "beta", ConfigContextCluster: "alpha", ConfigContextAuthInfo: "alpha"}, wantHost: "https://alpha.example.test:6443", wantToken: "alpha-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.RESTConfig("kmshealth-test/1.0")
			if err != nil {
				t.Fatalf("RESTConfig() unexpected error: %v", err)
			}
			if got.Host != tt.wantHost || got.BearerToken != tt.wantToken {
				t.Errorf("RESTConfig() host, token = %q, %q, want %q, %q", got.Host, got.BearerToken, tt.wantHost, tt.wantToken)
			}
			if got.QPS != 50 || got.Burst != 100 || got.UserAgent != "kmshealth-test/1.0" {
				t.Errorf("RESTConfig() QPS, Burst, UserAgent = %v, %v, %q, want 50, 100, %q", got.QPS, got.Burst, got.UserAgent, "kmshealth-test/1.0")
			}
		})
	}

	t.Run("TLS material", func(t *testing.T) {
		got, err := Config{Host: "https://h", ClusterCACertificate: testCA, ClientCertificate: testCert, ClientKey: testKey, TLSServerName: "api.internal"}.RESTConfig("ua")
		if err != nil {
			t.Fatalf("RESTConfig() unexpected error: %v", err)
		}
		tls := got.TLSClientConfig
		if string(tls.CAData) != testCA || string(tls.CertData) != testCert || string(tls.KeyData) != testKey || tls.ServerName != "api.internal" || tls.Insecure {
			t.Errorf("RESTConfig() TLSClientConfig = %+v, want the configured CA, cert, key and server name", tls)
		}
	})

	t.Run("insecure", func(t *testing.T) {
		got, err := Config{Host: "https://h", Token: "t", Insecure: true}.RESTConfig("ua")
		if err != nil {
			t.Fatalf("RESTConfig() unexpected error: %v", err)
		}
		if !got.Insecure {
			t.Error("RESTConfig() TLSClientConfig.Insecure = false, want true")
		}
	})

	t.Run("basic auth", func(t *testing.T) {
		got, err := Config{Host: "https://h", Username: "bob", Password: "pw"}.RESTConfig("ua")
		if err != nil {
			t.Fatalf("RESTConfig() unexpected error: %v", err)
		}
		if got.Username != "bob" || got.Password != "pw" || got.BearerToken != "" {
			t.Errorf("RESTConfig() Username, Password, BearerToken = %q, %q, %q, want bob, pw and no token", got.Username, got.Password, got.BearerToken)
		}
	})

	t.Run("proxy_url", func(t *testing.T) {
		for _, proxy := range []string{"http://proxy.example.test:3128", "https://proxy.example.test", "socks5://127.0.0.1:1080"} {
			got, err := Config{Host: "https://h", Token: "t", ProxyURL: proxy}.RESTConfig("ua")
			if err != nil {
				t.Fatalf("RESTConfig() unexpected error: %v", err)
			}
			if got.Proxy == nil {
				t.Fatalf("RESTConfig(proxy_url %s).Proxy = nil, want the proxy", proxy)
			}
			u, err := got.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: "h"}})
			if err != nil || u.String() != proxy {
				t.Errorf("RESTConfig().Proxy(request) = %v, %v, want %s", u, err, proxy)
			}
		}
	})

	t.Run("proxy_url beats the kubeconfig's proxy-url", func(t *testing.T) {
		withProxy := writeFile(t, "proxied", strings.Replace(twoContexts, "    server: https://alpha.example.test:6443\n",
			"    server: https://alpha.example.test:6443\n    proxy-url: http://kubeconfig-proxy.example.test:3128\n", 1))
		for _, tc := range []struct{ proxyURL, want string }{
			{"", "http://kubeconfig-proxy.example.test:3128"},
			{"http://attr-proxy.example.test:8080", "http://attr-proxy.example.test:8080"},
		} {
			got, err := Config{ConfigPath: withProxy, ProxyURL: tc.proxyURL}.RESTConfig("ua")
			if err != nil {
				t.Fatalf("RESTConfig() unexpected error: %v", err)
			}
			u, err := got.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: "h"}})
			if err != nil || u.String() != tc.want {
				t.Errorf("proxy_url %q: RESTConfig().Proxy(request) = %v, %v, want %s", tc.proxyURL, u, err, tc.want)
			}
		}
	})

	t.Run("exec plugin", func(t *testing.T) {
		got, err := Config{Host: "https://h", Exec: exec}.RESTConfig("ua")
		if err != nil {
			t.Fatalf("RESTConfig() unexpected error: %v", err)
		}
		want := &clientcmdapi.ExecConfig{
			APIVersion:      "client.authentication.k8s.io/v1",
			Command:         "get-token",
			Args:            []string{"--cluster", "c1"},
			Env:             []clientcmdapi.ExecEnvVar{{Name: "ACCOUNT", Value: "a"}, {Name: "ZONE", Value: "z"}},
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		if !reflect.DeepEqual(got.ExecProvider, want) {
			t.Errorf("RESTConfig() ExecProvider =\n%+v\nwant\n%+v", got.ExecProvider, want)
		}
	})
}

func TestLazy(t *testing.T) {
	t.Run("builds on first use and shares the result", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		l := NewLazy(Config{ConfigPath: path}, "ua")
		// The file appears only after NewLazy: building must be deferred.
		if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
			t.Fatal(err)
		}
		first, err := l.RESTConfig()
		if err != nil {
			t.Fatalf("RESTConfig() unexpected error: %v", err)
		}
		if first.Host != "https://alpha.example.test:6443" {
			t.Errorf("RESTConfig().Host = %q, want the kubeconfig's server", first.Host)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if again, _ := l.RESTConfig(); again != first {
					t.Errorf("RESTConfig() = %p, want the first result %p", again, first)
				}
			})
		}
		wg.Wait()
	})

	t.Run("remembers the error", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config")
		l := NewLazy(Config{ConfigPath: path}, "ua")
		_, first := l.RESTConfig()
		if !errors.Is(first, os.ErrNotExist) {
			t.Fatalf("RESTConfig() error = %v, want a missing-file error", first)
		}
		// Fixing the file afterwards must not change the remembered outcome.
		if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
			t.Fatal(err)
		}
		got, second := l.RESTConfig()
		if got != nil || !errors.Is(second, first) {
			t.Errorf("second RESTConfig() = %v, %v, want nil and the first error %v", got, second, first)
		}
	})
}
