package main

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/gobuild"
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

// TestInClusterBuildLinksNoWholeClientset: the image's reconciler build
// (-tags incluster) builds only the typed clients it calls (package
// kube/clientset), so the linker leaves out the typed clients of every
// other API group. A *kubernetes.Clientset made anywhere in the reconcile
// path (kubernetes.NewForConfig, or one converted to an interface) would
// bring them all back: 7.5 MB of the file, and the pages the kernel maps
// around them (BENCHMARKS.md, "Slim in-cluster build").
//
// The binary is linked by gobuild into build/bin, so a run with the same
// sources reads the symbols of the binary the last run linked.
func TestInClusterBuildLinksNoWholeClientset(t *testing.T) {
	var syms []elf.Symbol
	err := gobuild.Binary(t.Context(), ".", "incluster-symbols", ".", nil, []string{"-tags", "incluster", "-ldflags=-w"}, func(bin string) error {
		f, err := elf.Open(bin)
		if err != nil {
			return fmt.Errorf("open the binary: %w", err)
		}
		defer func() { _ = f.Close() }()
		if syms, err = f.Symbols(); err != nil {
			return fmt.Errorf("read the symbol table: %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the in-cluster build (-tags incluster): %v", err)
	}
	if len(syms) < 1000 {
		t.Fatalf("the binary has %d symbols: the check would prove nothing", len(syms))
	}
	forbidden := []string{
		"k8s.io/client-go/kubernetes.(*Clientset).",
		"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset.(*Clientset).",
		"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset.(*Clientset).",
	}
	for _, s := range syms {
		for _, prefix := range forbidden {
			if strings.HasPrefix(s.Name, prefix) {
				t.Errorf("the in-cluster build links %s: build the reconciler's clients with package kube/clientset", s.Name)
			}
		}
	}
}
