package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// TestAPIServiceCABundleUnchangedInlinePlan: ModifyPlan skips its work
// (unchangedInlinePlan) exactly when that work would leave the plan equal
// to the prior state, so the shortcut changes no plan: each case runs the
// full work (modifyPlan) on the same request and compares.
func TestAPIServiceCABundleUnchangedInlinePlan(t *testing.T) {
	ctx := t.Context()
	r := &apiServiceCABundleResource{now: time.Now}
	var sr resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sr)
	pem := newCertPEM(t, "plan-shortcut", certOpts{})
	const name = "v1.shortcut.example.com"
	noop := func() apiServiceCABundleModel {
		m := apiServiceCABundleModel{
			ID: types.StringValue(name), APIServiceName: types.StringValue(name), bundleModel: bundleModel{
				CABundle: types.StringValue(pem), BundleNamespace: types.StringValue(cabundle.DefaultBundleNamespace),
				FieldManager: types.StringValue(cabundle.DefaultFieldManager), ForceConflicts: types.BoolValue(false),
				CABundleSource: types.StringValue("ConfigMap/" + cabundle.DefaultBundleNamespace + "/" + cabundle.InlineConfigMapName(name) + "/" + cabundle.InlineKey),
			},
		}
		m.FingerprintSHA256, m.CertificateCount, m.NotAfter, m.Certificates = describeBundle(cabundle.Canonical([]byte(pem)), time.Now())
		return m
	}
	tests := []struct {
		name      string
		state     func(*apiServiceCABundleModel) // from the no-op state
		plan      func(*apiServiceCABundleModel) // from the state
		wantShort bool
	}{
		{name: "no-op", wantShort: true},
		{name: "the same certificates in other text", wantShort: true, state: func(m *apiServiceCABundleModel) {
			m.CABundle = types.StringValue("\n" + strings.ReplaceAll(pem, "\n", "\r\n") + "\n")
		}},
		{name: "ca_bundle_source drifted (someone rewrote the annotation)", state: func(m *apiServiceCABundleModel) {
			m.CABundleSource = types.StringValue("Secret/default/theirs/ca.crt")
		}},
		{name: "fingerprint of other bytes", state: func(m *apiServiceCABundleModel) {
			m.FingerprintSHA256 = types.StringValue(cabundle.Fingerprint([]byte("other")))
		}},
		{name: "id differs", state: func(m *apiServiceCABundleModel) { m.ID = types.StringValue("other") }},
		{name: "a source instead of inline", state: func(m *apiServiceCABundleModel) {
			m.CABundle = types.StringNull()
			m.Source = &sourceModel{Kind: types.StringValue("Secret"), Namespace: types.StringValue("default"), Name: types.StringValue("ca"), Key: types.StringValue("ca.crt")}
			m.CABundleSource = types.StringValue("Secret/default/ca/ca.crt")
		}},
		{name: "a new bundle planned", plan: func(m *apiServiceCABundleModel) {
			m.CABundle = types.StringValue(newCertPEM(t, "plan-shortcut-new", certOpts{}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := noop()
			if tt.state != nil {
				tt.state(&st)
			}
			pl := st
			if tt.plan != nil {
				tt.plan(&pl)
			}
			checkInlineShortcut(t, sr.Schema, &st, &pl, apiServiceInlineIdentity, r.modifyPlan, tt.wantShort)
		})
	}
}

// TestWebhookCABundleUnchangedInlinePlan is the same for
// kmshealth_webhook_cabundle, whose id and inline ConfigMap name follow
// the kind, the name and the webhooks.
func TestWebhookCABundleUnchangedInlinePlan(t *testing.T) {
	ctx := t.Context()
	r := &webhookCABundleResource{now: time.Now}
	var sr resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sr)
	pem := newCertPEM(t, "webhook-plan-shortcut", certOpts{})
	hooks := func(names ...string) types.Set {
		values := make([]attr.Value, len(names))
		for i, n := range names {
			values[i] = types.StringValue(n)
		}
		return types.SetValueMust(types.StringType, values)
	}
	noop := func(webhooks types.Set) webhookCABundleModel {
		m := webhookCABundleModel{
			Kind: types.StringValue(cabundle.KindValidatingWebhookConfiguration), Name: types.StringValue("shortcut"), Webhooks: webhooks,
			bundleModel: bundleModel{
				CABundle: types.StringValue(pem), BundleNamespace: types.StringValue(cabundle.DefaultBundleNamespace),
				FieldManager: types.StringValue(cabundle.DefaultFieldManager), ForceConflicts: types.BoolValue(false),
			},
		}
		m.ID = types.StringValue(m.target().String())
		m.CABundleSource = types.StringValue(m.source().String())
		m.setBundle(cabundle.Canonical([]byte(pem)), time.Now())
		return m
	}
	tests := []struct {
		name      string
		state     webhookCABundleModel
		plan      func(*webhookCABundleModel) // from the state
		wantShort bool
	}{
		{name: "no-op, every webhook", state: noop(types.SetNull(types.StringType)), wantShort: true},
		{name: "no-op, named webhooks", state: noop(hooks("b.example.com", "a.example.com")), wantShort: true},
		{name: "a webhook added", state: noop(hooks("a.example.com")), plan: func(m *webhookCABundleModel) { m.Webhooks = hooks("a.example.com", "b.example.com") }},
		{name: "ca_bundle_source drifted", state: func() webhookCABundleModel {
			m := noop(hooks("a.example.com"))
			m.CABundleSource = types.StringValue("Secret/default/theirs/ca.crt")
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, pl := tt.state, tt.state
			if tt.plan != nil {
				tt.plan(&pl)
			}
			checkInlineShortcut(t, sr.Schema, &st, &pl, webhookInlineIdentity, r.modifyPlan, tt.wantShort)
		})
	}
}

// checkInlineShortcut runs the full ModifyPlan on state and plan (models of
// schema) and checks that unchangedInlinePlan takes its shortcut exactly
// when that ModifyPlan leaves the state unchanged, and that both agree
// with wantShort.
func checkInlineShortcut[M any](t *testing.T, schema rschema.Schema, state, plan *M, identity func(map[string]tftypes.Value) (id, source string, ok bool),
	modifyPlan func(context.Context, resource.ModifyPlanRequest, *resource.ModifyPlanResponse), wantShort bool) {
	t.Helper()
	ctx := t.Context()
	raw := func(m *M) tftypes.Value {
		s := tfsdk.State{Schema: schema, Raw: tftypes.NewValue(schema.Type().TerraformType(ctx), nil)}
		if diags := s.Set(ctx, m); diags.HasError() {
			t.Fatal(diags)
		}
		return s.Raw
	}
	req := resource.ModifyPlanRequest{
		State: tfsdk.State{Schema: schema, Raw: raw(state)},
		Plan:  tfsdk.Plan{Schema: schema, Raw: raw(plan)},
	}
	short := unchangedInlinePlan(req.Plan.Raw, req.State.Raw, identity)
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	modifyPlan(ctx, req, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	unchanged := resp.Plan.Raw.Equal(req.State.Raw)
	if short != wantShort || unchanged != wantShort {
		t.Errorf("shortcut taken %v, full ModifyPlan leaves the state unchanged %v; want both %v", short, unchanged, wantShort)
	}
}

// TestAPIServiceCABundleModelEqual: equal compares every field of the
// model (Read sets the state only when it finds one changed): a model that
// differs from another in any one field is not equal to it.
func TestAPIServiceCABundleModelEqual(t *testing.T) {
	base := apiServiceCABundleModel{
		ID: types.StringValue("a"), APIServiceName: types.StringValue("a"), bundleModel: bundleModel{
			CABundle: types.StringValue("a"), BundleNamespace: types.StringValue("a"), FieldManager: types.StringValue("a"),
			ForceConflicts: types.BoolValue(false), FingerprintSHA256: types.StringValue("a"), CertificateCount: types.Int64Value(1),
			NotAfter: types.StringValue("a"), Certificates: types.ListValueMust(certificateType, nil), CABundleSource: types.StringValue("a"),
		},
	}
	if same := base; !base.equal(&same) {
		t.Fatal("a copy is not equal")
	}
	// Every field, the embedded bundleModel's included; 12 is the
	// resource's attributes, so a field added to either struct without a
	// case here fails below.
	var fields []reflect.StructField
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[apiServiceCABundleModel]()) {
		if !sf.Anonymous {
			fields = append(fields, sf)
		}
	}
	if len(fields) != 12 {
		t.Fatalf("%d fields, want 12: teach this test (and equal) the new one", len(fields))
	}
	for _, sf := range fields {
		t.Run(sf.Name, func(t *testing.T) {
			other := base
			f := reflect.ValueOf(&other).Elem().FieldByIndex(sf.Index)
			switch v := f.Interface().(type) {
			case types.String:
				f.Set(reflect.ValueOf(types.StringValue(v.ValueString() + "-other")))
			case types.Bool:
				f.Set(reflect.ValueOf(types.BoolValue(!v.ValueBool())))
			case types.Int64:
				f.Set(reflect.ValueOf(types.Int64Value(v.ValueInt64() + 1)))
			case types.List:
				f.Set(reflect.ValueOf(types.ListNull(certificateType)))
			case *sourceModel:
				f.Set(reflect.ValueOf(&sourceModel{Kind: types.StringValue("Secret")}))
			default:
				t.Fatalf("field of type %T: teach this test to change it", v)
			}
			if base.equal(&other) || other.equal(&base) {
				t.Errorf("models that differ in %s are equal", sf.Name)
			}
		})
	}
}
