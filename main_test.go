package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReporterBuildLinksOnlyTheReporter: the image's reporter build
// (-tags reportonly,grpcnotrace, what every control-plane node maps) links
// neither the provider nor the reconciler, nor the heavy libraries that
// only they need. Each entry is a package path prefix and why it must stay
// out; the reporter's RSS is mostly the pages of its binary.
func TestReporterBuildLinksOnlyTheReporter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "reportonly,grpcnotrace", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	forbidden := map[string]string{
		"github.com/kmshealth/terraform-provider-kmshealth/internal/provider":   "the Terraform provider",
		"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler": "the reconcile mode",
		"github.com/kmshealth/terraform-provider-kmshealth/internal/controller": "the reconciler's controllers",
		"github.com/hashicorp/terraform-plugin":                                 "the provider server",
		"sigs.k8s.io/controller-runtime":                                        "a controller manager the reporter does not run",
		"k8s.io/apiserver":                                                      "delegating authn/authz (the reporter's /metrics uses two plain reviews)",
		"k8s.io/client-go/informers":                                            "informers: the reporter watches nothing",
		"k8s.io/client-go/kubernetes/scheme":                                    "the scheme of every built-in API group (the reporter writes one object through the dynamic client)",
		"golang.org/x/net/trace":                                                "gRPC's tracing, whose html/template keeps every exported method linked (-tags grpcnotrace)",
	}
	for _, d := range deps {
		for prefix, why := range forbidden {
			if d == prefix || strings.HasPrefix(d, prefix+"/") || strings.HasPrefix(d, prefix+"-") {
				t.Errorf("the reporter build links %s: %s", d, why)
			}
		}
	}
}
