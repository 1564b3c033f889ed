package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

var (
	_ resource.ResourceWithConfigure   = (*kmsReencryptionResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*kmsReencryptionResource)(nil)
	_ resource.ResourceWithImportState = (*kmsReencryptionResource)(nil)
)

// defaultReencryptionTimeout bounds a run unless timeouts says otherwise.
const defaultReencryptionTimeout = 60 * time.Minute

// NewKMSReencryptionResource is the factory of kmshealth_kms_reencryption.
func NewKMSReencryptionResource() resource.Resource { return &kmsReencryptionResource{} }

type kmsReencryptionResource struct{ clients *Clients }

type kmsReencryptionModel struct {
	ID           types.String   `tfsdk:"id"`
	Name         types.String   `tfsdk:"name"`
	Namespace    types.String   `tfsdk:"namespace"`
	KeyID        types.String   `tfsdk:"key_id"`
	Resources    types.List     `tfsdk:"resources"`
	Method       types.String   `tfsdk:"method"`
	Concurrency  types.Int64    `tfsdk:"concurrency"`
	HealthTarget types.String   `tfsdk:"health_target"`
	Timeouts     timeouts.Value `tfsdk:"timeouts"`
	Path         types.String   `tfsdk:"path"`
	Objects      types.Map      `tfsdk:"objects"`
	StartedAt    types.String   `tfsdk:"started_at"`
	FinishedAt   types.String   `tfsdk:"finished_at"`
}

func (m *kmsReencryptionModel) resources(ctx context.Context, diags *diag.Diagnostics) []string {
	var out []string
	diags.Append(m.Resources.ElementsAs(ctx, &out, false)...)
	return out
}

// setRecord fills the computed attributes from a run's record.
func (m *kmsReencryptionModel) setRecord(rec *reencrypt.Record) {
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Name.ValueString())
	m.Path = types.StringValue(rec.Path)
	objects := make(map[string]attr.Value, len(rec.Progress))
	for _, p := range rec.Progress {
		objects[p.Resource] = types.Int64Value(p.Done)
	}
	m.Objects = types.MapValueMust(types.Int64Type, objects)
	m.StartedAt = rfc3339OrNull(rec.StartedAt.Time)
	m.FinishedAt = types.StringNull()
	if rec.FinishedAt != nil {
		m.FinishedAt = rfc3339OrNull(rec.FinishedAt.Time)
	}
}

// setRunUnknown marks what a run will compute as unknown in a plan.
func (m *kmsReencryptionModel) setRunUnknown() {
	m.Path = types.StringUnknown()
	m.Objects = types.MapUnknown(types.Int64Type)
	m.StartedAt = types.StringUnknown()
	m.FinishedAt = types.StringUnknown()
}

// defaults fills optional attributes left null (after an import).
func (m *kmsReencryptionModel) defaults(ctx context.Context) {
	if m.Namespace.IsNull() {
		m.Namespace = types.StringValue(defaultReencryptionNamespace)
	}
	if m.Method.IsNull() {
		m.Method = types.StringValue(reencrypt.MethodAuto)
	}
	if m.Concurrency.IsNull() {
		m.Concurrency = types.Int64Value(reencrypt.DefaultConcurrency)
	}
	if m.HealthTarget.IsNull() {
		m.HealthTarget = types.StringValue(kmshealth.DefaultTarget().String())
	}
	if m.Timeouts.IsNull() {
		m.Timeouts = timeouts.Value{Object: types.ObjectNull(m.Timeouts.AttributeTypes(ctx))}
	}
}

const defaultReencryptionNamespace = "kube-system"

func (r *kmsReencryptionResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_kms_reencryption"
}

func (r *kmsReencryptionResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Re-encrypts every object of the encrypted resources under the KMS key the plugins are on, after a key " +
			"rotation: each object is written again, so the API server stores it under a data key wrapped by the new key " +
			"encryption key. Objects written before a rotation stay under the old key until then, and the old key cannot be " +
			"destroyed while one object needs it.\n\n" +
			"Apply runs to completion: with `StorageVersionMigration` (`storagemigration.k8s.io`) when the cluster serves it " +
			"and its controller runs, otherwise by itself — a paged LIST and an update of each object exactly as read, " +
			"preconditioned on its `resourceVersion`, never changing content, at most `concurrency` at a time, with progress " +
			"logged every 10 s (`TF_LOG=INFO`: done/total, objects/s, ETA). Progress is recorded after every page in the ConfigMap " +
			"`kmshealth-reencryption-<name>` in `namespace`, so an interrupted apply resumes at the page it was on. A new " +
			"`key_id` starts a new run.\n\n" +
			"Before writing anything the KMS health gate must be green, as the `kmshealth_kms_plugin_health` data source " +
			"judges `health_target`: every node reported, fresh, every plugin healthy, all nodes agreeing on the key — and " +
			"the write plugin (the highest `keyID`) on `key_id`. Otherwise apply fails and nothing is written.\n\n" +
			"Needs `list` and `update` on each resource in `resources`, `get` on `health_target`, and `get`, `create`, " +
			"`update`, `delete` on ConfigMaps in `namespace`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<namespace>/<name>`; also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the re-encryption; its record is the ConfigMap `kmshealth-reencryption-<name>`. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{reencryptionName},
			},
			"namespace": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(defaultReencryptionNamespace),
				MarkdownDescription: "Namespace of the record ConfigMap. Default `" + defaultReencryptionNamespace + "`. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{namespaceName},
			},
			"key_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The key encryption key to re-encrypt under, as the plugins' Status RPC names it: the trigger. " +
					"Take it from the data source, e.g. `data.kmshealth_kms_plugin_health.this.active_kek_ids[\"1\"]`, so a rotated " +
					"key plans a new run. A new value re-runs in place (the record is the same ConfigMap, started over); apply " +
					"fails unless the plugins are on it.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, kmshealth.MaxKEKIDBytes)},
			},
			"resources": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true, Computed: true,
				Default: listdefault.StaticValue(types.ListValueMust(types.StringType, stringValues(reencrypt.DefaultResources))),
				MarkdownDescription: "The resources to rewrite, as the `resources` of your `EncryptionConfiguration` spell them: " +
					"`secrets`, `configmaps`, `<resource>.<group>`. Default `[\"secrets\"]`: the API server does not expose its " +
					"EncryptionConfiguration (it is a file on the control-plane nodes, `--encryption-provider-config`), so the provider " +
					"cannot read which resources it encrypts; Secrets are what every KMS configuration encrypts. List every resource " +
					"your configuration encrypts. Each must be served by the API server (checked at plan time when the cluster is " +
					"reachable). Adding one runs the new ones in place.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(resourceName{}),
				},
			},
			"method": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(reencrypt.MethodAuto),
				MarkdownDescription: "`auto` (default): `StorageVersionMigration` when the cluster serves `storagemigration.k8s.io` " +
					"and its controller runs in kube-controller-manager, else `rewrite`. `storage_version_migration`: fail when it is " +
					"not available. `rewrite`: always rewrite the objects one by one. `path` says which was taken.",
				Validators: []validator.String{stringvalidator.OneOf(reencrypt.Methods...)},
			},
			"concurrency": schema.Int64Attribute{
				Optional: true, Computed: true,
				Default:             int64default.StaticInt64(reencrypt.DefaultConcurrency),
				MarkdownDescription: fmt.Sprintf("How many updates the rewrite keeps in flight. Default `%d`.", reencrypt.DefaultConcurrency),
				Validators:          []validator.Int64{int64validator.Between(1, 64)},
			},
			"health_target": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(kmshealth.DefaultTarget().String()),
				MarkdownDescription: "The object the KMS health reports are read from, as the data source's `target`: " +
					"`group/version/resource/name`. Default `" + kmshealth.DefaultTarget().String() + "`, the `KMSHealth` object " +
					"`kmshealth_reporter` installs. Reports older than " + defaultMaxStaleness.String() + " count as stale.",
				Validators: []validator.String{healthTarget{}},
			},
			"path": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The path the run took: `" + reencrypt.PathStorageVersionMigration + "` or `" +
					reencrypt.PathRewrite + "`.",
			},
			"objects": schema.MapAttribute{
				ElementType: types.Int64Type, Computed: true,
				MarkdownDescription: "Resource → objects re-encrypted (for `" + reencrypt.PathRewrite + "`, written back or found " +
					"written by someone else meanwhile).",
			},
			"started_at":  schema.StringAttribute{Computed: true, MarkdownDescription: "When the run under `key_id` started, RFC 3339."},
			"finished_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When it finished every resource, RFC 3339; null while unfinished."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true}),
		},
	}
}

func (r *kmsReencryptionResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan says what apply will do — which resources, how many objects
// — and never writes; the computed attributes stay as they are unless a
// run is due (a new key, new resources, or an unfinished run).
func (r *kmsReencryptionResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan kmsReencryptionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state *kmsReencryptionModel
	if !req.State.Raw.IsNull() {
		state = &kmsReencryptionModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	runDue := state == nil || state.FinishedAt.IsNull() || !plan.KeyID.Equal(state.KeyID) || !plan.Resources.Equal(state.Resources)
	if !runDue {
		plan.Path, plan.Objects, plan.StartedAt, plan.FinishedAt = state.Path, state.Objects, state.StartedAt, state.FinishedAt
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	plan.setRunUnknown()
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	if plan.Resources.IsUnknown() || !r.clients.Known() {
		return
	}
	cfg, err := r.clients.restConfig()
	if err != nil {
		return // reported at apply; a plan needs no cluster
	}
	resources := plan.resources(ctx, &resp.Diagnostics)
	counts, err := reencrypt.Plan(ctx, cfg, resources)
	if err != nil {
		var unserved *reencrypt.UnservedError
		if errors.As(err, &unserved) {
			resp.Diagnostics.AddAttributeError(path.Root("resources"), "Resource not served", err.Error())
		}
		return // anything else (no access yet, cluster down) is apply's to report
	}
	var lines []string
	for _, c := range counts {
		n := "an unknown number of objects"
		if c.Objects >= 0 {
			n = fmt.Sprintf("%d objects", c.Objects)
		}
		lines = append(lines, fmt.Sprintf("  - %s (%s): %s", c.Resource, c.GVR.GroupVersion(), n))
	}
	resp.Diagnostics.AddWarning("Re-encryption planned",
		fmt.Sprintf("Apply re-encrypts under key %q, by method %q, once the KMS health gate (%s) is green:\n%s\n"+
			"Objects already under that key cost the API server no storage write.",
			plan.KeyID.ValueString(), plan.Method.ValueString(), plan.HealthTarget.ValueString(), strings.Join(lines, "\n")))
}

func (r *kmsReencryptionResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan kmsReencryptionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultReencryptionTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.run(ctx, &plan, timeout, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *kmsReencryptionResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state kmsReencryptionModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return // provider configuration unknown: keep the state as it is
	}
	core, err := r.clients.Core()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	rec, err := reencrypt.ReadRecord(ctx, core, ns, name)
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, recordRequest("Cannot read the re-encryption record", "get", ns, name), err)
		return
	}
	if rec == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	imported := state.KeyID.IsNull()
	if imported {
		if rec.Method != "" {
			state.Method = types.StringValue(rec.Method)
		}
		if rec.Concurrency > 0 {
			state.Concurrency = types.Int64Value(int64(rec.Concurrency))
		}
		if rec.HealthTarget != "" {
			state.HealthTarget = types.StringValue(rec.HealthTarget)
		}
	}
	state.defaults(ctx)
	// An unfinished run keeps the key of the last finished one in the
	// state, so the configuration's key_id plans the apply that resumes it.
	// A finished run under another key (someone re-ran it elsewhere) is
	// drift: the configuration's key plans a new run.
	if imported || rec.Complete() {
		state.KeyID = types.StringValue(rec.KeyID)
	}
	if imported {
		state.Resources = types.ListValueMust(types.StringType, stringValues(rec.Resources))
	}
	state.setRecord(rec)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *kmsReencryptionResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan kmsReencryptionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultReencryptionTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.run(ctx, &plan, timeout, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *kmsReencryptionResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state kmsReencryptionModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	core, err := r.clients.Core()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	if err := reencrypt.DeleteRecord(ctx, core, ns, name); err != nil {
		r.clients.addAPIError(&resp.Diagnostics, recordRequest("Cannot delete the re-encryption record", "delete", ns, name), err)
	}
}

func (r *kmsReencryptionResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, ok := strings.Cut(req.ID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("Import ID %q: want <namespace>/<name>, e.g. kube-system/rotate-2026 for the record ConfigMap %s.", req.ID, reencrypt.RecordName("rotate-2026")))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
}

// run runs the re-encryption to completion (or resumes it) and fills the
// computed attributes; it reports whether the state should be set.
func (r *kmsReencryptionResource) run(ctx context.Context, m *kmsReencryptionModel, timeout time.Duration, diags *diag.Diagnostics) bool {
	cfg, err := r.clients.restConfig()
	if err != nil {
		connectionError(diags, err)
		return false
	}
	dyn, err := r.clients.Dynamic()
	if err != nil {
		connectionError(diags, err)
		return false
	}
	target, err := kmshealth.ParseTarget(m.HealthTarget.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("health_target"), "Invalid target", err.Error())
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec, err := reencrypt.Run(ctx, cfg, reencrypt.Options{
		Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(), KeyID: m.KeyID.ValueString(),
		Resources: m.resources(ctx, diags), Method: m.Method.ValueString(), Concurrency: int(m.Concurrency.ValueInt64()),
		Gate: r.kmsGate(dyn, target, m.KeyID.ValueString()), HealthTarget: target.String(),
		Log: func(format string, args ...any) { tflog.Info(ctx, fmt.Sprintf(format, args...)) },
	})
	switch {
	case errors.Is(err, reencrypt.ErrGate):
		diags.AddAttributeError(path.Root("key_id"), "KMS health gate not green", err.Error())
		return false
	case errors.Is(err, context.DeadlineExceeded) && rec != nil:
		diags.AddError("Re-encryption not finished in time",
			fmt.Sprintf("The run stopped after %s (timeouts) and recorded where it was in ConfigMap %s/%s: apply again to resume it, "+
				"or raise timeouts. %v", timeout, m.Namespace.ValueString(), reencrypt.RecordName(m.Name.ValueString()), err))
		return false
	case err != nil:
		diags.AddError("Re-encryption failed",
			fmt.Sprintf("%v\n\nWhat was done is recorded in ConfigMap %s/%s; apply again to resume from there.",
				err, m.Namespace.ValueString(), reencrypt.RecordName(m.Name.ValueString())))
		return false
	}
	m.setRecord(rec)
	return true
}

// kmsGate judges the KMS health on target exactly as the
// kmshealth_kms_plugin_health data source does (default staleness, every
// node that reported), and then asks kube-apiserver which key it writes
// with: it adopts a plugin's new key only at its next KMS Status poll (up
// to a minute after the rotation), so a run right after a rotation would
// store objects under the old key. GET /healthz/kms-providers makes it
// poll when its last answer is older than 20 s; its /metrics then say the
// key (kmshealth.ParseKeyUsage). Without get on /metrics that check is
// left out, with a warning in the log.
func (r *kmsReencryptionResource) kmsGate(dyn dynamic.Interface, target kmshealth.Target, keyID string) reencrypt.Gate {
	return func(ctx context.Context) (reencrypt.Health, error) {
		obs, err := kmshealth.Observe(ctx, dyn, kmshealth.Query{Target: target, MaxStaleness: defaultMaxStaleness})
		if err != nil {
			return reencrypt.Health{}, err
		}
		h := obs.Health
		out := reencrypt.Health{Target: target.String(), RotationReady: h.RotationReady, Problems: h.Problems, KEKIDs: h.ActiveKEKIDs}
		if h.RotationReady {
			out.APIServer = r.apiServerWriteKey(ctx, keyID)
		}
		return out, nil
	}
}

// apiServerWriteKey is "" when the kube-apiserver the provider talks to
// writes with keyID (or when that cannot be read), else why not.
func (r *kmsReencryptionResource) apiServerWriteKey(ctx context.Context, keyID string) string {
	want, err := kmshealth.KeyIDHash(keyID)
	if err != nil {
		return ""
	}
	core, err := r.clients.Core()
	if err != nil {
		return ""
	}
	rc := core.Discovery().RESTClient()
	// Its answer does not matter: asking is what makes kube-apiserver poll.
	_, _ = rc.Get().AbsPath("/healthz/kms-providers").DoRaw(ctx)
	body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		tflog.Warn(ctx, fmt.Sprintf("cannot read kube-apiserver /metrics (%v): the gate does not check that kube-apiserver already writes with key %q; "+
			"grant get on the non-resource URL /metrics to have it checked", err, keyID))
		return ""
	}
	u, err := kmshealth.ParseKeyUsage(body)
	if err != nil {
		return ""
	}
	got, ok := u.ActiveKeyHash()
	if !ok || got == want {
		return ""
	}
	return fmt.Sprintf("kube-apiserver still writes with the key whose hash is %s, not with %q (%s): it adopts the plugins' new key at "+
		"its next KMS Status poll, at most a minute after the rotation. Apply again in a minute", got, keyID, want)
}

// restConfig is the REST configuration of the provider's clients (each
// request logged under TF_LOG=DEBUG), for a pattern that builds its own.
func (c *Clients) restConfig() (*rest.Config, error) {
	if err := c.get(); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(c.conn.REST)
	cfg.Wrap(kube.LogRequests(logRequest))
	return cfg, nil
}

func recordRequest(summary, verb, namespace, name string) apiRequest {
	return apiRequest{
		Summary: summary, Verb: verb, Kind: "ConfigMap", Resource: "configmaps",
		Namespace: namespace, Name: reencrypt.RecordName(name), Attribute: path.Root("name"),
	}
}

func stringValues(ss []string) []attr.Value {
	out := make([]attr.Value, 0, len(ss))
	for _, s := range ss {
		out = append(out, types.StringValue(s))
	}
	return out
}

// reencryptionName: the record ConfigMap's name must be a valid object name.
var reencryptionName = kubeName{"a name such that kmshealth-reencryption-<name> is an object name (RFC 1123 subdomain)", func(s string) []string {
	return objectName.check(reencrypt.RecordName(s))
}}

// resourceName validates one entry of resources at plan time.
type resourceName struct{}

func (resourceName) Description(context.Context) string {
	return "must be a resource as EncryptionConfiguration spells it: secrets, configmaps, <resource>.<group>"
}

func (v resourceName) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (resourceName) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := reencrypt.ParseResource(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid resource", fmt.Sprintf("%s: %v.", req.Path, err))
	}
}
