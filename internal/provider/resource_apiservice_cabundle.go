package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

var (
	_ resource.ResourceWithConfigure        = (*apiServiceCABundleResource)(nil)
	_ resource.ResourceWithConfigValidators = (*apiServiceCABundleResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*apiServiceCABundleResource)(nil)
	_ resource.ResourceWithImportState      = (*apiServiceCABundleResource)(nil)
)

// NewAPIServiceCABundleResource is the factory of kmshealth_apiservice_cabundle.
func NewAPIServiceCABundleResource() resource.Resource {
	return &apiServiceCABundleResource{now: time.Now}
}

type apiServiceCABundleResource struct {
	clients *Clients
	now     func() time.Time
}

type apiServiceCABundleModel struct {
	ID             types.String `tfsdk:"id"`
	APIServiceName types.String `tfsdk:"apiservice_name"`
	bundleModel
}

// equal reports whether m and o hold the same values, field by field.
func (m *apiServiceCABundleModel) equal(o *apiServiceCABundleModel) bool {
	return m.ID.Equal(o.ID) && m.APIServiceName.Equal(o.APIServiceName) && m.bundleModel.equal(&o.bundleModel)
}

// source is the authoritative object: the user's, or our inline ConfigMap.
func (m *apiServiceCABundleModel) source() cabundle.Source {
	return m.sourceFor(cabundle.InlineConfigMapName(m.APIServiceName.ValueString()))
}

func (m *apiServiceCABundleModel) sourceKnown() bool {
	return m.sourceKnownFor(!m.APIServiceName.IsUnknown())
}

func (r *apiServiceCABundleResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_apiservice_cabundle"
}

func (r *apiServiceCABundleResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Owns `spec.caBundle` of one aggregated APIService by server-side apply, from a " +
			"Secret/ConfigMap key (`source`) or inline PEM (`ca_bundle`, kept in a ConfigMap this resource owns), " +
			"so there is always one authoritative object. The APIService is annotated `" + cabundle.SourceAnnotation +
			"` with that object, which lets the in-cluster reconciler restore the bundle between applies. " +
			"Only the caBundle and the annotation are written, and only when the live bytes differ.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The APIService name; also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"apiservice_name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of an existing aggregated APIService (`<version>.<group>`, e.g. `v1beta1.metrics.k8s.io`) with `spec.service` set. Changing it replaces the resource.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{objectName},
			},
			"ca_bundle": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Inline PEM bundle of the CA(s) that sign the aggregated API server's serving certificate. " +
					"Stored in the ConfigMap `kmshealth-cabundle-<apiservice_name>` in `bundle_namespace`, which this resource owns " +
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
				MarkdownDescription: "Server-side apply field manager that owns the caBundle and the annotation. Default `kmshealth`, which is also the in-cluster reconciler's, so the two never conflict; if you change it, set the same `field_manager` on the `kmshealth_reconciler` that keeps this APIService (its plan warns when they differ).",
				Validators:          []validator.String{fieldManager},
			},
			"force_conflicts": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: "On create, take ownership of `spec.caBundle` when another field manager (an installer, a GitOps tool) already owns it. Default `false`: such a conflict stops the apply, writes nothing, and names the other manager. Once the resource manages the bundle, an out-of-band overwrite is drift and the next apply restores it regardless of this setting.",
			},
			"fingerprint_sha256": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Hex SHA-256 of the live caBundle bytes (the certificates re-encoded as PEM, as kmshealth writes them). A change between plans means the bundle drifted or the source rotated. To compare one certificate with `openssl` output, use `certificates`.",
			},
			"certificate_count": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Number of certificates in the live caBundle.",
			},
			"not_after": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Earliest expiry of the certificates in the live caBundle, RFC 3339. Feed it to monitoring or a `check` block.",
			},
			"certificates": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Each certificate of the live caBundle, in order, to check against what you hold: " +
					"`subject` and `issuer` (RFC 2253), `not_after` (RFC 3339) and `sha256_fingerprint`, the SHA-256 of the certificate's DER " +
					"exactly as `openssl x509 -noout -fingerprint -sha256` prints it after `sha256 Fingerprint=` (upper-case hex pairs joined by colons).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"subject":            schema.StringAttribute{Computed: true, MarkdownDescription: "Subject distinguished name."},
					"issuer":             schema.StringAttribute{Computed: true, MarkdownDescription: "Issuer distinguished name (the subject again for a self-signed CA)."},
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

func (r *apiServiceCABundleResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		exactlyOneOfRoots("ca_bundle", "source"),
	}
}

func (r *apiServiceCABundleResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan predicts the computed attributes from the desired bundle, so a
// live bundle that drifted from its source shows in the plan. With inline
// PEM that needs no API call; with a source it costs one GET.
func (r *apiServiceCABundleResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || unchangedInlinePlan(req.Plan.Raw, req.State.Raw, apiServiceInlineIdentity) {
		return
	}
	r.modifyPlan(ctx, req, resp)
}

// modifyPlan is ModifyPlan's work when the plan may change.
func (r *apiServiceCABundleResource) modifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var plan apiServiceCABundleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var prior *bundleModel // the state's, nil on create
	if !req.State.Raw.IsNull() {
		var state apiServiceCABundleModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		prior = &state.bundleModel
	}
	plan.ID = plan.APIServiceName
	plan.CABundleSource = types.StringUnknown()
	if plan.sourceKnown() {
		plan.CABundleSource = types.StringValue(plan.source().String())
	}
	plan.setBundleUnknown()
	switch {
	case plan.inline() && !plan.CABundle.IsUnknown():
		// What apply writes: the certificates re-encoded.
		plan.setBundleFrom(prior, cabundle.Canonical([]byte(plan.CABundle.ValueString())), r.now())
	case !plan.inline() && plan.sourceKnown() && r.clients.Known():
		// A source that cannot be read now (not created yet, no connection
		// configured) is checked at apply time instead.
		core, err := r.clients.Core()
		if err != nil {
			break
		}
		bundle, err := cabundle.ReadSource(ctx, core, plan.source())
		if err != nil {
			break
		}
		_, findings := cabundle.Inspect(bundle, r.now())
		addFindings(&resp.Diagnostics, path.Root("source"), findings)
		// Unchanged source and live bundle: keep the state's values (an
		// empty plan). Otherwise leave them unknown: the source may rotate
		// between plan and apply, and apply writes what it holds then.
		plan.keepDescription(prior, cabundle.Canonical(bundle))
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// apiServiceInlineIdentity is what ModifyPlan sets id and ca_bundle_source
// to for an inline bundle, from the plan's raw values.
func apiServiceInlineIdentity(vals map[string]tftypes.Value) (id, source string, ok bool) {
	name, okName := rawString(vals, "apiservice_name")
	namespace, okNamespace := rawString(vals, "bundle_namespace")
	if !okName || !okNamespace {
		return "", "", false
	}
	m := apiServiceCABundleModel{APIServiceName: types.StringValue(name), bundleModel: bundleModel{BundleNamespace: types.StringValue(namespace)}}
	return name, m.source().String(), true
}

func (r *apiServiceCABundleResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan apiServiceCABundleModel
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

func (r *apiServiceCABundleResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state apiServiceCABundleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return // provider configuration unknown: keep the state as it is
	}
	// resp.State starts as the prior state: it is set only when Read
	// changed something (encoding the model is most of what setting costs).
	before := state
	defer func() {
		if !resp.Diagnostics.HasError() && !resp.State.Raw.IsNull() && !state.equal(&before) {
			resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		}
	}()
	agg, err := r.clients.Aggregator()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	core, err := r.clients.Core()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	name := state.APIServiceName.ValueString()
	// An inline bundle's ConfigMap is read beside the APIService: one round
	// trip for both.
	imported := state.CABundle.IsNull() && state.Source == nil
	ahead := startInlineRead(ctx, core, r.clients.inlineReader(), state.inline(), imported, state.source())
	live, err := agg.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		resp.Diagnostics.AddWarning("APIService gone",
			fmt.Sprintf("APIService %q no longer exists, so the kmshealth_apiservice_cabundle that manages its caBundle is removed from the state. It is created again on the next apply once the APIService is back.", name))
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiServiceRequest("Cannot read APIService", "get", name), err)
		return
	}
	annotation := live.Annotations[cabundle.SourceAnnotation]
	if imported {
		resp.Diagnostics.Append(r.adopt(ctx, &state, annotation)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	state.setDefaults()
	state.ID = types.StringValue(name)
	state.CABundleSource = types.StringValue(annotation)
	prior := state // the computed attributes as last described
	state.setBundleFrom(&prior.bundleModel, live.Spec.CABundle, r.now())
	// Canonical once, here, so that both of readInlineDrift's comparisons
	// are a bytes.Equal when nothing drifted (what we wrote is canonical).
	if state.inline() {
		applied := cabundle.Canonical([]byte(state.CABundle.ValueString()))
		state.readInlineDrift(ctx, r.clients, core, ahead, state.source(), live.Spec.CABundle, applied, &resp.Diagnostics)
	}
}

// adopt derives the configuration of an imported resource from the
// APIService's source annotation.
func (r *apiServiceCABundleResource) adopt(ctx context.Context, m *apiServiceCABundleModel, annotation string) diag.Diagnostics {
	var diags diag.Diagnostics
	name := m.APIServiceName.ValueString()
	src, err := cabundle.ParseSource(annotation)
	if err != nil {
		diags.AddError("APIService not managed by kmshealth",
			fmt.Sprintf("APIService %q has no valid %s annotation (%v), so there is nothing to import. Declare a kmshealth_apiservice_cabundle for it and apply instead: that takes over spec.caBundle.",
				name, cabundle.SourceAnnotation, err))
		return diags
	}
	core, err := r.clients.Core()
	if err != nil {
		connectionError(&diags, err)
		return diags
	}
	m.adoptSource(ctx, core, src, cabundle.InlineConfigMapName(name))
	return diags
}

func (r *apiServiceCABundleResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state apiServiceCABundleModel
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
// the first write (including a server-side dry run for conflicts), then
// writes the inline ConfigMap, then the APIService, then cleans up what the
// previous state held and the plan no longer does.
func (r *apiServiceCABundleResource) write(ctx context.Context, plan *apiServiceCABundleModel, prior *bundleModel, diags *diag.Diagnostics) {
	core, err := r.clients.Core()
	if err != nil {
		connectionError(diags, err)
		return
	}
	agg, _ := r.clients.Aggregator()
	apiservices := agg.ApiregistrationV1()
	name := plan.APIServiceName.ValueString()

	live, err := cabundle.Get(ctx, apiservices, name)
	if err != nil {
		r.clients.addAPIError(diags, apiServiceRequest("Cannot read APIService", "get", name), err)
		return
	}
	if err := cabundle.CheckAPIService(live); err != nil {
		diags.AddAttributeError(path.Root("apiservice_name"), "APIService cannot take a caBundle", err.Error())
		return
	}
	src := plan.source()
	bundle, ok := plan.bundleToWrite(ctx, r.clients, core, src, r.now(), diags)
	if !ok {
		return
	}
	opts := plan.options(prior != nil)
	dry := opts
	dry.DryRun = true
	if _, _, err := cabundle.Ensure(ctx, apiservices, live, bundle, src, dry); err != nil {
		r.addApplyError(diags, name, err)
		return
	}
	createdConfigMap, ok := plan.storeInline(ctx, r.clients, core, src, func() error {
		_, err := cabundle.EnsureInlineConfigMap(ctx, core, src.Namespace, name, bundle, plan.FieldManager.ValueString())
		return err
	}, diags)
	if !ok {
		return
	}
	out, _, err := cabundle.Ensure(ctx, apiservices, live, bundle, src, opts)
	if err != nil {
		if createdConfigMap { // leave nothing half-written behind
			_ = cabundle.DeleteInlineConfigMap(ctx, core, src.Namespace, name)
		}
		r.addApplyError(diags, name, err)
		return
	}
	plan.cleanUpAfter(prior,
		func(manager string) error { return cabundle.Release(ctx, apiservices, name, manager) },
		func(namespace string) error { return cabundle.DeleteInlineConfigMap(ctx, core, namespace, name) },
		diags)
	plan.ID = types.StringValue(name)
	plan.CABundleSource = types.StringValue(out.Annotations[cabundle.SourceAnnotation])
	plan.setBundle(out.Spec.CABundle, r.now())
}

func (r *apiServiceCABundleResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state apiServiceCABundleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	core, err := r.clients.Core()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	agg, _ := r.clients.Aggregator()
	name := state.APIServiceName.ValueString()
	if err := cabundle.Release(ctx, agg.ApiregistrationV1(), name, state.FieldManager.ValueString()); err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiServiceRequest("Cannot release caBundle", "patch", name), err)
		return
	}
	if state.inline() {
		if err := cabundle.DeleteInlineConfigMap(ctx, core, state.BundleNamespace.ValueString(), name); err != nil {
			r.clients.addAPIError(&resp.Diagnostics, sourceRequest("Cannot delete inline CA bundle ConfigMap", "delete", state.source(), path.Root("ca_bundle")), err)
		}
	}
}

func (r *apiServiceCABundleResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("apiservice_name"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

func (r *apiServiceCABundleResource) addApplyError(diags *diag.Diagnostics, name string, err error) {
	if errors.Is(err, cabundle.ErrConflict) {
		diags.AddAttributeError(path.Root("force_conflicts"), "caBundle owned by another field manager", err.Error())
		return
	}
	r.clients.addAPIError(diags, apiServiceRequest("Cannot apply caBundle", "patch", name), err)
}

// apiServiceRequest describes a request for the APIService that
// apiservice_name names, for the diagnostic of its failure.
func apiServiceRequest(summary, verb, name string) apiRequest {
	return apiRequest{
		Summary: summary, Verb: verb, Kind: "APIService", Group: "apiregistration.k8s.io", Resource: "apiservices",
		Name: name, Attribute: path.Root("apiservice_name"),
	}
}

// sourceRequest describes a request for a CA bundle source object (the
// user's, or the inline ConfigMap), on behalf of attribute.
func sourceRequest(summary, verb string, src cabundle.Source, attribute path.Path) apiRequest {
	resource := "configmaps"
	if src.Kind == cabundle.KindSecret {
		resource = "secrets"
	}
	return apiRequest{
		Summary: summary, Verb: verb, Kind: src.Kind, Resource: resource,
		Namespace: src.Namespace, Name: src.Name, Attribute: attribute,
	}
}

// addFindings turns bundle findings into diagnostics on attribute p.
func addFindings(diags *diag.Diagnostics, p path.Path, findings []cabundle.Finding) {
	for _, f := range findings {
		if f.Severity == cabundle.Error {
			diags.AddAttributeError(p, f.Summary, f.Detail)
		} else {
			diags.AddAttributeWarning(p, f.Summary, f.Detail)
		}
	}
}
