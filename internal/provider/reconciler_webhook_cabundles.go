package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
)

// reconcilerWebhookBundleModel is one element of webhook_ca_bundles.
type reconcilerWebhookBundleModel struct {
	Source   types.String `tfsdk:"source"`
	Webhooks types.Set    `tfsdk:"webhooks"`
}

var reconcilerWebhookBundleType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"source": types.StringType, "webhooks": types.SetType{ElemType: types.StringType},
}}

// reconcilerWebhookBundlesModel is kmshealth_reconciler's webhook_ca_bundles.
type reconcilerWebhookBundlesModel struct {
	WebhookBundles types.Map `tfsdk:"webhook_ca_bundles"` // of reconcilerWebhookBundleType
}

// webhookBundlesAttribute is webhook_ca_bundles: the webhook
// configurations and CRD conversion webhooks the reconciler keeps
// (reconcilerinstall.Config.WebhookCABundles).
var webhookBundlesAttribute = reconcilerPatternAttribute{
	name:   "webhook_ca_bundles",
	schema: func() schema.Attribute { return webhookBundlesSchema() },
	toConfig: func(ctx context.Context, m *reconcilerModel, c *reconcilerinstall.Config) diag.Diagnostics {
		kept, diags := webhookBundlesConfig(ctx, m.WebhookBundles)
		c.WebhookCABundles = kept
		return diags
	},
	fromLive: func(ctx context.Context, state *reconcilerModel, got, _ reconcilerinstall.Config) diag.Diagnostics {
		v, diags := webhookBundlesValue(ctx, got.WebhookCABundles)
		state.WebhookBundles = v
		return diags
	},
}

// webhookBundlesSchema is webhook_ca_bundles' schema.
func webhookBundlesSchema() schema.MapNestedAttribute {
	return schema.MapNestedAttribute{
		Optional: true, Computed: true,
		Default: mapdefault.StaticValue(types.MapValueMust(reconcilerWebhookBundleType, map[string]attr.Value{})),
		MarkdownDescription: "The webhook configurations and CRD conversion webhooks the reconciler keeps, keyed by `<kind>/<name>` " +
			"(the `id` of each `kmshealth_webhook_cabundle`), each with its `source` (`<Kind>/<namespace>/<name>/<key>`, the resource's " +
			"`ca_bundle_source`) and `webhooks` (unset: every webhook). Write " +
			"`{ for r in kmshealth_webhook_cabundle.x : r.id => { source = r.ca_bundle_source, webhooks = r.webhooks } }`. " +
			"They are recorded in the ConfigMap `<name>-record`, which the reconciler watches, so a configuration its installer " +
			"replaces gets its caBundles back. The ClusterRole may get and patch exactly these objects (by `resourceNames`; it lists and " +
			"watches all webhook configurations, which are not secret, and each kept CRD by name), " +
			"the sources Roles read exactly their sources, and the admission policy lets the reconciler change only these caBundles.",
		Validators: []validator.Map{webhookBundleKeys{}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"source": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "`<Kind>/<namespace>/<name>/<key>` of the Secret or ConfigMap key that holds the bundle.",
				Validators:          []validator.String{caBundleSource{}},
			},
			"webhooks": schema.SetAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "The webhooks whose caBundle to keep; unset: every webhook of the configuration. Not for a CRD.",
				Validators:          []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueStringsAre(objectName)},
			},
		}},
	}
}

// webhookBundleKeys checks each key is <kind>/<name> of a webhook kind.
type webhookBundleKeys struct{}

func (webhookBundleKeys) Description(context.Context) string {
	return "keys are <kind>/<name> with kind ValidatingWebhookConfiguration, MutatingWebhookConfiguration or CustomResourceDefinition"
}

func (v webhookBundleKeys) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (webhookBundleKeys) ValidateMap(ctx context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for key := range req.ConfigValue.Elements() {
		if _, err := webhookTarget(key); err != nil {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(key), "Invalid webhook caBundle key", err.Error())
		}
	}
}

func webhookTarget(key string) (cabundle.Target, error) {
	t, err := cabundle.ParseTarget(key)
	if err != nil {
		return t, err
	}
	if t.Kind == cabundle.KindAPIService {
		return t, fmt.Errorf("%q: an APIService is kept by ca_bundles, not webhook_ca_bundles", key)
	}
	if msgs := validation.IsDNS1123Subdomain(t.Name); len(msgs) > 0 {
		return t, fmt.Errorf("%q: %s name %q: %s", key, t.Kind, t.Name, strings.Join(msgs, "; "))
	}
	return t, nil
}

// webhookBundlesConfig is the installer's WebhookCABundles of m.
func webhookBundlesConfig(ctx context.Context, m types.Map) ([]cabundle.Kept, diag.Diagnostics) {
	var diags diag.Diagnostics
	var entries map[string]reconcilerWebhookBundleModel
	diags.Append(m.ElementsAs(ctx, &entries, false)...)
	var out []cabundle.Kept
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		e := entries[key]
		at := path.Root("webhook_ca_bundles").AtMapKey(key)
		t, err := webhookTarget(key)
		if err != nil {
			diags.AddAttributeError(at, "Invalid webhook caBundle key", err.Error())
			continue
		}
		src, err := cabundle.ParseSource(e.Source.ValueString())
		if err != nil {
			diags.AddAttributeError(at.AtName("source"), "Invalid CA bundle source", err.Error())
			continue
		}
		if !e.Webhooks.IsNull() {
			diags.Append(e.Webhooks.ElementsAs(ctx, &t.Webhooks, false)...)
			slices.Sort(t.Webhooks)
		}
		out = append(out, cabundle.Kept{Target: t, Source: src})
	}
	return out, diags
}

// webhookBundlesValue is webhook_ca_bundles as recorded.
func webhookBundlesValue(ctx context.Context, kept []cabundle.Kept) (types.Map, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make(map[string]attr.Value, len(kept))
	for _, k := range kept {
		hooks := types.SetNull(types.StringType)
		if len(k.Target.Webhooks) > 0 {
			var d diag.Diagnostics
			hooks, d = types.SetValueFrom(ctx, types.StringType, k.Target.Webhooks)
			diags.Append(d...)
		}
		elems[k.Target.String()] = types.ObjectValueMust(reconcilerWebhookBundleType.AttrTypes, map[string]attr.Value{
			"source": types.StringValue(k.Source.String()), "webhooks": hooks,
		})
	}
	v, d := types.MapValue(reconcilerWebhookBundleType, elems)
	diags.Append(d...)
	return v, diags
}
