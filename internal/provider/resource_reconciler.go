package provider

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

var (
	_ resource.ResourceWithConfigure      = (*reconcilerResource)(nil)
	_ resource.ResourceWithValidateConfig = (*reconcilerResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*reconcilerResource)(nil)
	_ resource.ResourceWithImportState    = (*reconcilerResource)(nil)
)

// defaultRolloutTimeout bounds wait_for_rollout unless timeouts says otherwise.
const defaultRolloutTimeout = 10 * time.Minute

// NewReconcilerResource is the factory of kmshealth_reconciler.
func NewReconcilerResource() resource.Resource { return &reconcilerResource{} }

type reconcilerResource struct {
	clients *Clients
}

type reconcilerModel struct {
	ID              types.String   `tfsdk:"id"`
	Namespace       types.String   `tfsdk:"namespace"`
	Name            types.String   `tfsdk:"name"`
	CreateNamespace types.Bool     `tfsdk:"create_namespace"`
	Image           types.String   `tfsdk:"image"`
	Replicas        types.Int64    `tfsdk:"replicas"`
	CABundles       types.Map      `tfsdk:"ca_bundles"`
	WebhookBundles  types.Map      `tfsdk:"webhook_ca_bundles"` // of reconcilerWebhookBundleType
	KMSTarget       types.String   `tfsdk:"kms_target"`
	KMSMaxStaleness types.String   `tfsdk:"kms_max_staleness"`
	FieldManager    types.String   `tfsdk:"field_manager"`
	TLSProfiles     types.List     `tfsdk:"tls_profiles"`        // of reconcilerTLSProfileType
	RBACProxies     types.List     `tfsdk:"rbac_proxy_sidecars"` // of reconcilerRBACProxyType
	WaitForRollout  types.Bool     `tfsdk:"wait_for_rollout"`
	ServiceAccount  types.String   `tfsdk:"service_account"`
	ClusterRole     types.String   `tfsdk:"cluster_role"`
	MetricsService  types.String   `tfsdk:"metrics_service"`
	ObjectsInSync   types.Bool     `tfsdk:"objects_in_sync"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`

	resourcesModel // cpu_request, memory_request, memory_limit
	admissionModel // admission_policy, admission_policy_enforced
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

// reconcilerRBACProxyModel is one element of rbac_proxy_sidecars.
type reconcilerRBACProxyModel struct {
	Target types.Object `tfsdk:"target"` // of rbacProxyTargetType
	Image  types.String `tfsdk:"image"`
	Args   types.List   `tfsdk:"args"`
}

var (
	rbacProxyTargetType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"kind": types.StringType, "namespace": types.StringType, "name": types.StringType,
	}}
	reconcilerRBACProxyType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"target": rbacProxyTargetType, "image": types.StringType, "args": types.ListType{ElemType: types.StringType},
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
		elems = append(elems, reconcilerRBACProxyModel{Target: target, Image: types.StringValue(p.Image), Args: args})
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
			out[i] = p.Target.String() + " " + p.Image + " " + strings.Join(p.Args, "\x00")
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

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
			p.Targets = append(p.Targets, tlsprofile.Target{Kind: t.Kind.ValueString(), Namespace: t.Namespace.ValueString(), Name: t.Name.ValueString()})
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
				ts[i] = rolloutTargetModel{Kind: types.StringValue(t.Kind), Namespace: types.StringValue(t.Namespace), Name: types.StringValue(t.Name)}
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

// config is the installation the model describes; values must be known.
func (m *reconcilerModel) config(ctx context.Context) (reconcilerinstall.Config, diag.Diagnostics) {
	c := reconcilerinstall.Config{
		Namespace:       m.Namespace.ValueString(),
		Name:            m.Name.ValueString(),
		CreateNamespace: m.CreateNamespace.ValueBool(),
		Image:           m.Image.ValueString(),
		Replicas:        int32(m.Replicas.ValueInt64()), // validated: 1 to MaxInt32
		Resources:       m.resources(),
		AdmissionPolicy: m.AdmissionPolicyEnforced.ValueBool(),
		FieldManager:    m.FieldManager.ValueString(),
	}
	var diags diag.Diagnostics
	if t, err := kmshealth.ParseTarget(m.KMSTarget.ValueString()); err != nil {
		diags.AddAttributeError(path.Root("kms_target"), "Invalid target", err.Error())
	} else {
		c.KMSTarget = t
	}
	if d, err := time.ParseDuration(m.KMSMaxStaleness.ValueString()); err != nil {
		diags.AddAttributeError(path.Root("kms_max_staleness"), "Invalid duration", err.Error())
	} else {
		c.KMSMaxStaleness = d
	}
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
	kept, d := webhookBundlesConfig(ctx, m.WebhookBundles)
	diags.Append(d...)
	c.WebhookCABundles = kept
	profiles, d := m.tlsProfiles(ctx)
	diags.Append(d...)
	c.TLSProfiles = profiles
	proxies, d := m.rbacProxies(ctx)
	diags.Append(d...)
	c.RBACProxies = proxies
	return c, diags
}

// setNames fills the computed names from namespace and name.
func (m *reconcilerModel) setNames() {
	if m.Namespace.IsUnknown() || m.Name.IsUnknown() {
		m.ID, m.ServiceAccount, m.ClusterRole, m.MetricsService = types.StringUnknown(), types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		return
	}
	c := reconcilerinstall.Config{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	m.ID = types.StringValue(c.ID())
	m.ServiceAccount = types.StringValue(c.ServiceAccountName())
	m.ClusterRole = types.StringValue(c.ClusterRoleName())
	m.MetricsService = types.StringValue(c.MetricsServiceName())
}

func (r *reconcilerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_reconciler"
}

func (r *reconcilerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	emptyMap := types.MapValueMust(types.StringType, map[string]attr.Value{})
	cpuRequest, memoryRequest, memoryLimit := resourceAttributes("reconciler", reconcilerinstall.DefaultResources())
	admissionPolicy, admissionEnforced := admissionAttributes("reconciler",
		"may change only `spec.caBundle` and the `kmshealth.io/ca-bundle-source` annotation, only on APIServices with `spec.service`, never create "+
			"or delete one, and on the KMS target's status only `KMSPluginsDegraded` (and remove reporter conditions of deleted Nodes)")
	resp.Schema = schema.Schema{
		MarkdownDescription: "Installs the in-cluster reconciler (`terraform-provider-kmshealth reconcile`), which keeps every " +
			"`kmshealth_apiservice_cabundle` true between applies: a watch-driven Deployment behind leader election, " +
			"with least-privilege RBAC (read access to exactly the named CA bundle sources), a PodDisruptionBudget and " +
			"a metrics Service. All objects are written by server-side apply under the field manager `kmshealth`.",
		Attributes: map[string]schema.Attribute{
			"id": importIDAttribute(),
			"namespace": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Namespace the reconciler runs in; it also holds its leader-election Lease. It must exist, " +
					"unless `create_namespace = true`. Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{namespaceName},
			},
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(reconcilerinstall.DefaultName),
				MarkdownDescription: "Name of the ServiceAccount, Deployment, PodDisruptionBudget and leader-election Lease, and prefix of the other objects: " +
					"two reconcilers of different names in one namespace elect a leader each. " +
					"Default `" + reconcilerinstall.DefaultName + "`. A DNS-1035 label of at most 55 characters (so `<name>-metrics` is a valid Service name). Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{reconcilerName},
			},
			"create_namespace": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default: booldefault.StaticBool(false),
				MarkdownDescription: "Create `namespace` (labelled as kmshealth's, enforcing the `restricted` Pod Security Standard) " +
					"and delete it on destroy, which waits (up to the `delete` timeout) until the namespace is gone, so an apply right " +
					"after a destroy finds no `Terminating` namespace. Default `false`. An existing namespace that kmshealth did not create is never " +
					"taken over or deleted: with `true` the apply stops instead. Turning it off later hands the namespace over (its " +
					"kmshealth labels are removed) and destroy keeps it.",
			},
			"image": imageAttribute("reconciler", "so the two never skew and upgrading the provider rolls the reconciler"),
			"replicas": schema.Int64Attribute{
				Optional: true, Computed: true,
				Default: int64default.StaticInt64(reconcilerinstall.DefaultReplicas),
				MarkdownDescription: "Number of reconciler pods. Default `2`: one leads, the others take over within the 15 s lease. " +
					"With more than one, a PodDisruptionBudget keeps one through voluntary disruptions and a preferred " +
					"anti-affinity spreads them over nodes.",
				Validators: []validator.Int64{int64validator.Between(1, math.MaxInt32)},
			},
			"ca_bundles": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true, Computed: true,
				Default: mapdefault.StaticValue(emptyMap),
				MarkdownDescription: "The APIServices the reconciler keeps, each with its CA bundle source as `<Kind>/<namespace>/<name>/<key>`: " +
					"exactly the `apiservice_name` and `ca_bundle_source` of each `kmshealth_apiservice_cabundle`, so write " +
					"`{ for r in kmshealth_apiservice_cabundle.x : r.apiservice_name => r.ca_bundle_source }`. They are recorded in the " +
					"ConfigMap `<name>-record`, which the reconciler watches: that record, not the annotation on the APIService, is what it " +
					"keeps, so an APIService that its installer replaces or re-creates gets its caBundle back. The ClusterRole may read and " +
					"patch exactly these APIServices, and for each source namespace a Role `kmshealth-reconciler-<name>-sources` grants " +
					"get/list/watch on exactly these Secrets and ConfigMaps (by `resourceNames`) and nothing else.",
				Validators: []validator.Map{
					mapvalidator.KeysAre(objectName),
					mapvalidator.ValueStringsAre(caBundleSource{}),
				},
			},
			"webhook_ca_bundles": webhookBundlesAttribute(),
			"tls_profiles": schema.ListNestedAttribute{
				Optional: true, Computed: true,
				Default: listdefault.StaticValue(types.ListValueMust(reconcilerTLSProfileType, []attr.Value{})),
				MarkdownDescription: "The `kmshealth_tls_profile_configmap` ConfigMaps the reconciler keeps (`--tls-profile-configmaps`): it restores an " +
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
			},
			"rbac_proxy_sidecars": schema.ListNestedAttribute{
				Optional: true, Computed: true,
				Default: listdefault.StaticValue(types.ListValueMust(reconcilerRBACProxyType, []attr.Value{})),
				MarkdownDescription: "The workloads of `kmshealth_rbac_proxy_sidecar` whose sidecar the reconciler puts back when a Helm upgrade " +
					"or `kubectl replace` removes it (`--rbac-proxy-configmaps`; it learns each sidecar from the resource's config ConfigMap). Write " +
					"`[for s in [kmshealth_rbac_proxy_sidecar.x] : { target = s.target, image = s.image, args = s.args }]`. A Role " +
					"`kmshealth-reconciler-<name>-rbac-proxies` in each workload namespace grants get/list/watch on exactly the config ConfigMaps, " +
					"get/list/watch/patch on exactly these workloads (by `resourceNames`) and Events there; and with `admission_policy`, the API " +
					"server lets the reconciler write into these workloads only this sidecar — exactly this `image` and these `args`, no command, " +
					"environment, privilege or other mount — its config and TLS volumes and its config hash annotation. Pass the sidecar " +
					"resource's own values, so a change of the sidecar updates the pin in the same apply.",
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
				}},
				Validators: []validator.List{listvalidator.UniqueValues()},
			},
			"kms_target": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(kmshealth.DefaultTarget().String()),
				MarkdownDescription: "Where the KMS health aggregator rolls the reporters' conditions up into `KMSPluginsDegraded`, as " +
					"`<group>/<version>/<resource>/<name>`: the same value as the `target` of `kmshealth_reporter`. Default " +
					"`" + kmshealth.DefaultTarget().String() + "`. The ClusterRole may read and watch exactly this object and " +
					"patch only its `status`.",
				Validators: []validator.String{targetString},
			},
			"field_manager": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(cabundle.DefaultFieldManager),
				MarkdownDescription: "Server-side apply field manager the reconciler writes caBundles as (`--field-manager`). It must equal the " +
					"`field_manager` of every `kmshealth_apiservice_cabundle` in `ca_bundles`, or the two take `spec.caBundle` from each other " +
					"and every plan shows drift: a plan that changes this attribute or `ca_bundles` warns, naming each APIService whose caBundle " +
					"another manager owns. Default `kmshealth`, the default of both.",
				Validators: []validator.String{fieldManager},
			},
			"kms_max_staleness": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(reconcilerinstall.DefaultKMSMaxStaleness.String()),
				MarkdownDescription: "How old a node's last KMS plugin check may be before the aggregator counts it as stale: " +
					"4 × the `probe_interval` of `kmshealth_reporter`. Default `" + reconcilerinstall.DefaultKMSMaxStaleness.String() +
					"` for the reporter's default 30s.",
				Validators: []validator.String{goDuration{min: time.Second}},
			},
			"cpu_request":      cpuRequest,
			"memory_request":   memoryRequest,
			"memory_limit":     memoryLimit,
			"wait_for_rollout": waitForRolloutAttribute("Deployment", "every replica is updated and available"),
			"service_account": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Name of the reconciler's ServiceAccount in `namespace`; its user is `system:serviceaccount:<namespace>:<service_account>`.",
			},
			"cluster_role": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Name of the ClusterRole (and ClusterRoleBinding): `kmshealth-reconciler:<namespace>:<name>`.",
			},
			"metrics_service": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Name of the Service in front of `/metrics` (port 8443, HTTPS; callers need a token whose RBAC allows `get` on the `/metrics` non-resource URL): `<name>-metrics`.",
			},
			"admission_policy":          admissionPolicy,
			"admission_policy_enforced": admissionEnforced,
			"objects_in_sync": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "`false` when, at the last refresh, an object of the installation was missing, or a field kmshealth " +
					"applied had been changed or taken over by another field manager (e.g. a `kubectl edit` of a Role). The plan then " +
					"shows it turning `true`, and the apply restores every object. Always `true` after an apply.",
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

func (r *reconcilerResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks what spans attributes: a memory request above the limit.
func (r *reconcilerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m reconcilerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.validateMemory(&resp.Diagnostics, reconcilerinstall.DefaultResources())
}

// ModifyPlan fills the default image from the provider's version and the
// computed names, and plans objects_in_sync = true: a refresh that found
// drift makes that a change, and the apply restores the objects.
func (r *reconcilerResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan reconcilerModel
	var configImage types.String
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("image"), &configImage)...)
	var prior *admissionModel
	var state *reconcilerModel
	if !req.State.Raw.IsNull() {
		state = &reconcilerModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
		prior = &state.admissionModel
	}
	if resp.Diagnostics.HasError() {
		return
	}
	planImage(&plan.Image, configImage, r.clients, &resp.Diagnostics)
	r.warnFieldManager(ctx, &plan, state, &resp.Diagnostics)
	r.warnTLSTargets(ctx, &plan, state, &resp.Diagnostics)
	plan.planEnforced(prior)
	plan.setNames()
	plan.ObjectsInSync = types.BoolValue(true)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
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

func (r *reconcilerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan reconcilerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultRolloutTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	written := r.write(ctx, &plan, timeout, &resp.Diagnostics)
	if written {
		// Also after a failed rollout or a write that failed half-way: the
		// resource is then tainted, and destroy can clean up.
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *reconcilerResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state reconcilerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return // provider configuration unknown: keep the state as it is
	}
	cl, ok := r.clients.installClients(&resp.Diagnostics)
	if !ok {
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	live, err := reconcilerinstall.Observe(ctx, cl, ns, name)
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiRequest{Summary: "Cannot read the reconciler installation", Verb: "get"}, err)
		return
	}
	importing := state.Image.IsNull()
	if !reconcilerMode.keepInState(ctx, resp, live, importing, ns, name) {
		return
	}

	got := live.Config()
	want := got // import: what is there is what was applied
	if !importing {
		var diags diag.Diagnostics
		want, diags = state.config(ctx)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
	} else {
		state.CreateNamespace = types.BoolValue(got.CreateNamespace)
		state.WaitForRollout = types.BoolValue(true) // the default: nothing in the cluster says otherwise
		state.AdmissionPolicy = types.BoolValue(got.AdmissionPolicy)
		state.AdmissionPolicyEnforced = types.BoolValue(got.AdmissionPolicy)
	}
	state.ObjectsInSync = objectsInSync(&resp.Diagnostics, reconcilerMode, want.Validate(), func() []string { return live.Drift(want) })

	// Report the live values of what the resource manages, so an
	// out-of-band change shows in the plan.
	if live.Installed() {
		state.Image = types.StringValue(got.Image)
		state.Replicas = types.Int64Value(int64(got.Replicas))
		if got.KMSTarget != (kmshealth.Target{}) {
			state.KMSTarget = types.StringValue(got.KMSTarget.String())
		}
		if got.KMSMaxStaleness > 0 {
			state.KMSMaxStaleness = liveDuration(state.KMSMaxStaleness, got.KMSMaxStaleness)
		}
		if got.FieldManager != "" {
			state.FieldManager = types.StringValue(got.FieldManager)
		}
		state.setLiveResources(got.Resources)
	}
	bundles := make(map[string]string, len(got.CABundles))
	for apiservice, s := range got.CABundles {
		bundles[apiservice] = s.String()
	}
	recorded, diags := types.MapValueFrom(ctx, types.StringType, bundles)
	resp.Diagnostics.Append(diags...)
	state.CABundles = recorded
	webhookBundles, diags := webhookBundlesValue(ctx, got.WebhookCABundles)
	resp.Diagnostics.Append(diags...)
	state.WebhookBundles = webhookBundles
	// The profiles as recorded, in the configuration's order and shape when
	// they are the same.
	if !sameTLSProfiles(got.TLSProfiles, want.TLSProfiles) || state.TLSProfiles.IsNull() || state.TLSProfiles.IsUnknown() {
		profiles, diags := tlsProfilesValue(ctx, got.TLSProfiles)
		resp.Diagnostics.Append(diags...)
		state.TLSProfiles = profiles
	}
	if !sameRBACProxies(got.RBACProxies, want.RBACProxies) || state.RBACProxies.IsNull() || state.RBACProxies.IsUnknown() {
		proxies, diags := rbacProxiesValue(ctx, got.RBACProxies)
		resp.Diagnostics.Append(diags...)
		state.RBACProxies = proxies
	}
	state.setNames()
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *reconcilerResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan reconcilerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultRolloutTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.write(ctx, &plan, timeout, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

// write applies the plan and, when asked, waits for the rollout. It
// reports whether anything may have been written, i.e. whether the state
// must record the installation.
func (r *reconcilerResource) write(ctx context.Context, plan *reconcilerModel, timeout time.Duration, diags *diag.Diagnostics) bool {
	cl, ok := r.clients.installClients(diags)
	if !ok {
		return false
	}
	plan.enforce(ctx, cl, "reconciler", diags)
	c, d := plan.config(ctx)
	if diags.Append(d...); diags.HasError() {
		return false
	}
	if !checkTarget(ctx, cl, c.KMSTarget, path.Root("kms_target"), diags) {
		return false
	}
	plan.setNames()
	plan.ObjectsInSync = types.BoolValue(true)
	if err := reconcilerinstall.Apply(ctx, cl, c); err != nil {
		return reconcilerMode.applyFailed(diags, r.clients, err, func(*install.ForeignError) path.Path { return path.Root("name") }, &plan.ObjectsInSync)
	}
	if plan.WaitForRollout.ValueBool() {
		reconcilerMode.waitForRollout(ctx, timeout, diags, func(ctx context.Context, progress func(string)) error {
			return reconcilerinstall.WaitForRollout(ctx, cl, c.Namespace, c.Name, progress)
		})
	}
	return true
}

func (r *reconcilerResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state reconcilerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cl, ok := r.clients.installClients(&resp.Diagnostics)
	if !ok {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultRolloutTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := reconcilerinstall.Delete(dctx, cl, state.Namespace.ValueString(), state.Name.ValueString(), state.CreateNamespace.ValueBool())
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiRequest{Summary: "Cannot uninstall the reconciler", Verb: "delete"}, err)
	}
}

func (r *reconcilerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importInstallation(ctx, req, resp, reconcilerinstall.ParseID)
}

// reconcilerMode names the reconciler in the diagnostics of the shared glue.
var reconcilerMode = installedMode{name: "reconciler", title: "Reconciler", workload: "Deployment", namespaceLabel: reconcilerinstall.NamespaceLabel}

// rbacProxyKinds are the kinds a protected workload may be.
func rbacProxyKinds() []string {
	out := make([]string, 0, len(rbacproxy.Kinds()))
	for _, k := range rbacproxy.Kinds() {
		out = append(out, string(k))
	}
	return out
}
