package provider

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// reconcilerTLSProfilesModel is kmshealth_reconciler's tls_profiles.
type reconcilerTLSProfilesModel struct {
	TLSProfiles types.List `tfsdk:"tls_profiles"` // of reconcilerTLSProfileType
}

// tlsProfilesAttribute is tls_profiles: the profile ConfigMaps the
// reconciler keeps (reconcilerinstall.Config.TLSProfiles), with the
// rollout targets warning.
var tlsProfilesAttribute = reconcilerPatternAttribute{
	name: "tls_profiles",
	schema: func() schema.Attribute {
		return schema.ListNestedAttribute{
			Optional: true, Computed: true,
			Default: listdefault.StaticValue(types.ListValueMust(reconcilerTLSProfileType, []attr.Value{})),
			MarkdownDescription: "The `kmshealth_tls_profile_configmap` ConfigMaps the reconciler keeps (read from its record at run time: a new entry needs no restart): it restores an " +
				"edited `" + tlsprofile.DocumentKey + "` or a removed hash annotation, and for `source = \"cluster\"` follows OpenShift's " +
				"`APIServer` `cluster`, rewriting the ConfigMap and rolling the targets when the cluster profile changes. Write " +
				"`[for p in [kmshealth_tls_profile_configmap.x] : { namespace = p.namespace, name = p.name, rollout_targets = p.rollout_targets }]`: " +
				"`rollout_targets` must list the same workloads as the profile resource, because the reconciler's RBAC names exactly " +
				"these. A Role `kmshealth-reconciler-<name>-tls-profiles` in each namespace of a profile or a target grants get/list/watch/patch " +
				"on exactly these ConfigMaps and workloads (by `resourceNames`) and Events there; the ClusterRole adds get/list/watch on " +
				"`apiservers.config.openshift.io` `cluster`; and with `admission_policy`, the API server lets the reconciler change only " +
				"`data." + tlsprofile.DocumentKey + "` of these ConfigMaps and only the `" + tlsprofile.HashAnnotation + "` annotation of " +
				"these workloads' pod templates.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"namespace": schema.StringAttribute{Required: true, Validators: []validator.String{namespaceName},
					MarkdownDescription: "Namespace of the profile ConfigMap (its `namespace`)."},
				"name": schema.StringAttribute{Required: true, Validators: []validator.String{objectName},
					MarkdownDescription: "Name of the profile ConfigMap (its `name`)."},
				"rollout_targets": schema.ListNestedAttribute{Optional: true,
					MarkdownDescription: "The profile's `rollout_targets`, as given to the profile resource.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"kind": schema.StringAttribute{Required: true, Validators: []validator.String{stringvalidator.OneOf(tlsprofile.TargetKinds()...)},
							MarkdownDescription: "`Deployment`, `StatefulSet` or `DaemonSet` (apps/v1)."},
						"namespace": schema.StringAttribute{Required: true, Validators: []validator.String{namespaceName},
							MarkdownDescription: "Namespace of the workload."},
						"name": schema.StringAttribute{Required: true, Validators: []validator.String{objectName},
							MarkdownDescription: "Name of the workload."},
					}},
					Validators: []validator.List{listvalidator.UniqueValues()},
				},
			}},
			Validators: []validator.List{listvalidator.UniqueValues()},
		}
	},
	toConfig: func(ctx context.Context, m *reconcilerModel, c *reconcilerinstall.Config) diag.Diagnostics {
		profiles, diags := m.tlsProfiles(ctx)
		c.TLSProfiles = profiles
		return diags
	},
	fromLive: func(ctx context.Context, state *reconcilerModel, got, want reconcilerinstall.Config) diag.Diagnostics {
		// The profiles as recorded, in the configuration's order and shape
		// when they are the same.
		if sameTLSProfiles(got.TLSProfiles, want.TLSProfiles) && !state.TLSProfiles.IsNull() && !state.TLSProfiles.IsUnknown() {
			return nil
		}
		profiles, diags := tlsProfilesValue(ctx, got.TLSProfiles)
		state.TLSProfiles = profiles
		return diags
	},
	warn: (*reconcilerResource).warnTLSTargets,
}

// reconcilerTLSProfileModel is one element of tls_profiles.
type reconcilerTLSProfileModel struct {
	Namespace      types.String `tfsdk:"namespace"`
	Name           types.String `tfsdk:"name"`
	RolloutTargets types.List   `tfsdk:"rollout_targets"` // of rolloutTargetType
}

var reconcilerTLSProfileType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"namespace": types.StringType, "name": types.StringType, "rollout_targets": types.ListType{ElemType: rolloutTargetType},
}}

// tlsProfiles reads tls_profiles; a null rollout_targets is none.
func (m *reconcilerModel) tlsProfiles(ctx context.Context) ([]reconcilerinstall.TLSProfile, diag.Diagnostics) {
	var elems []reconcilerTLSProfileModel
	diags := m.TLSProfiles.ElementsAs(ctx, &elems, false)
	out := make([]reconcilerinstall.TLSProfile, 0, len(elems))
	for _, e := range elems {
		p := reconcilerinstall.TLSProfile{Namespace: e.Namespace.ValueString(), Name: e.Name.ValueString()}
		var targets []rolloutTargetModel
		diags.Append(e.RolloutTargets.ElementsAs(ctx, &targets, false)...)
		for _, t := range targets {
			p.Targets = append(p.Targets, tlsprofile.Target{Kind: kube.WorkloadKind(t.Kind.ValueString()), Namespace: t.Namespace.ValueString(), Name: t.Name.ValueString()})
		}
		out = append(out, p)
	}
	return out, diags
}

// tlsProfilesValue is profiles as a tls_profiles value: no targets is a
// null rollout_targets, as when a profile resource has none.
func tlsProfilesValue(ctx context.Context, profiles []reconcilerinstall.TLSProfile) (types.List, diag.Diagnostics) {
	var diags diag.Diagnostics
	elems := make([]reconcilerTLSProfileModel, 0, len(profiles))
	for _, p := range profiles {
		targets := types.ListNull(rolloutTargetType)
		if len(p.Targets) > 0 {
			ts := make([]rolloutTargetModel, len(p.Targets))
			for i, t := range p.Targets {
				ts[i] = rolloutTargetModel{Kind: types.StringValue(string(t.Kind)), Namespace: types.StringValue(t.Namespace), Name: types.StringValue(t.Name)}
			}
			var d diag.Diagnostics
			targets, d = types.ListValueFrom(ctx, rolloutTargetType, ts)
			diags.Append(d...)
		}
		elems = append(elems, reconcilerTLSProfileModel{Namespace: types.StringValue(p.Namespace), Name: types.StringValue(p.Name), RolloutTargets: targets})
	}
	v, d := types.ListValueFrom(ctx, reconcilerTLSProfileType, elems)
	diags.Append(d...)
	return v, diags
}

// sameTLSProfiles reports whether a and b keep the same profiles with the
// same targets, in any order.
func sameTLSProfiles(a, b []reconcilerinstall.TLSProfile) bool {
	key := func(ps []reconcilerinstall.TLSProfile) []string {
		var out []string
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, p.ID()+" "+t.String())
			}
			out = append(out, p.ID())
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(key(a), key(b))
}

// warnTLSTargets warns, when a plan changes tls_profiles, about each
// profile ConfigMap that already exists and lists other rollout targets
// than given here: the reconciler's RBAC names exactly the targets given
// here, so it could not keep the others. One GET per profile, and only
// then.
func (r *reconcilerResource) warnTLSTargets(ctx context.Context, plan, state *reconcilerModel, diags *diag.Diagnostics) {
	if plan.TLSProfiles.IsUnknown() || !r.clients.Known() || (state != nil && state.TLSProfiles.Equal(plan.TLSProfiles)) {
		return
	}
	profiles, d := plan.tlsProfiles(ctx)
	if d.HasError() {
		return // unknown targets: nothing to compare yet
	}
	core, err := r.clients.Core()
	if err != nil {
		return // the apply reports the connection
	}
	for i, p := range profiles {
		live, err := core.CoreV1().ConfigMaps(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || live.Labels[tlsprofile.ProfileLabel] != "true" {
			continue // not there yet, or not a profile: the reconciler reports it
		}
		_, targets, err := tlsprofile.FromConfigMap(live.Annotations)
		if err != nil {
			continue
		}
		given := reconcilerinstall.TLSProfile{Namespace: p.Namespace, Name: p.Name, Targets: targets}
		if !sameTLSProfiles([]reconcilerinstall.TLSProfile{given}, []reconcilerinstall.TLSProfile{p}) {
			diags.AddAttributeWarning(path.Root("tls_profiles").AtListIndex(i).AtName("rollout_targets"), "Rollout targets differ from the profile's",
				fmt.Sprintf("ConfigMap %s lists the rollout targets [%s], but tls_profiles gives [%s]: the reconciler may annotate only the "+
					"workloads given here. Set rollout_targets to the profile resource's rollout_targets.", p.ID(), tlsprofile.Describe(targets), tlsprofile.Describe(p.Targets)))
		}
	}
}
