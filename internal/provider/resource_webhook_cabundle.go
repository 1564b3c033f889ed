package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

var (
	_ resource.ResourceWithConfigure        = (*webhookCABundleResource)(nil)
	_ resource.ResourceWithConfigValidators = (*webhookCABundleResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*webhookCABundleResource)(nil)
	_ resource.ResourceWithImportState      = (*webhookCABundleResource)(nil)
)

// NewWebhookCABundleResource is the factory of kmshealth_webhook_cabundle.
func NewWebhookCABundleResource() resource.Resource {
	return &webhookCABundleResource{now: time.Now}
}

type webhookCABundleResource struct {
	clients *Clients
	now     func() time.Time
}

type webhookCABundleModel struct {
	ID       types.String `tfsdk:"id"`
	Kind     types.String `tfsdk:"kind"`
	Name     types.String `tfsdk:"name"`
	Webhooks types.Set    `tfsdk:"webhooks"`
	bundleModel
}

// target is the object and the webhooks the resource keeps.
func (m *webhookCABundleModel) target() cabundle.Target {
	t := cabundle.Target{Kind: m.Kind.ValueString(), Name: m.Name.ValueString()}
	for _, v := range m.Webhooks.Elements() {
		if s, ok := v.(types.String); ok {
			t.Webhooks = append(t.Webhooks, s.ValueString())
		}
	}
	slices.Sort(t.Webhooks)
	return t
}

// source is the authoritative object: the user's, or our inline ConfigMap.
func (m *webhookCABundleModel) source() cabundle.Source {
	return m.sourceFor(cabundle.TargetInlineConfigMapName(m.target()))
}

func (m *webhookCABundleModel) sourceKnown() bool {
	return m.sourceKnownFor(!m.Kind.IsUnknown() && !m.Name.IsUnknown())
}

func (r *webhookCABundleResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_webhook_cabundle"
}

func (r *webhookCABundleResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Owns the `clientConfig.caBundle` of all or named webhooks of a `ValidatingWebhookConfiguration` or " +
			"`MutatingWebhookConfiguration`, or the `spec.conversion.webhook.clientConfig.caBundle` of a `CustomResourceDefinition`, " +
			"by server-side apply, from a Secret/ConfigMap key (`source`) or inline PEM (`ca_bundle`, kept in a ConfigMap this resource owns), " +
			"so there is always one authoritative object. The object is annotated `" + cabundle.SourceAnnotation + "` with that object. " +
			"Only the caBundle fields and the annotation are written, and only when the live bytes differ; every other field " +
			"(`clientConfig.service`, `url`, rules, `failurePolicy`, other webhooks, the rest of the CRD) stays its installer's.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<kind>/<name>`; also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"kind": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "`ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration` or `CustomResourceDefinition`. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{stringvalidator.OneOf(cabundle.WebhookKinds()...)},
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the existing object (for a CRD, `<plural>.<group>`; its `spec.conversion.strategy` must be `Webhook`). Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{objectName},
			},
			"webhooks": schema.SetAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Names of the webhooks of the configuration whose caBundle to own. Unset: every webhook, including " +
					"webhooks the configuration gains later. Each must exist at apply time (checked at plan time when the configuration " +
					"already exists). Not allowed for a `CustomResourceDefinition`, which has one conversion webhook. Changing it updates " +
					"in place: webhooks dropped from the set lose the caBundle kmshealth wrote, in the same write.",
				Validators: []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueStringsAre(objectName)},
			},
			"ca_bundle": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Inline PEM bundle of the CA(s) that sign the webhook server's serving certificate. " +
					"Stored in the ConfigMap `kmshealth-cabundle-<validating|mutating|crd>-<name>` in `bundle_namespace`, which this resource owns " +
					"and deletes on destroy. Exactly one of `ca_bundle` and `source`. Checked at plan time: unparsable PEM, non-certificate " +
					"blocks and expired certificates are errors; certificates expiring within 30 days or that are not CAs are warnings.",
				Validators: []validator.String{pemBundle{now: r.now}},
			},
			"bundle_namespace": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(cabundle.DefaultBundleNamespace),
				MarkdownDescription: "Namespace of the ConfigMap that holds an inline `ca_bundle`. Default `kube-system`. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{namespaceName},
			},
			"field_manager": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(cabundle.DefaultFieldManager),
				MarkdownDescription: "Server-side apply field manager that owns the caBundles and the annotation. Default `kmshealth`, which is also the in-cluster reconciler's, so the two never conflict; if you change it, set the same `field_manager` on the `kmshealth_reconciler` that keeps this object.",
				Validators:          []validator.String{fieldManager},
			},
			"force_conflicts": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: "On create, take ownership of a caBundle that another field manager (an installer, a GitOps tool) owns by server-side apply. Default `false`: such a conflict stops the apply, writes nothing, and names the other manager. Once the resource manages the bundle, an out-of-band overwrite is drift and the next apply restores it regardless of this setting.",
			},
			"fingerprint_sha256": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Hex SHA-256 of the live caBundle bytes (the certificates re-encoded as PEM, as kmshealth writes them). When the selected webhooks disagree, that of the first one that differs from what was applied. A change between plans means a bundle drifted or the source rotated.",
			},
			"certificate_count": schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of certificates in the live caBundle."},
			"not_after": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Earliest expiry of the certificates in the live caBundle, RFC 3339.",
			},
			"certificates": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Each certificate of the live caBundle, in order: `subject` and `issuer` (RFC 2253), `not_after` (RFC 3339) " +
					"and `sha256_fingerprint` as `openssl x509 -noout -fingerprint -sha256` prints it.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"subject":            schema.StringAttribute{Computed: true, MarkdownDescription: "Subject distinguished name."},
					"issuer":             schema.StringAttribute{Computed: true, MarkdownDescription: "Issuer distinguished name."},
					"not_after":          schema.StringAttribute{Computed: true, MarkdownDescription: "Expiry, RFC 3339."},
					"sha256_fingerprint": schema.StringAttribute{Computed: true, MarkdownDescription: "SHA-256 of the DER, as openssl prints it (`AB:CD:…`)."},
				}},
			},
			"ca_bundle_source": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Live value of the `" + cabundle.SourceAnnotation + "` annotation: `<Kind>/<namespace>/<name>/<key>` of the authoritative object.",
			},
		},
		Blocks: map[string]schema.Block{
			"source": schema.SingleNestedBlock{
				MarkdownDescription: "The Secret or ConfigMap key that holds the PEM bundle, e.g. the `ca.crt` of a Secret that cert-manager keeps. " +
					"It must exist at apply time and is never modified. Exactly one of `ca_bundle` and `source`; all four attributes are required.",
				Validators: []validator.Object{requiredInBlock{"kind", "namespace", "name", "key"}},
				Attributes: map[string]schema.Attribute{
					"kind": schema.StringAttribute{
						Optional: true, MarkdownDescription: "`Secret` or `ConfigMap`.",
						Validators: []validator.String{stringvalidator.OneOf(cabundle.KindSecret, cabundle.KindConfigMap)},
					},
					"namespace": schema.StringAttribute{Optional: true, MarkdownDescription: "Namespace of the object.", Validators: []validator.String{namespaceName}},
					"name":      schema.StringAttribute{Optional: true, MarkdownDescription: "Name of the object.", Validators: []validator.String{objectName}},
					"key":       schema.StringAttribute{Optional: true, MarkdownDescription: "Key in `data` (or a ConfigMap's `binaryData`) holding the PEM, e.g. `ca.crt`.", Validators: []validator.String{dataKey}},
				},
			},
		},
	}
}

func (r *webhookCABundleResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		exactlyOneOfRoots("ca_bundle", "source"),
		crdWithoutWebhooks{},
	}
}

// crdWithoutWebhooks rejects webhooks on a CustomResourceDefinition.
type crdWithoutWebhooks struct{}

func (crdWithoutWebhooks) Description(context.Context) string {
	return "webhooks may be set only for a webhook configuration"
}

func (v crdWithoutWebhooks) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (crdWithoutWebhooks) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var kind types.String
	var webhooks types.Set
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("kind"), &kind)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("webhooks"), &webhooks)...)
	if kind.ValueString() == cabundle.KindCustomResourceDefinition && !webhooks.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("webhooks"), "webhooks not allowed for a CustomResourceDefinition",
			"A CustomResourceDefinition has one conversion webhook (spec.conversion.webhook), and this resource owns its caBundle: remove webhooks.")
	}
}

func (r *webhookCABundleResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan predicts the computed attributes from the desired bundle, so
// a live bundle that drifted from its source shows in the plan, and checks
// named webhooks against the live configuration when it exists.
func (r *webhookCABundleResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	// An unchanged inline bundle skips the webhooks' check too (a GET of
	// the object): Read just found every named webhook holding the applied
	// bundle, or the state, and so the plan, would differ.
	if req.Plan.Raw.IsNull() || unchangedInlinePlan(req.Plan.Raw, req.State.Raw, webhookInlineIdentity) {
		return
	}
	r.modifyPlan(ctx, req, resp)
}

// webhookInlineIdentity is what ModifyPlan sets id and ca_bundle_source to
// for an inline bundle, from the plan's raw values.
func webhookInlineIdentity(vals map[string]tftypes.Value) (id, source string, ok bool) {
	kind, okKind := rawString(vals, "kind")
	name, okName := rawString(vals, "name")
	namespace, okNamespace := rawString(vals, "bundle_namespace")
	if !okKind || !okName || !okNamespace {
		return "", "", false
	}
	m := webhookCABundleModel{Kind: types.StringValue(kind), Name: types.StringValue(name), Webhooks: types.SetNull(types.StringType), bundleModel: bundleModel{BundleNamespace: types.StringValue(namespace)}}
	if hooks, ok := vals["webhooks"]; ok && !hooks.IsNull() {
		var elems []tftypes.Value
		if hooks.As(&elems) != nil {
			return "", "", false
		}
		values := make([]attr.Value, 0, len(elems))
		for _, e := range elems {
			var s string
			if e.As(&s) != nil {
				return "", "", false
			}
			values = append(values, types.StringValue(s))
		}
		m.Webhooks = types.SetValueMust(types.StringType, values)
	}
	return m.target().String(), m.source().String(), true
}

// modifyPlan is ModifyPlan's work when the plan may change.
func (r *webhookCABundleResource) modifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var plan webhookCABundleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var prior *bundleModel // the state's, nil on create
	if !req.State.Raw.IsNull() {
		var state webhookCABundleModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		prior = &state.bundleModel
	}
	plan.ID = types.StringUnknown()
	if !plan.Kind.IsUnknown() && !plan.Name.IsUnknown() {
		plan.ID = types.StringValue(plan.target().String())
	}
	plan.CABundleSource = types.StringUnknown()
	if plan.sourceKnown() {
		plan.CABundleSource = types.StringValue(plan.source().String())
	}
	plan.setBundleUnknown()
	clients, reachable := cabundle.Clients{}, false
	if r.clients.Known() {
		c, err := r.clients.CABundle()
		clients, reachable = c, err == nil
	}
	if reachable && !plan.Kind.IsUnknown() && !plan.Name.IsUnknown() && !plan.Webhooks.IsUnknown() && len(plan.target().Webhooks) > 0 {
		r.checkWebhooks(ctx, clients, plan.target(), &resp.Diagnostics)
	}
	switch {
	case plan.inline() && !plan.CABundle.IsUnknown():
		plan.setBundle(cabundle.Canonical([]byte(plan.CABundle.ValueString())), r.now())
	case !plan.inline() && plan.sourceKnown() && reachable:
		bundle, err := cabundle.ReadSource(ctx, clients.Core, plan.source())
		if err != nil {
			break // checked at apply time: the source may be created in the same apply
		}
		_, findings := cabundle.Inspect(bundle, r.now())
		addFindings(&resp.Diagnostics, path.Root("source"), findings)
		// Unchanged source: keep the state's values; else they stay unknown.
		plan.keepDescription(prior, cabundle.Canonical(bundle))
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// checkWebhooks reports, at plan time, named webhooks that an existing
// configuration lacks; a configuration not created yet is checked at apply.
func (r *webhookCABundleResource) checkWebhooks(ctx context.Context, c cabundle.Clients, t cabundle.Target, diags *diag.Diagnostics) {
	inj, err := cabundle.For(t.Kind, c)
	if err != nil {
		return
	}
	live, err := inj.Get(ctx, t.Name)
	if err != nil {
		return
	}
	if _, err := inj.Slots(live, t.Webhooks); err != nil && t.Kind != cabundle.KindCustomResourceDefinition {
		diags.AddAttributeError(path.Root("webhooks"), "Webhook not in the configuration", err.Error())
	}
}

func (r *webhookCABundleResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan webhookCABundleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.write(ctx, &plan, nil, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *webhookCABundleResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state webhookCABundleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return // provider configuration unknown: keep the state as it is
	}
	clients, err := r.clients.CABundle()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	t := state.target()
	inj, err := cabundle.For(t.Kind, clients)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("kind"), "Unsupported kind", err.Error())
		return
	}
	// An inline bundle's ConfigMap is read beside the object: one round
	// trip for both.
	imported := state.CABundle.IsNull() && state.Source == nil
	ahead := startInlineRead(ctx, clients.Core, r.clients.inlineReader(), state.inline(), imported, state.source())
	live, err := inj.Get(ctx, t.Name)
	if apierrors.IsNotFound(err) {
		resp.Diagnostics.AddWarning(t.Kind+" gone",
			fmt.Sprintf("%s %q no longer exists, so it is removed from the state. It is managed again on the next apply once it is back.", t.Kind, t.Name))
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, targetRequest("Cannot read "+t.Kind, "get", t), err)
		return
	}
	annotation := live.GetAnnotations()[cabundle.SourceAnnotation]
	if imported {
		resp.Diagnostics.Append(r.adopt(ctx, clients, inj, live, &state, annotation)...)
		if resp.Diagnostics.HasError() {
			return
		}
		t = state.target()
	}
	state.setDefaults()
	state.ID = types.StringValue(t.String())
	state.CABundleSource = types.StringValue(annotation)
	var applied []byte
	if state.inline() {
		applied = cabundle.Canonical([]byte(state.CABundle.ValueString()))
	}
	liveBundle := selectedBundle(inj, live, t, state.FingerprintSHA256.ValueString(), applied)
	prior := state // the computed attributes as last described
	state.setBundleFrom(&prior.bundleModel, liveBundle, r.now())
	if !state.readInlineDrift(ctx, r.clients, clients.Core, ahead, state.source(), liveBundle, applied, &resp.Diagnostics) {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// selectedBundle is the live caBundle of the selected webhooks: the first
// one that differs from the applied value (by fingerprint, or the
// canonical applied bytes when known), else their common value. A selected
// webhook that is gone counts as an empty bundle: drift.
func selectedBundle(inj cabundle.Injectable, live cabundle.Object, t cabundle.Target, appliedFingerprint string, applied []byte) []byte {
	slots, err := inj.Slots(live, t.Webhooks)
	if err != nil || len(slots) == 0 {
		return nil
	}
	differs := func(b []byte) bool {
		if applied != nil {
			return !cabundle.Equivalent(b, applied)
		}
		return cabundle.Fingerprint(b) != appliedFingerprint
	}
	for _, s := range slots {
		if b := inj.Bundle(live, s); differs(b) {
			return b
		}
	}
	return inj.Bundle(live, slots[0])
}

// adopt derives the configuration of an imported resource from the
// object's source annotation and the caBundles its field manager owns.
func (r *webhookCABundleResource) adopt(ctx context.Context, c cabundle.Clients, inj cabundle.Injectable, live cabundle.Object, m *webhookCABundleModel, annotation string) diag.Diagnostics {
	var diags diag.Diagnostics
	t := m.target()
	src, err := cabundle.ParseSource(annotation)
	if err != nil {
		diags.AddError(t.Kind+" not managed by kmshealth",
			fmt.Sprintf("%s %q has no valid %s annotation (%v), so there is nothing to import. Declare a kmshealth_webhook_cabundle for it and apply instead: that takes over its caBundle.",
				t.Kind, t.Name, cabundle.SourceAnnotation, err))
		return diags
	}
	m.Webhooks = types.SetNull(types.StringType)
	if t.Kind != cabundle.KindCustomResourceDefinition {
		all, _ := inj.Slots(live, nil)
		owned := cabundle.OwnedSlots(inj, live, cabundle.DefaultFieldManager)
		if len(owned) > 0 && len(owned) < len(all) {
			m.Webhooks, diags = types.SetValueFrom(ctx, types.StringType, owned)
		}
	}
	m.adoptSource(ctx, c.Core, src, cabundle.TargetInlineConfigMapName(t))
	return diags
}

func (r *webhookCABundleResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state webhookCABundleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.write(ctx, &plan, &state.bundleModel, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// write brings the cluster to plan: checks everything that can fail before
// the first write (including a server-side dry run), then writes the
// inline ConfigMap, then the object, then cleans up what the previous
// state held and the plan no longer does.
func (r *webhookCABundleResource) write(ctx context.Context, plan *webhookCABundleModel, prior *bundleModel, diags *diag.Diagnostics) {
	clients, err := r.clients.CABundle()
	if err != nil {
		connectionError(diags, err)
		return
	}
	t := plan.target()
	inj, err := cabundle.For(t.Kind, clients)
	if err != nil {
		diags.AddAttributeError(path.Root("kind"), "Unsupported kind", err.Error())
		return
	}
	live, err := cabundle.GetTarget(ctx, inj, t.Name)
	if err != nil {
		r.clients.addAPIError(diags, targetRequest("Cannot read "+t.Kind, "get", t), err)
		return
	}
	if _, err := inj.Slots(live, t.Webhooks); err != nil {
		attr := path.Root("name")
		if len(t.Webhooks) > 0 {
			attr = path.Root("webhooks")
		}
		diags.AddAttributeError(attr, t.Kind+" cannot take this caBundle", err.Error())
		return
	}
	src := plan.source()
	bundle, ok := plan.bundleToWrite(ctx, r.clients, clients.Core, src, r.now(), diags)
	if !ok {
		return
	}
	opts := plan.options(prior != nil)
	dry := opts
	dry.DryRun = true
	if _, _, err := cabundle.EnsureTarget(ctx, inj, live, t, bundle, src, dry); err != nil {
		r.addApplyError(diags, t, err)
		return
	}
	createdConfigMap, ok := plan.storeInline(ctx, r.clients, clients.Core, src, func() error {
		_, err := cabundle.EnsureTargetInlineConfigMap(ctx, clients.Core, src.Namespace, t, bundle, plan.FieldManager.ValueString())
		return err
	}, diags)
	if !ok {
		return
	}
	out, _, err := cabundle.EnsureTarget(ctx, inj, live, t, bundle, src, opts)
	if err != nil {
		if createdConfigMap { // leave nothing half-written behind
			_ = cabundle.DeleteTargetInlineConfigMap(ctx, clients.Core, src.Namespace, t)
		}
		r.addApplyError(diags, t, err)
		return
	}
	plan.cleanUpAfter(prior,
		func(manager string) error { return cabundle.ReleaseTarget(ctx, inj, t.Name, manager) },
		func(namespace string) error {
			return cabundle.DeleteTargetInlineConfigMap(ctx, clients.Core, namespace, t)
		},
		diags)
	plan.ID = types.StringValue(t.String())
	plan.CABundleSource = types.StringValue(out.GetAnnotations()[cabundle.SourceAnnotation])
	plan.setBundle(selectedBundle(inj, out, t, "", cabundle.Canonical(bundle)), r.now())
}

func (r *webhookCABundleResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state webhookCABundleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	clients, err := r.clients.CABundle()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	t := state.target()
	inj, err := cabundle.For(t.Kind, clients)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("kind"), "Unsupported kind", err.Error())
		return
	}
	if err := cabundle.ReleaseTarget(ctx, inj, t.Name, state.FieldManager.ValueString()); err != nil {
		r.clients.addAPIError(&resp.Diagnostics, targetRequest("Cannot release caBundle", "patch", t), err)
		return
	}
	if state.inline() {
		if err := cabundle.DeleteTargetInlineConfigMap(ctx, clients.Core, state.BundleNamespace.ValueString(), t); err != nil {
			r.clients.addAPIError(&resp.Diagnostics, sourceRequest("Cannot delete inline CA bundle ConfigMap", "delete", state.source(), path.Root("ca_bundle")), err)
		}
	}
}

// ImportState takes `<kind>/<name>`; the source and the webhooks come
// from the object (its annotation, and the caBundles kmshealth owns).
func (r *webhookCABundleResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	t, err := cabundle.ParseTarget(req.ID)
	if err != nil || t.Kind == cabundle.KindAPIService {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("Import ID %q: want <kind>/<name> with kind one of %s, e.g. ValidatingWebhookConfiguration/my-webhook.", req.ID, strings.Join(cabundle.WebhookKinds(), ", ")))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("kind"), t.Kind)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), t.Name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

func (r *webhookCABundleResource) addApplyError(diags *diag.Diagnostics, t cabundle.Target, err error) {
	if errors.Is(err, cabundle.ErrConflict) {
		diags.AddAttributeError(path.Root("force_conflicts"), "caBundle owned by another field manager", err.Error())
		return
	}
	r.clients.addAPIError(diags, targetRequest("Cannot apply caBundle", "patch", t), err)
}

// targetRequest describes a request for the object kind and name name.
func targetRequest(summary, verb string, t cabundle.Target) apiRequest {
	group, resource := "admissionregistration.k8s.io", strings.ToLower(t.Kind)+"s"
	if t.Kind == cabundle.KindCustomResourceDefinition {
		group = "apiextensions.k8s.io"
	}
	return apiRequest{Summary: summary, Verb: verb, Kind: t.Kind, Group: group, Resource: resource, Name: t.Name, Attribute: path.Root("name")}
}
