package devenv

import (
	"slices"
	"strings"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// TestRBACProxyArgs: the args the resource renders run locally with only
// the config file's path and the listen host changed, plus --kubeconfig.
func TestRBACProxyArgs(t *testing.T) {
	applied := rbacproxy.Config{
		Target:       rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "apps", Name: "api"},
		UpstreamPort: 8080, ListenPort: 9443, HealthPort: 9444, IgnorePaths: []string{"/healthz"},
	}.Args()
	args, listen, health, err := RBACProxyArgs(applied, "/tmp/x/config.yaml", "/tmp/x/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if listen != "127.0.0.1:9443" || health != "127.0.0.1:9444" {
		t.Errorf("listen %q health %q, want 127.0.0.1:9443 and 127.0.0.1:9444", listen, health)
	}
	want := slices.Clone(applied)
	for i, a := range want {
		switch {
		case strings.HasPrefix(a, "--secure-listen-address="):
			want[i] = "--secure-listen-address=127.0.0.1:9443"
		case strings.HasPrefix(a, "--config-file="):
			want[i] = "--config-file=/tmp/x/config.yaml"
		}
	}
	want = append(want, "--kubeconfig=/tmp/x/kubeconfig")
	if !slices.Equal(args, want) {
		t.Errorf("args\n%q\nwant\n%q", args, want)
	}
	for _, bad := range [][]string{
		append(slices.Clone(applied), "--tls-cert-file=/etc/tls/tls.crt"),
		{"--insecure-listen-address=0.0.0.0:8443", "--upstream=http://127.0.0.1:8080/"},
		{"--upstream=http://127.0.0.1:8080/"},
	} {
		if _, _, _, err := RBACProxyArgs(bad, "c", "k"); err == nil {
			t.Errorf("RBACProxyArgs(%q) = nil error", bad)
		}
	}
}
