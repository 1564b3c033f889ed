package provider

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
)

// reconcilerRBACProxiesModel is kmshealth_reconciler's rbac_proxy_sidecars.
type reconcilerRBACProxiesModel struct {
	RBACProxies types.List `tfsdk:"rbac_proxy_sidecars"` // of reconcilerRBACProxyType
}

// rbacProxiesAttribute is rbac_proxy_sidecars: the protected workloads
// whose sidecar the reconciler puts back (reconcilerinstall.Config.RBACProxies),
// with the pinned sidecar checked at plan time.
var rbacProxiesAttribute = reconcilerPatternAttribute{
	name: "rbac_proxy_sidecars",
	schema: func() schema.Attribute {
		return schema.ListNestedAttribute{
			Optional: true, Computed: true,
			Default: listdefault.StaticValue(types.ListValueMust(reconcilerRBACProxyType, []attr.Value{})),
			MarkdownDescription: "The workloads of `kmshealth_rbac_proxy_sidecar` whose sidecar the reconciler puts back when a Helm upgrade " +
				"or `kubectl replace` removes it (read from its record at run time, so a new entry needs no restart; it learns each sidecar from the resource's config ConfigMap). Write " +
				"`[for s in [kmshealth_rbac_proxy_sidecar.x] : { target = s.target, image = s.image, args = s.args, pinned_sidecar = s.pinned_sidecar }]`. A Role " +
				"`kmshealth-reconciler-<name>-rbac-proxies` in each workload namespace grants get/list/watch on exactly the config ConfigMaps, " +
				"get/list/watch/patch on exactly these workloads (by `resourceNames`) and Events there; and with `admission_policy`, the API " +
				"server lets the reconciler write into these workloads only this sidecar, whole — the container of `pinned_sidecar` field for " +
				"field (no command, environment, hook, extra probe, port or security option beyond it) — its config and TLS volumes as recorded " +
				"and its config hash annotation. Pass the sidecar resource's own values, so a change of the sidecar updates the pin in the same apply.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"target": schema.SingleNestedAttribute{Required: true,
					MarkdownDescription: "The protected workload: the sidecar resource's `target`.",
					Attributes: map[string]schema.Attribute{
						"kind": schema.StringAttribute{Required: true, Validators: []validator.String{stringvalidator.OneOf(rbacProxyKinds()...)},
							MarkdownDescription: "`Deployment`, `StatefulSet` or `DaemonSet` (apps/v1)."},
						"namespace": schema.StringAttribute{Required: true, Validators: []validator.String{namespaceName},
							MarkdownDescription: "Namespace of the workload."},
						"name": schema.StringAttribute{Required: true, Validators: []validator.String{objectName},
							MarkdownDescription: "Name of the workload."},
					}},
				"image": schema.StringAttribute{Required: true,
					MarkdownDescription: "The sidecar's image: the sidecar resource's `image`. The admission policy allows no other."},
				"args": schema.ListAttribute{Required: true, ElementType: types.StringType,
					Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
					MarkdownDescription: "The sidecar's arguments: the sidecar resource's `args`. The admission policy allows no others."},
				"pinned_sidecar": schema.StringAttribute{Required: true,
					MarkdownDescription: "The whole sidecar: the sidecar resource's `pinned_sidecar` (JSON). The admission policy requires the " +
						"sidecar the reconciler writes to equal its container field for field, and its volumes and config hash; its `image` and " +
						"`args` must be this entry's."},
			}},
			Validators: []validator.List{listvalidator.UniqueValues()},
		}
	},
	toConfig: func(ctx context.Context, m *reconcilerModel, c *reconcilerinstall.Config) diag.Diagnostics {
		proxies, diags := m.rbacProxies(ctx)
		c.RBACProxies = proxies
		return diags
	},
	fromLive: func(ctx context.Context, state *reconcilerModel, got, want reconcilerinstall.Config) diag.Diagnostics {
		if sameRBACProxies(got.RBACProxies, want.RBACProxies) && !state.RBACProxies.IsNull() && !state.RBACProxies.IsUnknown() {
			return nil
		}
		proxies, diags := rbacProxiesValue(ctx, got.RBACProxies)
		state.RBACProxies = proxies
		return diags
	},
	validate: (*reconcilerModel).validatePinnedSidecars,
}

// reconcilerRBACProxyModel is one element of rbac_proxy_sidecars.
type reconcilerRBACProxyModel struct {
	Target        types.Object `tfsdk:"target"` // of rbacProxyTargetType
	Image         types.String `tfsdk:"image"`
	Args          types.List   `tfsdk:"args"`
	PinnedSidecar types.String `tfsdk:"pinned_sidecar"`
}

var (
	rbacProxyTargetType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"kind": types.StringType, "namespace": types.StringType, "name": types.StringType,
	}}
	reconcilerRBACProxyType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"target": rbacProxyTargetType, "image": types.StringType, "args": types.ListType{ElemType: types.StringType},
		"pinned_sidecar": types.StringType,
	}}
)

// rbacProxies reads rbac_proxy_sidecars.
func (m *reconcilerModel) rbacProxies(ctx context.Context) ([]reconcilerinstall.RBACProxy, diag.Diagnostics) {
	var elems []reconcilerRBACProxyModel
	diags := m.RBACProxies.ElementsAs(ctx, &elems, false)
	out := make([]reconcilerinstall.RBACProxy, 0, len(elems))
	for _, e := range elems {
		var t rolloutTargetModel
		diags.Append(e.Target.As(ctx, &t, basetypes.ObjectAsOptions{})...)
		p := reconcilerinstall.RBACProxy{
			Target: rbacproxy.Target{Kind: rbacproxy.Kind(t.Kind.ValueString()), Namespace: t.Namespace.ValueString(), Name: t.Name.ValueString()},
			Image:  e.Image.ValueString(),
			Pinned: e.PinnedSidecar.ValueString(),
		}
		diags.Append(e.Args.ElementsAs(ctx, &p.Args, false)...)
		out = append(out, p)
	}
	return out, diags
}

// rbacProxiesValue is proxies as an rbac_proxy_sidecars value.
func rbacProxiesValue(ctx context.Context, proxies []reconcilerinstall.RBACProxy) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make([]reconcilerRBACProxyModel, 0, len(proxies))
	for _, p := range proxies {
		target, d := types.ObjectValueFrom(ctx, rbacProxyTargetType.AttrTypes, rolloutTargetModel{
			Kind: types.StringValue(string(p.Target.Kind)), Namespace: types.StringValue(p.Target.Namespace), Name: types.StringValue(p.Target.Name)})
		diags.Append(d...)
		args, d := types.ListValueFrom(ctx, types.StringType, p.Args)
		diags.Append(d...)
		elems = append(elems, reconcilerRBACProxyModel{Target: target, Image: types.StringValue(p.Image), Args: args, PinnedSidecar: types.StringValue(p.Pinned)})
	}
	v, d := types.ListValueFrom(ctx, reconcilerRBACProxyType, elems)
	diags.Append(d...)
	return v, diags
}

// sameRBACProxies reports whether a and b keep the same workloads with the
// same sidecars, in any order.
func sameRBACProxies(a, b []reconcilerinstall.RBACProxy) bool {
	key := func(ps []reconcilerinstall.RBACProxy) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.Target.String() + " " + p.Image + " " + strings.Join(p.Args, "\x00") + " " + p.Pinned
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// validatePinnedSidecars checks, at plan time where known, that each
// rbac_proxy_sidecars entry's pinned_sidecar decodes and is the sidecar of
// its image and args (the installer checks the same at apply).
func (m *reconcilerModel) validatePinnedSidecars(ctx context.Context, diags *diag.Diagnostics) {
	if m.RBACProxies.IsNull() || m.RBACProxies.IsUnknown() {
		return
	}
	var elems []reconcilerRBACProxyModel
	if d := m.RBACProxies.ElementsAs(ctx, &elems, false); d.HasError() {
		return // unknown parts: judged at apply
	}
	for i, e := range elems {
		if e.PinnedSidecar.IsNull() || e.PinnedSidecar.IsUnknown() {
			continue
		}
		at := path.Root("rbac_proxy_sidecars").AtListIndex(i).AtName("pinned_sidecar")
		pinned, err := rbacproxy.DecodePinned(e.PinnedSidecar.ValueString())
		if err != nil {
			diags.AddAttributeError(at, "Invalid pinned_sidecar", "rbac_proxy_sidecars["+strconv.Itoa(i)+"].pinned_sidecar: "+err.Error()+"; write the entry as "+
				"`{ target = s.target, image = s.image, args = s.args, pinned_sidecar = s.pinned_sidecar }`.")
			continue
		}
		var args []string
		if e.Image.IsUnknown() || e.Args.IsUnknown() || e.Args.ElementsAs(ctx, &args, false).HasError() {
			continue
		}
		if pinned.Container.Image != e.Image.ValueString() || !slices.Equal(pinned.Container.Args, args) {
			diags.AddAttributeError(at, "pinned_sidecar of another sidecar",
				"Its image and args are not this entry's: pass image, args and pinned_sidecar of the same kmshealth_rbac_proxy_sidecar.")
		}
	}
}

// rbacProxyKinds are the kinds a protected workload may be.
func rbacProxyKinds() []string {
	out := make([]string, 0, len(rbacproxy.Kinds()))
	for _, k := range rbacproxy.Kinds() {
		out = append(out, string(k))
	}
	return out
}
