package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// A state written by schema version 0 (curves, before the rename to
// groups), exactly as Terraform keeps it: the JSON of its attributes.
const tlsProfileStateV0 = `{
  "id": "apps/web-tls",
  "namespace": "apps",
  "name": "web-tls",
  "source": "static",
  "profile": {
    "type": "Custom",
    "custom": {
      "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256"],
      "min_tls_version": "VersionTLS12",
      "curves": ["X25519", "P-256", "prime256v1", "secp384r1", "brainpool"]
    }
  },
  "rollout_targets": [{"kind": "Deployment", "namespace": "apps", "name": "web"}],
  "hash": "0123",
  "min_tls_version": "VersionTLS12",
  "cipher_suites": ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],
  "curves": ["X25519", "secp256r1", "secp384r1"],
  "is_openshift": false,
  "profile_json": "{}"
}`

// TestTLSProfileUpgradeStateV0: through the provider's protocol server, as
// Terraform asks for it, a version 0 state becomes a version 1 state whose
// curves are groups spelled as OpenShift spells them, everything else kept.
func TestTLSProfileUpgradeStateV0(t *testing.T) {
	ctx := context.Background()
	server, err := protoV6["kmshealth"]()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	resp, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "kmshealth_tls_profile_configmap", Version: 0,
		RawState: &tfprotov6.RawState{JSON: []byte(tlsProfileStateV0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("diagnostic: %s: %s", d.Summary, d.Detail)
	}
	if resp.UpgradedState == nil {
		t.Fatal("no upgraded state")
	}

	var sr resource.SchemaResponse
	(&tlsProfileResource{}).Schema(ctx, resource.SchemaRequest{}, &sr)
	if sr.Schema.Version != 1 {
		t.Fatalf("schema version %d, want 1", sr.Schema.Version)
	}
	raw, err := resp.UpgradedState.Unmarshal(sr.Schema.Type().TerraformType(ctx))
	if err != nil {
		t.Fatal(err)
	}
	var m tlsProfileModel
	if diags := (tfsdk.State{Schema: sr.Schema, Raw: raw}).Get(ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	strs := func(l types.List) []string {
		var out []string
		if diags := l.ElementsAs(ctx, &out, false); diags.HasError() {
			t.Fatal(diags)
		}
		return out
	}
	if got := strs(m.Profile.Custom.Groups); !equalStrings(got, []string{"X25519", "secp256r1", "secp256r1", "secp384r1", "brainpool"}) {
		t.Errorf("profile.custom.groups = %q: want the curves in OpenShift's spelling, unknown names kept for validation to name", got)
	}
	if got := strs(m.Groups); !equalStrings(got, []string{"X25519", "secp256r1", "secp384r1"}) {
		t.Errorf("groups = %q", got)
	}
	if m.ID.ValueString() != "apps/web-tls" || m.Hash.ValueString() != "0123" || m.Profile.Type.ValueString() != "Custom" ||
		m.Profile.Custom.MinTLSVersion.ValueString() != "VersionTLS12" || !equalStrings(strs(m.Profile.Custom.Ciphers), []string{"ECDHE-RSA-AES128-GCM-SHA256"}) ||
		!equalStrings(strs(m.CipherSuites), []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}) || len(m.RolloutTargets.Elements()) != 1 || m.ProfileJSON.ValueString() != "{}" {
		t.Errorf("an attribute was not carried over: %+v", m)
	}
	if !m.FIPS.IsNull() || !m.ComponentArgs.IsNull() || !m.FIPSDropped.IsNull() {
		t.Errorf("new attributes not left for the next plan: fips %s, component_args %s, fips_dropped %s", m.FIPS, m.ComponentArgs, m.FIPSDropped)
	}

	// A state with no profile block (Intermediate) upgrades too.
	resp, err = server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "kmshealth_tls_profile_configmap", Version: 0,
		RawState: &tfprotov6.RawState{JSON: []byte(`{"id":"a/b","namespace":"a","name":"b","source":"cluster","profile":null,"rollout_targets":null,"hash":"1","min_tls_version":"VersionTLS12","cipher_suites":[],"curves":[],"is_openshift":true,"profile_json":"{}"}`)},
	})
	if err != nil || len(resp.Diagnostics) > 0 || resp.UpgradedState == nil {
		t.Fatalf("no profile block: %v %v", err, resp.Diagnostics)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
