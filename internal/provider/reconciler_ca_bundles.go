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
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"

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
// each other. It reads the kept APIServices only then (liveAPIServices): a
// plan that changes neither costs nothing.
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
	names := slices.Sorted(maps.Keys(plan.CABundles.Elements()))
	live := liveAPIServices(ctx, agg.ApiregistrationV1().APIServices(), names)
	for _, apiservice := range names {
		a, ok := live[apiservice]
		if !ok {
			continue // not there yet, or unreadable: nothing to compare
		}
		if owners := cabundle.BundleOwners(a); len(owners) > 0 && !slices.Contains(owners, manager) {
			diags.AddAttributeWarning(path.Root("field_manager"), "Another field manager owns a caBundle this reconciler keeps",
				fmt.Sprintf("spec.caBundle of APIService %q is owned by the field manager(s) %q, but the reconciler writes as %q: each would take the "+
					"field from the other and every plan would show drift. Set field_manager to the field_manager of the kmshealth_apiservice_cabundle "+
					"that manages %q (or the other way round).", apiservice, owners, manager, apiservice))
		}
	}
}

// liveAPIServices returns those of the APIServices names that it can read,
// by name. Several are read with one LIST (APIServices are not secret, and a
// cluster has a few hundred at most), so a plan keeping 1,000 costs one
// request, not 1,000 through the client's rate limit; one, or credentials
// that may get but not list them, cost one GET each.
func liveAPIServices(ctx context.Context, c apiregclient.APIServiceInterface, names []string) map[string]*apiregv1.APIService {
	live := make(map[string]*apiregv1.APIService, len(names))
	if len(names) > 1 {
		if list, err := c.List(ctx, metav1.ListOptions{}); err == nil {
			kept := make(map[string]bool, len(names))
			for _, name := range names {
				kept[name] = true
			}
			for i := range list.Items {
				if kept[list.Items[i].Name] {
					live[list.Items[i].Name] = &list.Items[i]
				}
			}
			return live
		}
	}
	for _, name := range names {
		if a, err := c.Get(ctx, name, metav1.GetOptions{}); err == nil {
			live[name] = a
		}
	}
	return live
}
