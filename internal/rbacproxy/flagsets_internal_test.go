package rbacproxy

import (
	"strings"
	"testing"
)

// TestCheckArgs: an argument whose flag a release does not take is
// reported at the field it comes from, naming the flag and the release.
// The flag set is a part of that of kube-rbac-proxy's sig-auth-acceptance
// branch (k8s.io/apiserver's secure serving and delegating authn/authz
// options plus its proxy options; no tag carries it yet), the line the
// v0.x flags give way to: the sidecar's listen address and plain-HTTP
// arguments are refused there.
func TestCheckArgs(t *testing.T) {
	acceptance := FlagSet{
		From: Version{1, 0, 0}, Until: Version{2, 0, 0},
		Flags: []string{
			"bind-address", "secure-port", "cert-dir", "tls-cert-file", "tls-private-key-file", "tls-min-version", "tls-cipher-suites",
			"authentication-kubeconfig", "authorization-kubeconfig", "upstream", "upstream-force-h2c", "upstream-ca-file",
			"upstream-client-cert-file", "upstream-client-key-file", "config-file", "allow-paths", "ignore-paths",
			"auth-header-user-field-name", "auth-header-groups-field-name", "auth-header-groups-field-separator",
			"auth-token-audiences", "proxy-endpoints-port", "disable-http2-serving", "v",
		},
	}
	base := Config{Target: Target{Kind: KindDeployment, Namespace: "apps", Name: "web"}, UpstreamPort: 8080, ServiceAccountName: "default"}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   []string // "field: flag"
	}{
		{"secure listener", func(*Config) {}, []string{"listenPort: --secure-listen-address"}},
		{"plain HTTP", func(c *Config) { c.InsecureListen = true }, []string{"insecureListen: --insecure-listen-address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mutate(&c)
			var es fieldErrors
			c.Defaulted().checkArgs(&es, acceptance, Version{1, 0, 0})
			var got []string
			for _, e := range es {
				got = append(got, e.Field+": "+strings.TrimSuffix(strings.Fields(e.Detail)[1], ","))
				if !strings.Contains(e.Detail, "kube-rbac-proxy v1.0.0 does not take") {
					t.Errorf("%s: %q does not name the release", e.Field, e.Detail)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Every argument of the v0.x line is a flag of its own set.
	fs, _ := FlagSetFor(Version{0, 22, 1})
	full := base
	full.TLS = TLS{SecretName: "tls", MinVersion: "VersionTLS13", CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}}
	full.IgnorePaths = []string{"/healthz"}
	for _, c := range []Config{full, {Target: base.Target, UpstreamPort: 8080, InsecureListen: true, AllowPaths: []string{"/metrics"}}} {
		var es fieldErrors
		c.Defaulted().checkArgs(&es, fs, Version{0, 22, 1})
		if len(es) > 0 {
			t.Errorf("v0.22.1 refuses %q: %v", c.Defaulted().Args(), es.err())
		}
	}
}
