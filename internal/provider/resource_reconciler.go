package provider

import (
	"context"
	"math"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
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
	KMSTarget       types.String   `tfsdk:"kms_target"`
	KMSMaxStaleness types.String   `tfsdk:"kms_max_staleness"`
	FieldManager    types.String   `tfsdk:"field_manager"`
	WaitForRollout  types.Bool     `tfsdk:"wait_for_rollout"`
	ServiceAccount  types.String   `tfsdk:"service_account"`
	ClusterRole     types.String   `tfsdk:"cluster_role"`
	MetricsService  types.String   `tfsdk:"metrics_service"`
	ObjectsInSync   types.Bool     `tfsdk:"objects_in_sync"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`

	reconcilerPatternsModel // one attribute per pattern the reconciler keeps (reconciler_patterns.go)
	resourcesModel          // cpu_request, memory_request, memory_limit
	admissionModel          // admission_policy, admission_policy_enforced
	reconcilerMonitoringModel
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
	for _, a := range reconcilerPatternAttributes {
		diags.Append(a.toConfig(ctx, m, &c)...)
	}
	diags.Append(m.monitoringToConfig(ctx, &c)...)
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
	cpuRequest, memoryRequest, memoryLimit := resourceAttributes("reconciler", reconcilerinstall.DefaultResources())
	admissionPolicy, admissionEnforced := admissionAttributes("reconciler",
		"may change only what it keeps, one policy per kind it writes: `spec.caBundle` and the `kmshealth.io/ca-bundle-source` annotation of "+
			"the APIServices of `ca_bundles` (only those with `spec.service`), the caBundles of the webhooks and CRD conversion webhooks of "+
			"`webhook_ca_bundles`, the `profile.json` key of the `tls_profiles` ConfigMaps, the rollout hash annotation and the kube-rbac-proxy "+
			"sidecar of the workloads it keeps, and on the KMS target's status only `KMSPluginsDegraded` (and remove reporter conditions of "+
			"deleted Nodes); it never creates or deletes any of them. See \"Security model\" on this page")
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
					"another manager owns. It applies to the caBundles it keeps (`ca_bundles`, `webhook_ca_bundles`) and nothing else: " +
					"the TLS profile and kube-rbac-proxy controllers always write as `kmshealth`, as `kmshealth_tls_profile_configmap` and " +
					"`kmshealth_rbac_proxy_sidecar` do, so their destroy removes what the reconciler put back. Default `kmshealth`, the default of both.",
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
	for _, a := range reconcilerPatternAttributes {
		resp.Schema.Attributes[a.name] = a.schema()
	}
	resp.Schema.Attributes["monitoring"] = monitoringAttribute(reconcilerMonitoring)
}

func (r *reconcilerResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks what spans attributes: a memory request above the
// limit, a memory limit below what the record needs (sizing.go).
func (r *reconcilerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m reconcilerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.validateMemory(&resp.Diagnostics, reconcilerinstall.DefaultResources())
	if !m.MemoryLimit.IsNull() && !m.MemoryLimit.IsUnknown() {
		// What is unknown yet counts as nothing kept: never a false alarm.
		c, _ := m.config(ctx)
		if err := c.CheckMemoryLimit(); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("memory_limit"), "Memory limit below what the reconciler needs", err.Error()+".")
		}
	}
	for _, a := range reconcilerPatternAttributes {
		if a.validate != nil {
			a.validate(&m, ctx, &resp.Diagnostics)
		}
	}
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
	for _, a := range reconcilerPatternAttributes {
		if a.warn != nil {
			a.warn(r, ctx, &plan, state, &resp.Diagnostics)
		}
	}
	r.monitoringWarn(ctx, &plan, &resp.Diagnostics)
	plan.planEnforced(prior)
	plan.setNames()
	plan.ObjectsInSync = types.BoolValue(true)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
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
		monitoringUnlessUnserved(ctx, cl, &want)
	} else {
		state.CreateNamespace = types.BoolValue(got.CreateNamespace)
		state.WaitForRollout = types.BoolValue(true) // the default: nothing in the cluster says otherwise
		state.AdmissionPolicy = types.BoolValue(got.AdmissionPolicy)
		state.AdmissionPolicyEnforced = types.BoolValue(got.AdmissionPolicy)
		resp.Diagnostics.Append(state.monitoringFromLive(ctx, got.Monitoring)...)
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
	for _, a := range reconcilerPatternAttributes {
		resp.Diagnostics.Append(a.fromLive(ctx, &state, got, want)...)
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
	monitoringToWrite(ctx, cl, &c, diags)
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
