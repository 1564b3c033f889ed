package provider

import (
	"context"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestExactlyOneOf_sameAsFramework: the caBundle resources' ca_bundle /
// source rule gives exactly the diagnostics of the framework's
// resourcevalidator.ExactlyOneOf for every combination of set, null and
// unknown, and answers the valid one-set cases itself (the shortcut that
// saves the framework's walk of the configuration).
func TestExactlyOneOf_sameAsFramework(t *testing.T) {
	ctx := context.Background()
	resources := map[string]fwresource.Resource{
		"kmshealth_apiservice_cabundle": NewAPIServiceCABundleResource(),
		"kmshealth_webhook_cabundle":    NewWebhookCABundleResource(),
	}
	framework := resourcevalidator.ExactlyOneOf(path.MatchRoot("ca_bundle"), path.MatchRoot("source"))
	ours := exactlyOneOfRoots("ca_bundle", "source")
	for typeName, r := range resources {
		var resp fwresource.SchemaResponse
		r.Schema(ctx, fwresource.SchemaRequest{}, &resp)
		typ := resp.Schema.Type().TerraformType(ctx).(tftypes.Object)
		srcType := typ.AttributeTypes["source"].(tftypes.Object)
		str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
		source := tftypes.NewValue(srcType, map[string]tftypes.Value{
			"kind": str("Secret"), "namespace": str("ns"), "name": str("ca"), "key": str("ca.crt"),
		})
		sourceUnknownName := tftypes.NewValue(srcType, map[string]tftypes.Value{
			"kind": str("Secret"), "namespace": str("ns"), "name": tftypes.NewValue(tftypes.String, tftypes.UnknownValue), "key": str("ca.crt"),
		})
		bundle := str("-----BEGIN CERTIFICATE-----\n")
		unknownBundle := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
		unknownSource := tftypes.NewValue(srcType, tftypes.UnknownValue)
		tests := []struct {
			name     string
			set      map[string]tftypes.Value
			shortcut bool // answered without the framework's validator
			invalid  bool // the framework reports an error
		}{
			{name: "inline", set: map[string]tftypes.Value{"ca_bundle": bundle}, shortcut: true},
			{name: "source", set: map[string]tftypes.Value{"source": source}, shortcut: true},
			{name: "source with an unknown attribute", set: map[string]tftypes.Value{"source": sourceUnknownName}, shortcut: true},
			{name: "both", set: map[string]tftypes.Value{"ca_bundle": bundle, "source": source}, invalid: true},
			{name: "neither", invalid: true},
			{name: "inline unknown", set: map[string]tftypes.Value{"ca_bundle": unknownBundle}},
			{name: "source unknown", set: map[string]tftypes.Value{"source": unknownSource}},
			{name: "inline and source unknown", set: map[string]tftypes.Value{"ca_bundle": bundle, "source": unknownSource}},
			{name: "inline unknown and source", set: map[string]tftypes.Value{"ca_bundle": unknownBundle, "source": source}},
		}
		for _, tt := range tests {
			t.Run(typeName+"/"+tt.name, func(t *testing.T) {
				req := fwresource.ValidateConfigRequest{Config: tfsdk.Config{Schema: resp.Schema, Raw: objectWith(typ, tt.set)}}
				var want, got fwresource.ValidateConfigResponse
				framework.ValidateResource(ctx, req, &want)
				ours.ValidateResource(ctx, req, &got)
				if !reflect.DeepEqual(got.Diagnostics, want.Diagnostics) {
					t.Errorf("diagnostics = %v, want the framework's %v", got.Diagnostics, want.Diagnostics)
				}
				if s := ours.oneSet(req.Config.Raw); s != tt.shortcut {
					t.Errorf("shortcut taken = %v, want %v", s, tt.shortcut)
				}
				if want.Diagnostics.HasError() != tt.invalid {
					t.Errorf("the framework's errors: %v, want errors = %v", want.Diagnostics, tt.invalid)
				}
			})
		}
	}
	if got, want := ours.Description(ctx), framework.Description(ctx); got != want {
		t.Errorf("Description = %q, want the framework's %q", got, want)
	}
}

// BenchmarkExactlyOneOf: the caBundle resources' rule against the
// framework's on a valid inline configuration, the case every
// ValidateResourceConfig of a no-op plan sees.
func BenchmarkExactlyOneOf(b *testing.B) {
	ctx := context.Background()
	var resp fwresource.SchemaResponse
	NewAPIServiceCABundleResource().Schema(ctx, fwresource.SchemaRequest{}, &resp)
	typ := resp.Schema.Type().TerraformType(ctx).(tftypes.Object)
	req := fwresource.ValidateConfigRequest{Config: tfsdk.Config{Schema: resp.Schema, Raw: objectWith(typ, map[string]tftypes.Value{
		"apiservice_name": tftypes.NewValue(tftypes.String, "v1.example.com"),
		"ca_bundle":       tftypes.NewValue(tftypes.String, "-----BEGIN CERTIFICATE-----\n"),
	})}}
	for name, v := range map[string]fwresource.ConfigValidator{
		"framework": resourcevalidator.ExactlyOneOf(path.MatchRoot("ca_bundle"), path.MatchRoot("source")),
		"ours":      exactlyOneOfRoots("ca_bundle", "source"),
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var out fwresource.ValidateConfigResponse
				v.ValidateResource(ctx, req, &out)
			}
		})
	}
}
