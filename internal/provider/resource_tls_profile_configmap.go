package provider

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

var (
	_ resource.ResourceWithConfigure      = (*tlsProfileResource)(nil)
	_ resource.ResourceWithValidateConfig = (*tlsProfileResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*tlsProfileResource)(nil)
	_ resource.ResourceWithImportState    = (*tlsProfileResource)(nil)
	_ resource.ResourceWithUpgradeState   = (*tlsProfileResource)(nil)
)

// NewTLSProfileConfigMapResource is the factory of kmshealth_tls_profile_configmap.
func NewTLSProfileConfigMapResource() resource.Resource { return &tlsProfileResource{} }

type tlsProfileResource struct{ clients *Clients }

type tlsProfileModel struct {
	ID             types.String     `tfsdk:"id"`
	Namespace      types.String     `tfsdk:"namespace"`
	Name           types.String     `tfsdk:"name"`
	Source         types.String     `tfsdk:"source"`
	Profile        *tlsProfileBlock `tfsdk:"profile"`
	FIPS           types.Bool       `tfsdk:"fips"`
	RolloutTargets types.List       `tfsdk:"rollout_targets"` // of rolloutTargetType; unknown until known
	Hash           types.String     `tfsdk:"hash"`
	MinTLSVersion  types.String     `tfsdk:"min_tls_version"`
	CipherSuites   types.List       `tfsdk:"cipher_suites"`
	Groups         types.List       `tfsdk:"groups"`
	ComponentArgs  types.List       `tfsdk:"component_args"`
	FIPSDropped    types.List       `tfsdk:"fips_dropped"`
	IsOpenShift    types.Bool       `tfsdk:"is_openshift"`
	ProfileJSON    types.String     `tfsdk:"profile_json"`
}

type tlsProfileBlock struct {
	Type   types.String    `tfsdk:"type"`
	Custom *tlsCustomBlock `tfsdk:"custom"`
}

type tlsCustomBlock struct {
	Ciphers       types.List   `tfsdk:"ciphers"`
	MinTLSVersion types.String `tfsdk:"min_tls_version"`
	Groups        types.List   `tfsdk:"groups"`
}

var rolloutTargetType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"kind": types.StringType, "namespace": types.StringType, "name": types.StringType,
}}

type rolloutTargetModel struct {
	Kind      types.String `tfsdk:"kind"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
}

func (r *tlsProfileResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tls_profile_configmap"
}

func (r *tlsProfileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	computedList := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		Version: tlsProfileSchemaVersion,
		MarkdownDescription: "Resolves a TLS security profile (Old, Intermediate, Modern or Custom, as in OpenShift's " +
			"`APIServer.spec.tlsSecurityProfile`) once, into a ConfigMap whose `" + tlsprofile.DocumentKey + "` workloads mount and read " +
			"at startup with no API call, and rolls the workloads named in `rollout_targets` when, and only when, the " +
			"profile changes (the annotation `" + tlsprofile.HashAnnotation + "` on their pod template).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`<namespace>/<name>`; also the import ID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"namespace": schema.StringAttribute{Required: true, PlanModifiers: replace,
				MarkdownDescription: "Namespace of the ConfigMap: the workloads that mount it must run there. It must exist."},
			"name": schema.StringAttribute{Required: true, PlanModifiers: replace,
				Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`), "must be a DNS subdomain name: lower case letters, digits, '-' and '.'"), stringvalidator.LengthAtMost(validation.DNS1123SubdomainMaxLength)},
				MarkdownDescription: "Name of the ConfigMap. A ConfigMap of that name that kmshealth did not create is never taken over: the apply stops instead."},
			"source": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(tlsprofile.SourceStatic)),
				Validators: []validator.String{stringvalidator.OneOf(string(tlsprofile.SourceStatic), string(tlsprofile.SourceCluster))},
				MarkdownDescription: "`static` (default): the profile is the `profile` block (Intermediate when there is none). `cluster`: read it, " +
					"and its `tlsAdherence`, from OpenShift's `config.openshift.io/v1` `APIServer` object `cluster` " +
					"(`spec.tlsSecurityProfile`; none means Intermediate) at every plan, so a changed cluster profile shows as a change. " +
					"A cluster without that API is an error. Conflicts with `profile`."},
			"rollout_targets": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Workloads that consume the profile: their pod template gets the annotation `" + tlsprofile.HashAnnotation +
					" = <hash>` by server-side apply of that one field (field manager `" + tlsprofile.TargetFieldManager + "`), so a " +
					"profile change rolls them and nothing else about them changes. Each must exist. On destroy, or when removed " +
					"from this list, the annotation is released.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"kind": schema.StringAttribute{Required: true, Validators: []validator.String{stringvalidator.OneOf(tlsprofile.TargetKinds()...)},
						MarkdownDescription: "`Deployment`, `StatefulSet` or `DaemonSet` (apps/v1)."},
					"namespace": schema.StringAttribute{Required: true, MarkdownDescription: "Namespace of the workload."},
					"name":      schema.StringAttribute{Required: true, MarkdownDescription: "Name of the workload."},
				}},
				Validators: []validator.List{listvalidator.UniqueValues()},
			},
			"hash": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Hex SHA-256 of `profile_json`, exactly as stored: the rollout annotation's value. It changes only when the profile does."},
			"min_tls_version": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The minimum TLS version that applies, e.g. `VersionTLS12`."},
			"cipher_suites": computedList("The IANA names of the TLS 1.0–1.2 cipher suites a Go server is configured with (TLS 1.3 suites are never configurable in Go); empty with a minimum of TLS 1.3."),
			"groups": computedList("The key-exchange groups (formerly called curves) a Go server is configured with, by OpenShift's names, in Go's own preference order: " +
				"Go, like OpenShift's Go components, treats the profile's list as a filter on what it offers, not as an order. Every predefined profile has `" +
				strings.Join(predefinedGroups(), "`, `") + "`. Empty only when a `Custom` profile names none and the TLS library's defaults apply " +
				"(`profile_json` then says `\"curvePreferences\": \"" + tlsprofile.LibraryDefaults + "\"`)."),
			"component_args": computedList("The same settings as the flags Kubernetes components take for their secure serving, ready to append to a " +
				"container's `args`: `" + tlsprofile.FlagTLSMinVersion + "=VersionTLS12` (the names of `k8s.io/component-base`'s `TLSVersion`), `" +
				tlsprofile.FlagTLSCipherSuites + "=` the IANA suite names comma-separated (left out with a minimum of TLS 1.3, whose suites are not " +
				"configurable), and `" + tlsprofile.FlagTLSCurvePreferences + "=` the groups as numeric Go `crypto/tls` curve IDs comma-separated " +
				"(e.g. `4588,29,23,24`; the flag takes IDs, not names; left out for the library defaults). `--tls-curve-preferences` exists since " +
				"Kubernetes 1.36 (kube-apiserver, kube-controller-manager, kube-scheduler and every `k8s.io/apiserver` server); an older component refuses it."),
			"fips": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Keep only what FIPS approves: the NIST P-curves `secp256r1`, `secp384r1`, `secp521r1` (not `X25519`, nor any ML-KEM " +
					"hybrid, as OpenShift states for its FIPS clusters), the AES-GCM suites (ECDHE in TLS 1.2; `TLS_AES_128_GCM_SHA256` and " +
					"`TLS_AES_256_GCM_SHA384` in TLS 1.3), and a minimum of at least TLS 1.2. What is dropped is listed in `fips_dropped` and " +
					"warned about. An attribute rather than detection: no signal a provider can read tells reliably whether the consuming " +
					"workloads run in FIPS mode (a node's `/proc/sys/crypto/fips_enabled` says nothing about a binary built without a FIPS " +
					"module), so say it here. Works with `source = \"cluster\"` too."},
			"fips_dropped": computedList("With `fips = true`, the ciphers and groups the profile names that FIPS does not approve, and so were dropped; empty otherwise."),
			"is_openshift": schema.BoolAttribute{Computed: true, PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Whether the cluster serves OpenShift's `config.openshift.io/v1` `APIServer` API. Detected here, once, so " +
					"workloads take it as an environment value instead of calling discovery at startup."},
			"profile_json": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The ConfigMap's `" + tlsprofile.DocumentKey + "`: `type`, `minTLSVersion`, `ciphers` (as given), `cipherSuites` (what Go uses), " +
					"`groups` (as given), `curvePreferences` (what Go uses, in Go's order, or `\"" + tlsprofile.LibraryDefaults + "\"`), `componentArgs` " +
					"(as `component_args`), `fips` and `fipsDropped` (with `fips`), `tlsAdherence` (with `source = \"cluster\"` when the cluster sets one: " +
					"a change of the adherence alone changes the hash and rolls the targets) and `source`."},
		},
		Blocks: map[string]schema.Block{
			"profile": schema.SingleNestedBlock{
				MarkdownDescription: "The profile, with `source = \"static\"`. Without this block: Intermediate.",
				Attributes: map[string]schema.Attribute{
					"type": schema.StringAttribute{Optional: true,
						Validators:          []validator.String{stringvalidator.OneOf(tlsprofile.ValidTypes()...)},
						MarkdownDescription: "`Old` (minimum TLS 1.0), `Intermediate` (TLS 1.2, the default), `Modern` (TLS 1.3) or `Custom` (the `custom` block), with OpenShift's cipher and group lists (`openshift/api` `config/v1` `TLSProfiles`, Mozilla's guidelines 5.8)."},
				},
				Blocks: map[string]schema.Block{
					"custom": schema.SingleNestedBlock{
						MarkdownDescription: "The settings of a `Custom` profile; only with `type = \"Custom\"`.",
						Attributes: map[string]schema.Attribute{
							"ciphers": schema.ListAttribute{Optional: true, ElementType: types.StringType,
								MarkdownDescription: "Cipher names, OpenSSL (`ECDHE-RSA-AES128-GCM-SHA256`) or IANA (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`); TLS 1.3 suites may be listed. Names Go cannot use are dropped with a warning (refused when the cluster's `tlsAdherence` is strict)."},
							"min_tls_version": schema.StringAttribute{Optional: true,
								Validators:          []validator.String{stringvalidator.OneOf(tlsprofile.ValidTLSVersions()...)},
								MarkdownDescription: "`VersionTLS10`, `VersionTLS11`, `VersionTLS12` or `VersionTLS13`; required with `Custom`."},
							"groups": schema.ListAttribute{Optional: true, ElementType: types.StringType,
								MarkdownDescription: "Key-exchange groups (OpenShift's `groups`, formerly called curves): a set of 1 to " + strconv.Itoa(tlsprofile.MaxGroups) +
									" of `" + strings.Join(tlsprofile.ValidGroups(), "`, `") + "`, spelled exactly so. Go uses them as a filter, in its own " +
									"preference order. Left out: the TLS library's defaults."},
						},
					},
				},
			},
		},
	}
}

func (r *tlsProfileResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

func stringsOf(ctx context.Context, l types.List, diags *diag.Diagnostics) ([]string, bool) {
	if l.IsNull() {
		return nil, true
	}
	if l.IsUnknown() {
		return nil, false
	}
	var out []string
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out, true
}

// spec is the static profile the configuration asks for; known is false
// while a value is unknown.
func (m *tlsProfileModel) spec(ctx context.Context, diags *diag.Diagnostics) (spec tlsprofile.Spec, known bool) {
	spec.Source = tlsprofile.SourceStatic
	if m.FIPS.IsUnknown() {
		return spec, false
	}
	spec.FIPS = m.FIPS.ValueBool()
	if m.Profile == nil {
		return spec, true
	}
	if m.Profile.Type.IsUnknown() {
		return spec, false
	}
	spec.Type = tlsprofile.ProfileType(m.Profile.Type.ValueString())
	if c := m.Profile.Custom; c != nil {
		if c.MinTLSVersion.IsUnknown() {
			return spec, false
		}
		spec.MinTLSVersion = tlsprofile.TLSVersion(c.MinTLSVersion.ValueString())
		var ok1, ok2 bool
		spec.Ciphers, ok1 = stringsOf(ctx, c.Ciphers, diags)
		spec.Groups, ok2 = stringsOf(ctx, c.Groups, diags)
		if !ok1 || !ok2 {
			return spec, false
		}
	}
	return spec, true
}

// tlsProfileFields maps tlsprofile's field paths ("custom.ciphers[2]") to
// the attributes of the profile block; rolloutTargetFields its
// "rolloutTargets[i]" to rollout_targets.
var (
	tlsProfileFields    = fieldAttributes{root: path.Root("profile")}
	rolloutTargetFields = fieldAttributes{}
)

// addProfileError reports a profile problem at its attribute.
func addProfileError(diags *diag.Diagnostics, summary string, err error, cluster bool) {
	switch {
	case errors.Is(err, tlsprofile.ErrNoAPIServerAPI):
		diags.AddAttributeError(path.Root("source"), summary, err.Error())
	case cluster:
		// The fields are the APIServer object's, not this resource's.
		msgs := []string{err.Error()}
		if es := fieldErrorsOf(err); len(es) > 0 {
			msgs = msgs[:0]
			for _, e := range es {
				msgs = append(msgs, e.Field+": "+e.Detail)
			}
		}
		for _, m := range msgs {
			diags.AddAttributeError(path.Root("source"), summary, "The cluster's APIServer \""+tlsprofile.APIServerName+"\": "+m)
		}
	case len(fieldErrorsOf(err)) > 0:
		tlsProfileFields.addErrors(diags, summary, err, nil)
	default:
		diags.AddAttributeError(path.Root("profile"), summary, err.Error())
	}
}

func (r *tlsProfileResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m tlsProfileModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Source.ValueString() == string(tlsprofile.SourceCluster) && m.Profile != nil {
		resp.Diagnostics.AddAttributeError(path.Root("profile"), "Conflicting TLS profile",
			"source = \"cluster\" reads the profile from the cluster's APIServer object: remove the profile block, or set source = \"static\".")
		return
	}
	if m.Profile != nil && m.Profile.Type.IsNull() && !m.Profile.Type.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("profile").AtName("type"), "Missing TLS profile type",
			"Set type to one of "+strings.Join(tlsprofile.ValidTypes(), ", ")+", or remove the profile block for Intermediate.")
		return
	}
	spec, known := m.spec(ctx, &resp.Diagnostics)
	if !known || resp.Diagnostics.HasError() {
		return
	}
	if err := tlsprofile.ValidateSpec(spec); err != nil {
		addProfileError(&resp.Diagnostics, "Invalid TLS profile", err, false)
	}
}

// resolve resolves the profile the plan asks for: the static one, or the
// cluster's (read now). known is false when it cannot be known yet.
func (r *tlsProfileResource) resolve(ctx context.Context, m *tlsProfileModel, diags *diag.Diagnostics) (res tlsprofile.Resolved, known bool) {
	spec, known := m.spec(ctx, diags)
	if !known || diags.HasError() || m.Source.IsUnknown() {
		return res, false
	}
	adherence := tlsprofile.AdherenceNoOpinion
	cluster := m.Source.ValueString() == string(tlsprofile.SourceCluster)
	if cluster {
		if !r.clients.Known() {
			return res, false
		}
		core, dyn, ok := r.clients.coreAndDynamic(diags)
		if !ok {
			return res, false
		}
		var err error
		fips := spec.FIPS
		spec, adherence, err = tlsprofile.ReadCluster(ctx, dyn, core.Discovery())
		spec.FIPS = fips
		if err != nil {
			if errors.Is(err, tlsprofile.ErrNoAPIServerAPI) {
				addProfileError(diags, "No cluster TLS profile", err, true)
			} else {
				r.clients.addAPIError(diags, apiRequest{Summary: "Cannot read the cluster TLS profile", Verb: "get", Kind: tlsprofile.APIServerKind,
					Group: tlsprofile.APIServerGroup, Resource: tlsprofile.APIServerResource, Name: tlsprofile.APIServerName, Attribute: path.Root("source")}, err)
			}
			return res, false
		}
	}
	res, warnings, err := tlsprofile.Resolve(spec, adherence)
	for _, w := range warnings {
		attribute := path.Root("profile")
		if cluster {
			attribute = path.Root("source")
		}
		summary := "TLS profile item Go cannot honour"
		switch {
		case strings.Contains(w, "with fips:"):
			attribute, summary = path.Root("fips"), "Not FIPS-approved, dropped"
		case strings.Contains(w, "older spelling"):
			summary = "Older spelling in the cluster's APIServer"
		}
		diags.AddAttributeWarning(attribute, summary, w)
	}
	if err != nil {
		addProfileError(diags, "TLS profile cannot be honoured", err, cluster)
		return res, false
	}
	return res, true
}

func listValue(items []string) types.List {
	vals := make([]attr.Value, len(items))
	for i, s := range items {
		vals[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, vals)
}

// setResolved fills the computed attributes from a document's JSON.
func (m *tlsProfileModel) setResolved(doc []byte) error {
	d, err := tlsprofile.ParseDocument(doc)
	if err != nil {
		return err
	}
	m.ProfileJSON = types.StringValue(string(doc))
	m.Hash = types.StringValue(tlsprofile.HashJSON(doc))
	m.MinTLSVersion = types.StringValue(string(d.MinTLSVersion))
	m.CipherSuites = listValue(d.CipherSuites)
	m.Groups = listValue(d.CurvePreferences)
	m.ComponentArgs = listValue(d.ComponentArgs)
	m.FIPSDropped = listValue(nonNilStrings(d.FIPSDropped))
	return nil
}

func (m *tlsProfileModel) setUnknown() {
	m.ProfileJSON, m.Hash, m.MinTLSVersion = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	m.CipherSuites, m.Groups = types.ListUnknown(types.StringType), types.ListUnknown(types.StringType)
	m.ComponentArgs, m.FIPSDropped = types.ListUnknown(types.StringType), types.ListUnknown(types.StringType)
}

// targetModels are the rollout targets; known is false while the list is
// unknown.
func (m *tlsProfileModel) targetModels(ctx context.Context, diags *diag.Diagnostics) (out []rolloutTargetModel, known bool) {
	if m.RolloutTargets.IsUnknown() {
		return nil, false
	}
	if m.RolloutTargets.IsNull() {
		return nil, true
	}
	diags.Append(m.RolloutTargets.ElementsAs(ctx, &out, false)...)
	return out, true
}

func (m *tlsProfileModel) targets(ctx context.Context, diags *diag.Diagnostics) []tlsprofile.Target {
	models, _ := m.targetModels(ctx, diags)
	out := make([]tlsprofile.Target, len(models))
	for i, t := range models {
		out[i] = tlsprofile.Target{Kind: kube.WorkloadKind(t.Kind.ValueString()), Namespace: t.Namespace.ValueString(), Name: t.Name.ValueString()}
	}
	return out
}

func (r *tlsProfileResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan tlsProfileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.ID = types.StringValue(install.ImportID(plan.Namespace.ValueString(), plan.Name.ValueString()))
	if res, ok := r.resolve(ctx, &plan, &resp.Diagnostics); ok {
		if err := plan.setResolved(res.JSON); err != nil {
			resp.Diagnostics.AddError("Resolved TLS profile does not read back", err.Error())
			return
		}
	} else {
		plan.setUnknown()
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *tlsProfileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan tlsProfileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.write(ctx, &plan, nil, &resp.Diagnostics)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *tlsProfileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state tlsProfileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.write(ctx, &plan, &state, &resp.Diagnostics)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

// write resolves the profile again (a cluster profile may have changed
// since the plan) and writes it with tlsprofile.Ensure: the ConfigMap, the
// hash on the targets, the release of the targets the prior state had and
// the plan no longer has.
func (r *tlsProfileResource) write(ctx context.Context, plan, prior *tlsProfileModel, diags *diag.Diagnostics) {
	core, dyn, ok := r.clients.coreAndDynamic(diags)
	if !ok {
		return
	}
	spec, _ := plan.spec(ctx, diags)
	if plan.Source.ValueString() == string(tlsprofile.SourceCluster) {
		spec = tlsprofile.Spec{Source: tlsprofile.SourceCluster, FIPS: spec.FIPS}
	}
	res, known := r.resolve(ctx, plan, diags)
	if !known {
		if !diags.HasError() {
			diags.AddError("TLS profile unknown at apply", "The profile could not be resolved; check the provider configuration.")
		}
		return
	}
	ns, name := plan.Namespace.ValueString(), plan.Name.ValueString()
	p := tlsprofile.ProfileConfigMap{Namespace: ns, Name: name, Spec: spec, Resolved: res, Targets: plan.targets(ctx, diags)}
	var priorTargets []tlsprofile.Target
	if prior != nil {
		priorTargets = prior.targets(ctx, diags)
	}
	warnings, err := tlsprofile.Ensure(ctx, core.CoreV1(), dyn, p, priorTargets)
	for _, w := range warnings {
		diags.AddWarning("Cannot release rollout target", w.Error())
	}
	var failed *tlsprofile.StepError
	switch {
	case err == nil:
	case errors.Is(err, tlsprofile.ErrNotOurs):
		diags.AddAttributeError(path.Root("name"), "ConfigMap exists", err.Error()+": kmshealth never takes over a ConfigMap it did not create; choose another name, or delete that ConfigMap first.")
		return
	case errors.As(err, &failed) && failed.Step == tlsprofile.StepTargets:
		rolloutTargetFields.addErrors(diags, "Rollout target unavailable", err, nil)
		return
	case errors.As(err, &failed) && failed.Step == tlsprofile.StepAnnotate:
		rolloutTargetFields.addErrors(diags, "Cannot annotate rollout target", err, nil)
	default:
		r.clients.addAPIError(diags, apiRequest{Summary: "Cannot write the TLS profile ConfigMap", Verb: "patch", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name, Attribute: path.Root("namespace")}, err)
		return
	}
	openshift, err := tlsprofile.IsOpenShift(core.Discovery())
	if err != nil {
		diags.AddError("Cannot detect the platform", err.Error())
		return
	}
	plan.IsOpenShift = types.BoolValue(openshift)
	if err := plan.setResolved(res.JSON); err != nil {
		diags.AddError("Resolved TLS profile does not read back", err.Error())
	}
}

func (r *tlsProfileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state tlsProfileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return
	}
	core, dyn, ok := r.clients.coreAndDynamic(&resp.Diagnostics)
	if !ok {
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	doc, liveTargets, found, err := tlsprofile.LiveDocument(ctx, core.CoreV1(), ns, name)
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiRequest{Summary: "Cannot read the TLS profile ConfigMap", Verb: "get", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, err)
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	written := state.Hash.ValueString() // what the last apply wrote on targets
	importing := state.Hash.IsNull()
	if err := state.setResolved(doc); err != nil {
		// Edited out of band into something unreadable: the plan rewrites it.
		state.ProfileJSON = types.StringValue(string(doc))
		state.Hash = types.StringValue(tlsprofile.HashJSON(doc))
	}
	if importing {
		written = state.Hash.ValueString()
		d, err := tlsprofile.ParseDocument(doc)
		if err == nil {
			state.Source = types.StringValue(string(d.Source))
			if d.FIPS {
				state.FIPS = types.BoolValue(true)
			}
			// An imported static profile is always explicit: the
			// configuration must then name its type too.
			if d.Source == tlsprofile.SourceStatic {
				state.Profile = &tlsProfileBlock{Type: types.StringValue(string(d.Type))}
				if d.Type == tlsprofile.ProfileCustom {
					state.Profile.Custom = &tlsCustomBlock{MinTLSVersion: types.StringValue(string(d.MinTLSVersion)), Ciphers: listValue(d.Ciphers), Groups: listValue(d.Groups)}
					if len(d.Groups) == 0 {
						state.Profile.Custom.Groups = types.ListNull(types.StringType)
					}
				}
			}
		}
		if len(liveTargets) > 0 {
			models := make([]rolloutTargetModel, len(liveTargets))
			for i, t := range liveTargets {
				models[i] = rolloutTargetModel{Kind: types.StringValue(string(t.Kind)), Namespace: types.StringValue(t.Namespace), Name: types.StringValue(t.Name)}
			}
			var d diag.Diagnostics
			state.RolloutTargets, d = types.ListValueFrom(ctx, rolloutTargetType, models)
			resp.Diagnostics.Append(d...)
		} else {
			state.RolloutTargets = types.ListNull(rolloutTargetType)
		}
	}
	// A target whose annotation is gone or changed drops out of the state,
	// so the plan puts it back.
	models, _ := state.targetModels(ctx, &resp.Diagnostics)
	kept := []rolloutTargetModel{}
	for _, t := range models {
		target := tlsprofile.Target{Kind: kube.WorkloadKind(t.Kind.ValueString()), Namespace: t.Namespace.ValueString(), Name: t.Name.ValueString()}
		hash, _, err := tlsprofile.TargetHash(ctx, dyn, target)
		if err != nil && !apierrors.IsNotFound(err) {
			resp.Diagnostics.AddError("Cannot read rollout target", err.Error())
			return
		}
		if hash == written {
			kept = append(kept, t)
		}
	}
	if !state.RolloutTargets.IsNull() {
		var d diag.Diagnostics
		state.RolloutTargets, d = types.ListValueFrom(ctx, rolloutTargetType, kept)
		resp.Diagnostics.Append(d...)
	}
	openshift, err := tlsprofile.IsOpenShift(core.Discovery())
	if err != nil {
		resp.Diagnostics.AddError("Cannot detect the platform", err.Error())
		return
	}
	state.IsOpenShift = types.BoolValue(openshift)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *tlsProfileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state tlsProfileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	core, dyn, ok := r.clients.coreAndDynamic(&resp.Diagnostics)
	if !ok {
		return
	}
	for _, t := range state.targets(ctx, &resp.Diagnostics) {
		if err := tlsprofile.ReleaseTarget(ctx, dyn, t); err != nil {
			resp.Diagnostics.AddError("Cannot release rollout target", err.Error())
		}
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	_, _, found, err := tlsprofile.LiveDocument(ctx, core.CoreV1(), ns, name)
	if err == nil && found {
		err = core.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		r.clients.addAPIError(&resp.Diagnostics, apiRequest{Summary: "Cannot delete the TLS profile ConfigMap", Verb: "delete", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, err)
	}
}

func (r *tlsProfileResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, err := install.ParseID(req.ID, "kube-system/tls-profile", func(n string) []string { return validation.IsDNS1123Subdomain(n) })
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
}

// predefinedGroups are the groups every predefined profile has.
func predefinedGroups() []string {
	p, _ := tlsprofile.Predefined(tlsprofile.ProfileIntermediate)
	return p.Groups
}

// tlsProfileSchemaVersion 1 renamed curves to groups (profile.custom.groups
// and the computed groups) and added fips, fips_dropped and component_args.
const tlsProfileSchemaVersion = 1

// tlsProfileModelV0 is the state of schema version 0.
type tlsProfileModelV0 struct {
	ID             types.String       `tfsdk:"id"`
	Namespace      types.String       `tfsdk:"namespace"`
	Name           types.String       `tfsdk:"name"`
	Source         types.String       `tfsdk:"source"`
	Profile        *tlsProfileBlockV0 `tfsdk:"profile"`
	RolloutTargets types.List         `tfsdk:"rollout_targets"`
	Hash           types.String       `tfsdk:"hash"`
	MinTLSVersion  types.String       `tfsdk:"min_tls_version"`
	CipherSuites   types.List         `tfsdk:"cipher_suites"`
	Curves         types.List         `tfsdk:"curves"`
	IsOpenShift    types.Bool         `tfsdk:"is_openshift"`
	ProfileJSON    types.String       `tfsdk:"profile_json"`
}

type tlsProfileBlockV0 struct {
	Type   types.String      `tfsdk:"type"`
	Custom *tlsCustomBlockV0 `tfsdk:"custom"`
}

type tlsCustomBlockV0 struct {
	Ciphers       types.List   `tfsdk:"ciphers"`
	MinTLSVersion types.String `tfsdk:"min_tls_version"`
	Curves        types.List   `tfsdk:"curves"`
}

// tlsProfileSchemaV0 is schema version 0: the attributes and blocks it had,
// by type (descriptions, validators and plan modifiers play no part in
// reading a prior state).
func tlsProfileSchemaV0() schema.Schema {
	str := func() schema.StringAttribute { return schema.StringAttribute{Optional: true, Computed: true} }
	list := func() schema.ListAttribute {
		return schema.ListAttribute{Optional: true, Computed: true, ElementType: types.StringType}
	}
	return schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id": str(), "namespace": str(), "name": str(), "source": str(),
			"rollout_targets": schema.ListNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"kind": str(), "namespace": str(), "name": str(),
			}}},
			"hash": str(), "min_tls_version": str(), "cipher_suites": list(), "curves": list(),
			"is_openshift": schema.BoolAttribute{Computed: true}, "profile_json": str(),
		},
		Blocks: map[string]schema.Block{
			"profile": schema.SingleNestedBlock{
				Attributes: map[string]schema.Attribute{"type": str()},
				Blocks: map[string]schema.Block{"custom": schema.SingleNestedBlock{Attributes: map[string]schema.Attribute{
					"ciphers": list(), "min_tls_version": str(), "curves": list(),
				}}},
			},
		},
	}
}

// UpgradeState moves a version 0 state to version 1: curves become groups,
// spelled as OpenShift spells them (the aliases version 0 accepted, such as
// P-256, become secp256r1), so the upgraded state holds what the renamed
// configuration says. The new computed attributes are left null; the next
// refresh and plan fill them (the ConfigMap's profile.json is rewritten in
// the new format, so its hash changes and the rollout targets roll once).
func (r *tlsProfileResource) UpgradeState(_ context.Context) map[int64]resource.StateUpgrader {
	prior := tlsProfileSchemaV0()
	return map[int64]resource.StateUpgrader{
		0: {PriorSchema: &prior, StateUpgrader: upgradeTLSProfileStateV0},
	}
}

func upgradeTLSProfileStateV0(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	var old tlsProfileModelV0
	resp.Diagnostics.Append(req.State.Get(ctx, &old)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m := tlsProfileModel{
		ID: old.ID, Namespace: old.Namespace, Name: old.Name, Source: old.Source,
		FIPS:           types.BoolNull(),
		RolloutTargets: old.RolloutTargets,
		Hash:           old.Hash, MinTLSVersion: old.MinTLSVersion, CipherSuites: old.CipherSuites,
		Groups:        canonicalGroups(ctx, old.Curves, &resp.Diagnostics),
		ComponentArgs: types.ListNull(types.StringType),
		FIPSDropped:   types.ListNull(types.StringType),
		IsOpenShift:   old.IsOpenShift, ProfileJSON: old.ProfileJSON,
	}
	if old.Profile != nil {
		m.Profile = &tlsProfileBlock{Type: old.Profile.Type}
		if c := old.Profile.Custom; c != nil {
			m.Profile.Custom = &tlsCustomBlock{Ciphers: c.Ciphers, MinTLSVersion: c.MinTLSVersion, Groups: canonicalGroups(ctx, c.Curves, &resp.Diagnostics)}
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// canonicalGroups spells a version 0 curve list as OpenShift spells its
// groups; a name it does not know is kept, for validation to name.
func canonicalGroups(ctx context.Context, l types.List, diags *diag.Diagnostics) types.List {
	if l.IsNull() || l.IsUnknown() {
		return l
	}
	var names []string
	diags.Append(l.ElementsAs(ctx, &names, false)...)
	for i, n := range names {
		names[i] = tlsprofile.CanonicalGroupName(n)
	}
	return listValue(names)
}
