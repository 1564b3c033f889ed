package rbacproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The shape kube-rbac-proxy v0.19.1 decodes its --config-file into
// (cmd/kube-rbac-proxy/app and pkg/authz), as the research notes give
// it: the JSON names are its keys. It decodes with ghodss/yaml, which is
// what sigs.k8s.io/yaml is.
type upstreamFile struct {
	Authorization *upstreamAuthz `json:"authorization,omitempty"`
}

type upstreamAuthz struct {
	Rewrites           *upstreamRewrites  `json:"rewrites,omitempty"`
	ResourceAttributes *upstreamResources `json:"resourceAttributes,omitempty"`
}

type upstreamRewrites struct {
	ByQueryParameter *upstreamName `json:"byQueryParameter,omitempty"`
	ByHTTPHeader     *upstreamName `json:"byHttpHeader,omitempty"`
}

type upstreamName struct {
	Name string `json:"name,omitempty"`
}

type upstreamResources struct {
	Namespace   string `json:"namespace,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
}

func TestConfigFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		authz Authorization
		want  upstreamAuthz
		keys  map[string][]string // path in the YAML → its exact keys
	}{
		{
			name: "no attributes: non-resource requests, authorization still present",
			want: upstreamAuthz{},
			keys: map[string][]string{"": {"authorization"}, "authorization": {}},
		},
		{
			name:  "resource attributes, apiGroup not group",
			authz: Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "apps", APIGroup: "monitoring.coreos.com", APIVersion: "v1", Resource: "prometheuses", Subresource: "api", Name: "k8s"}},
			want:  upstreamAuthz{ResourceAttributes: &upstreamResources{Namespace: "apps", APIGroup: "monitoring.coreos.com", APIVersion: "v1", Resource: "prometheuses", Subresource: "api", Name: "k8s"}},
			keys: map[string][]string{
				"authorization":                    {"resourceAttributes"},
				"authorization.resourceAttributes": {"apiGroup", "apiVersion", "name", "namespace", "resource", "subresource"},
			},
		},
		{
			name:  "empty attributes are left out",
			authz: Authorization{ResourceAttributes: &ResourceAttributes{Resource: "services"}},
			want:  upstreamAuthz{ResourceAttributes: &upstreamResources{Resource: "services"}},
			keys:  map[string][]string{"authorization.resourceAttributes": {"resource"}},
		},
		{
			name: "rewrites by query parameter and header",
			authz: Authorization{
				ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value }}", APIVersion: "v1", Resource: "namespace", Subresource: "metrics"},
				Rewrites:           &Rewrites{ByQueryParameter: "namespace", ByHTTPHeader: "X-Namespace"},
			},
			want: upstreamAuthz{
				ResourceAttributes: &upstreamResources{Namespace: "{{ .Value }}", APIVersion: "v1", Resource: "namespace", Subresource: "metrics"},
				Rewrites:           &upstreamRewrites{ByQueryParameter: &upstreamName{"namespace"}, ByHTTPHeader: &upstreamName{"X-Namespace"}},
			},
			keys: map[string][]string{
				"authorization":                           {"resourceAttributes", "rewrites"},
				"authorization.rewrites":                  {"byHttpHeader", "byQueryParameter"},
				"authorization.rewrites.byHttpHeader":     {"name"},
				"authorization.rewrites.byQueryParameter": {"name"},
			},
		},
		{
			name: "rewrites by header only",
			authz: Authorization{
				ResourceAttributes: &ResourceAttributes{Resource: "pods", Name: "{{ .Value }}"},
				Rewrites:           &Rewrites{ByHTTPHeader: "X-Pod"},
			},
			want: upstreamAuthz{
				ResourceAttributes: &upstreamResources{Resource: "pods", Name: "{{ .Value }}"},
				Rewrites:           &upstreamRewrites{ByHTTPHeader: &upstreamName{"X-Pod"}},
			},
			keys: map[string][]string{"authorization.rewrites": {"byHttpHeader"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			c.Authorization = tc.authz
			if err := c.Validate(); err != nil {
				t.Fatalf("test config invalid: %v", err)
			}
			file, err := c.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(file), "# ") {
				t.Errorf("file does not start with its comment:\n%s", file)
			}
			var got upstreamFile
			if err := yaml.UnmarshalStrict(file, &got); err != nil {
				t.Fatalf("the proxy's shape does not decode the file: %v\n%s", err, file)
			}
			if got.Authorization == nil {
				t.Fatalf("no authorization key (the proxy would panic):\n%s", file)
			}
			if !reflect.DeepEqual(*got.Authorization, tc.want) {
				t.Errorf("decoded %+v\nwant %+v\nfile:\n%s", *got.Authorization, tc.want, file)
			}
			var tree map[string]any
			if err := yaml.Unmarshal(file, &tree); err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.keys {
				if got := keysAt(t, tree, path); !slices.Equal(got, want) {
					t.Errorf("keys at %q = %q, want exactly %q\n%s", path, got, want, file)
				}
			}
		})
	}
}

func keysAt(t *testing.T, tree map[string]any, path string) []string {
	t.Helper()
	m := tree
	if path != "" {
		for _, p := range strings.Split(path, ".") {
			next, ok := m[p].(map[string]any)
			if !ok {
				t.Fatalf("no map at %q (in %v)", p, m)
			}
			m = next
		}
	}
	return sortedKeys(m)
}

func TestConfigFileIsStableAndHashed(t *testing.T) {
	c := valid()
	c.Authorization.ResourceAttributes = &ResourceAttributes{Namespace: "apps", Resource: "services", Subresource: "proxy"}
	first, err := c.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := c.ConfigFile()
		if string(again) != string(first) {
			t.Fatalf("ConfigFile not stable:\n%s\n---\n%s", first, again)
		}
	}
	hash, err := c.ConfigHash()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(first)
	if hash != hex.EncodeToString(sum[:]) {
		t.Errorf("ConfigHash = %s, want the hex sha256 of ConfigFile", hash)
	}

	// What the pods do not read from the file does not change the hash
	// (a changed image or port rolls them by itself); what they read does.
	same := c
	same.Image, same.ListenPort, same.IgnorePaths = "example.com/proxy:v1", 9443, []string{"/metrics"}
	if h, _ := same.ConfigHash(); h != hash {
		t.Errorf("hash changed with fields outside the file")
	}
	other := c
	other.Authorization.ResourceAttributes = &ResourceAttributes{Namespace: "apps", APIGroup: "apps", Resource: "services", Subresource: "proxy"}
	if h, _ := other.ConfigHash(); h == hash {
		t.Errorf("hash did not change with the file")
	}
}

func TestArgs(t *testing.T) {
	const (
		listen = "--secure-listen-address=0.0.0.0:8443"
		health = "--proxy-endpoints-port=8643"
		up     = "--upstream=http://127.0.0.1:8080/"
		file   = "--config-file=/etc/kmshealth-rbac-proxy/config/config.yaml"
		tls12  = "--tls-min-version=VersionTLS12"
		v      = "--v=2"
	)
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"defaults: self-signed https, health port, explicit tls 1.2", func(*Config) {}, []string{listen, health, up, file, tls12, v}},
		{"own ports", func(c *Config) { c.ListenPort, c.HealthPort, c.UpstreamPort = 9443, 9643, 9090 }, []string{
			"--secure-listen-address=0.0.0.0:9443", "--proxy-endpoints-port=9643", "--upstream=http://127.0.0.1:9090/", file, tls12, v,
		}},
		{"certificate from a secret and a tls profile", func(c *Config) {
			c.TLS = TLS{SecretName: "web-tls", MinVersion: "VersionTLS13", CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}
		}, []string{
			listen, health, up, file,
			"--tls-cert-file=/etc/kmshealth-rbac-proxy/tls/tls.crt",
			"--tls-private-key-file=/etc/kmshealth-rbac-proxy/tls/tls.key",
			"--tls-min-version=VersionTLS13",
			"--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
			v,
		}},
		{"ignore paths", func(c *Config) { c.IgnorePaths = []string{"/healthz", "/api/v1/*"} }, []string{listen, health, up, file, tls12, "--ignore-paths=/healthz,/api/v1/*", v}},
		{"allow paths", func(c *Config) { c.AllowPaths = []string{"/metrics"} }, []string{listen, health, up, file, tls12, "--allow-paths=/metrics", v}},
		{"insecure: plain http, no health port, no tls flags", func(c *Config) { c.InsecureListen = true }, []string{"--insecure-listen-address=0.0.0.0:8443", up, file, v}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("test config invalid: %v", err)
			}
			if got := c.Args(); !slices.Equal(got, tc.want) {
				t.Errorf("Args() =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}
