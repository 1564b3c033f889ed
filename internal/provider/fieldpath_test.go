package provider

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestFieldAttributes: field paths map to attributes under a root, in
// snake_case, through renames; every shape a pattern returns its field
// errors in is found; a plain error stays one diagnostic.
func TestFieldAttributes(t *testing.T) {
	profile := fieldAttributes{root: path.Root("profile")}
	for fieldPath, want := range map[string]path.Path{
		"custom.ciphers[2]":    path.Root("profile").AtName("custom").AtName("ciphers").AtListIndex(2),
		"custom.minTLSVersion": path.Root("profile").AtName("custom").AtName("min_tls_version"),
		"type":                 path.Root("profile").AtName("type"),
		"":                     path.Root("profile"),
	} {
		if got := profile.path(fieldPath); !got.Equal(want) {
			t.Errorf("profile path(%q) = %s, want %s", fieldPath, got, want)
		}
	}
	if got, want := rolloutTargetFields.path("rolloutTargets[1]"), path.Root("rollout_targets").AtListIndex(1); !got.Equal(want) {
		t.Errorf("rolloutTargets[1] = %s, want %s", got, want)
	}

	a := field.Invalid(field.NewPath("listenPort"), field.OmitValueType{}, "8443 is also upstreamPort")
	b := field.Invalid(field.NewPath("tls", "cipherSuites").Index(0), field.OmitValueType{}, "unknown")
	for name, err := range map[string]error{
		"aggregate":         field.ErrorList{a, b}.ToAggregate(),
		"errors.Join":       errors.Join(a, b),
		"wrapped aggregate": fmt.Errorf("apply: %w", field.ErrorList{a, b}.ToAggregate()),
	} {
		if got := fieldErrorsOf(err); !slices.Equal(got, field.ErrorList{a, b}) {
			t.Errorf("%s: fieldErrorsOf = %v, want both", name, got)
		}
	}

	var diags diag.Diagnostics
	rbacProxyFields.addErrors(&diags, "Invalid", field.ErrorList{a, b}.ToAggregate(), func(f string) bool { return f == "listenPort" })
	if len(diags) != 1 {
		t.Fatalf("addErrors skipping listenPort: %v, want one diagnostic", diags)
	}
	if d, ok := diags[0].(diag.DiagnosticWithPath); !ok || !d.Path().Equal(path.Root("tls_profile").AtName("cipher_suites").AtListIndex(0)) || d.Detail() != "tls_profile.cipher_suites[0]: unknown" {
		t.Errorf("addErrors = %v", diags[0])
	}
	diags = nil
	rbacProxyFields.addErrors(&diags, "Failed", errors.New("connection refused"), nil)
	if len(diags) != 1 || diags[0].Detail() != "connection refused" {
		t.Errorf("a plain error: %v", diags)
	}
}
