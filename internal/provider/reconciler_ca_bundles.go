package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
)

// reconcilerCABundlesModel is kmshealth_reconciler's ca_bundles.
type reconcilerCABundlesModel struct {
	CABundles types.Map `tfsdk:"ca_bundles"`
}

// caBundlesAttribute is ca_bundles: the APIServices the reconciler keeps
// (reconcilerinstall.Config.CABundles), with the field manager warning.
var caBundlesAttribute = reconcilerPatternAttribute{
	name: "ca_bundles",
	schema: func() schema.Attribute {
		return schema.MapAttribute{
			ElementType: types.StringType,
			Optional:    true, Computed: true,
			Default: mapdefault.StaticValue(types.MapValueMust(types.StringType, map[string]attr.Value{})),
			MarkdownDescription: "The APIServices the reconciler keeps, each with its CA bundle source as `<Kind>/<namespace>/<name>/<key>`: " +
				"exactly the `apiservice_name` and `ca_bundle_source` of each `kmshealth_apiservice_cabundle`, so write " +
				"`{ for r in kmshealth_apiservice_cabundle.x : r.apiservice_name => r.ca_bundle_source }`. They are recorded in the " +
				"ConfigMap `<name>-record`, which the reconciler watches: that record, not the annotation on the APIService, is what it " +
				"keeps, so an APIService that its installer replaces or re-creates gets its caBundle back. The ClusterRole may get and " +
				"patch exactly these APIServices (it lists and watches all APIServices, which are not secret), and for each source namespace a Role `kmshealth-reconciler-<name>-sources` grants " +
				"get/list/watch on exactly these Secrets and ConfigMaps (by `resourceNames`) and nothing else.",
			Validators: []validator.Map{
				mapvalidator.KeysAre(objectName),
				mapvalidator.ValueStringsAre(caBundleSource{}),
			},
		}
	},
	toConfig: func(ctx context.Context, m *reconcilerModel, c *reconcilerinstall.Config) diag.Diagnostics {
		var diags diag.Diagnostics
		var bundles map[string]string
		diags.Append(m.CABundles.ElementsAs(ctx, &bundles, false)...)
		for apiservice, v := range bundles {
			s, err := cabundle.ParseSource(v)
			if err != nil {
				diags.AddAttributeError(path.Root("ca_bundles").AtMapKey(apiservice), "Invalid CA bundle source", err.Error())
				continue
			}
			if c.CABundles == nil {
				c.CABundles = map[string]cabundle.Source{}
			}
			c.CABundles[apiservice] = s
		}
		return diags
	},
	fromLive: func(ctx context.Context, state *reconcilerModel, got, _ reconcilerinstall.Config) diag.Diagnostics {
		bundles := make(map[string]string, len(got.CABundles))
		for apiservice, s := range got.CABundles {
			bundles[apiservice] = s.String()
		}
		recorded, diags := types.MapValueFrom(ctx, types.StringType, bundles)
		state.CABundles = recorded
		return diags
	},
	warn: (*reconcilerResource).warnFieldManager,
}

// warnFieldManager warns, when a plan changes field_manager or ca_bundles,
// about each kept APIService whose caBundle is owned by server-side apply
// of other field managers only (a kmshealth_apiservice_cabundle with
// another field_manager): the reconciler and it would take the field from
// each other. One GET per kept APIService, and only then: a plan that
// changes neither costs nothing.
func (r *reconcilerResource) warnFieldManager(ctx context.Context, plan, state *reconcilerModel, diags *diag.Diagnostics) {
	if plan.FieldManager.IsUnknown() || plan.CABundles.IsUnknown() || !r.clients.Known() ||
		(state != nil && state.FieldManager.Equal(plan.FieldManager) && state.CABundles.Equal(plan.CABundles)) {
		return
	}
	agg, err := r.clients.Aggregator()
	if err != nil {
		return // the apply reports the connection
	}
	manager := plan.FieldManager.ValueString()
	for _, apiservice := range slices.Sorted(maps.Keys(plan.CABundles.Elements())) {
		live, err := agg.ApiregistrationV1().APIServices().Get(ctx, apiservice, metav1.GetOptions{})
		if err != nil {
			continue // not there yet, or unreadable: nothing to compare
		}
		if owners := cabundle.BundleOwners(live); len(owners) > 0 && !slices.Contains(owners, manager) {
			diags.AddAttributeWarning(path.Root("field_manager"), "Another field manager owns a caBundle this reconciler keeps",
				fmt.Sprintf("spec.caBundle of APIService %q is owned by the field manager(s) %q, but the reconciler writes as %q: each would take the "+
					"field from the other and every plan would show drift. Set field_manager to the field_manager of the kmshealth_apiservice_cabundle "+
					"that manages %q (or the other way round).", apiservice, owners, manager, apiservice))
		}
	}
}
