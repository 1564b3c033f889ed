package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// The glue shared by the resources that install an in-cluster mode of the
// provider binary: kmshealth_reconciler and kmshealth_reporter.

// installedMode names, in diagnostics, the mode a resource installs.
type installedMode struct {
	name           string // "reporter"
	title          string // "Reporter", at the start of a summary
	workload       string // "DaemonSet": without it there is nothing to import
	namespaceLabel string // the label holding the installation's namespace
}

// liveInstallation is what Read needs to know of the objects found.
type liveInstallation interface {
	Installed() bool // the workload exists and is kmshealth's
	Exists() bool    // any object of the installation is left
}

// keepInState decides, in Read, what to do with the installation
// namespace/name found: on import, its workload must exist and be
// kmshealth's (an error otherwise); an installation with no object left is
// removed from the state with a warning, so the next apply installs it
// again. It reports whether Read goes on.
func (m installedMode) keepInState(ctx context.Context, resp *resource.ReadResponse, live liveInstallation, importing bool, namespace, name string) bool {
	if importing && !live.Installed() {
		resp.Diagnostics.AddError("Nothing to import",
			fmt.Sprintf("%s %s/%s does not exist or was not installed by kmshealth (it lacks the %s=%s and %s=%s labels).",
				m.workload, namespace, name, install.InstanceLabel, name, m.namespaceLabel, namespace))
		return false
	}
	if !live.Exists() {
		resp.Diagnostics.AddWarning(m.title+" gone",
			fmt.Sprintf("No object of the %s %s/%s is left, so it is removed from the state; the next apply installs it again.", m.name, namespace, name))
		resp.State.RemoveResource(ctx)
		return false
	}
	return true
}

// objectsInSync is the value of objects_in_sync: whether the live
// installation holds what the state declares. Drift, or a configuration
// that cannot be declared, is warned about.
func objectsInSync(diags *diag.Diagnostics, m installedMode, invalid error, drift func() []string) types.Bool {
	found := []string{"the installed objects cannot be rebuilt: " + fmt.Sprint(invalid)}
	if invalid == nil {
		found = drift()
	}
	if len(found) > 0 {
		diags.AddWarning(m.title+" objects drifted",
			fmt.Sprintf("Changed out of band since the last apply: %s. The next apply restores them.", strings.Join(found, "; ")))
	}
	return types.BoolValue(len(found) == 0)
}

// waitForRolloutAttribute is wait_for_rollout of an installed mode.
func waitForRolloutAttribute(workload, done string) schema.BoolAttribute {
	return schema.BoolAttribute{
		Optional: true, Computed: true,
		Default: booldefault.StaticBool(true),
		MarkdownDescription: "After create and update, watch the " + workload + " until " + done + ", bounded by `timeouts`, logging " +
			"where it stands at least every 10 s (`TF_LOG=INFO`). A pod that cannot start — an image that cannot be pulled, a crash " +
			"loop, no node that can take it — fails the apply at once with the pod's own reason and what to do. Default `true`; set " +
			"`false` where no node can run the pods yet (e.g. while bootstrapping a control plane): the apply then returns once the " +
			"objects are written.",
	}
}

// waitForRollout runs wait (a mode's WaitForRollout) within timeout,
// logging its progress, and reports a rollout that did not finish.
func (m installedMode) waitForRollout(ctx context.Context, timeout time.Duration, diags *diag.Diagnostics,
	wait func(ctx context.Context, progress func(string)) error,
) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	progress := func(p string) {
		tflog.Info(ctx, "Waiting for the "+m.name+" "+m.workload+" to roll out", map[string]any{"progress": p})
	}
	if err := wait(wctx, progress); err != nil {
		diags.AddError(m.title+" not rolled out", err.Error())
	}
}

// applyFailed reports a failed Apply: a foreign object at the attribute
// that can fix it (foreignAttr), a refusal as such, and a write that
// failed half-way with what to do next, marking the objects out of sync.
// It reports whether anything may have been written, i.e. whether the
// state must record the installation.
func (m installedMode) applyFailed(diags *diag.Diagnostics, clients *Clients, err error, foreignAttr func(*install.ForeignError) path.Path, inSync *types.Bool) bool {
	var foreign *install.ForeignError
	refused := errors.Is(err, install.ErrRefused)
	switch {
	case errors.As(err, &foreign):
		diags.AddAttributeError(foreignAttr(foreign), "Object not managed by kmshealth", err.Error())
	case refused:
		clients.addAPIError(diags, apiRequest{Summary: "Cannot install the " + m.name}, err)
	default:
		clients.addAPIError(diags, apiRequest{Summary: m.title + " installed only in part",
			Hint: "The objects written so far are recorded; fix the cause and apply again, or destroy to remove them."}, err)
	}
	if refused {
		return false
	}
	*inSync = types.BoolValue(false)
	return true
}

// importInstallation is the ImportState of an installation: the import ID
// <namespace>/<name>, checked by parseID, fills namespace, name and id;
// Read reads the rest from the cluster.
func importInstallation(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse, parseID func(string) (string, string, error)) {
	ns, name, err := parseID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

// importIDAttribute is the id of an installation.
func importIDAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Computed:            true,
		MarkdownDescription: "`<namespace>/<name>`; also the import ID.",
		PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
	}
}

// resourcesModel holds the requests and limits of the installed container;
// the resources' models embed it.
type resourcesModel struct {
	CPURequest    types.String `tfsdk:"cpu_request"`
	MemoryRequest types.String `tfsdk:"memory_request"`
	MemoryLimit   types.String `tfsdk:"memory_limit"`
}

// resourceAttributes are cpu_request, memory_request and memory_limit of
// the container (e.g. "reporter"), with its defaults.
func resourceAttributes(container string, defaults install.Resources) (cpuRequest, memoryRequest, memoryLimit schema.StringAttribute) {
	attribute := func(def, description string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional: true, Computed: true,
			Default:             stringdefault.StaticString(def),
			MarkdownDescription: description,
			Validators:          []validator.String{quantity},
		}
	}
	return attribute(defaults.CPURequest, "CPU request of the "+container+" container. Default `"+defaults.CPURequest+"`; `\"\"` for none. No CPU limit is set."),
		attribute(defaults.MemoryRequest, "Memory request of the "+container+" container. Default `"+defaults.MemoryRequest+"`; `\"\"` for none."),
		attribute(defaults.MemoryLimit, "Memory limit of the "+container+" container. Default `"+defaults.MemoryLimit+"`; `\"\"` for none. Must not be below `memory_request`.")
}

// resources are the quantities the model describes; they must be known.
func (m resourcesModel) resources() install.Resources {
	return install.Resources{CPURequest: m.CPURequest.ValueString(), MemoryRequest: m.MemoryRequest.ValueString(), MemoryLimit: m.MemoryLimit.ValueString()}
}

// validateMemory rejects, in ValidateConfig, a memory request above the
// limit; unset attributes count with their defaults.
func (m resourcesModel) validateMemory(diags *diag.Diagnostics, defaults install.Resources) {
	if m.MemoryRequest.IsUnknown() || m.MemoryLimit.IsUnknown() {
		return
	}
	request, limit := m.MemoryRequest.ValueString(), m.MemoryLimit.ValueString()
	if m.MemoryRequest.IsNull() {
		request = defaults.MemoryRequest
	}
	if m.MemoryLimit.IsNull() {
		limit = defaults.MemoryLimit
	}
	if err := install.CheckMemory(request, limit); err != nil {
		diags.AddAttributeError(path.Root("memory_request"), "Memory request above limit", err.Error()+".")
	}
}

// setLiveResources reports the quantities the container holds.
func (m *resourcesModel) setLiveResources(live install.Resources) {
	m.CPURequest = liveQuantity(m.CPURequest, live.CPURequest)
	m.MemoryRequest = liveQuantity(m.MemoryRequest, live.MemoryRequest)
	m.MemoryLimit = liveQuantity(m.MemoryLimit, live.MemoryLimit)
}

// liveQuantity keeps the configured spelling of a quantity the cluster
// holds in canonical form (0.5Gi is 512Mi), and reports any other value.
func liveQuantity(prior types.String, live string) types.String {
	if !prior.IsNull() && !prior.IsUnknown() {
		a, err1 := k8sresource.ParseQuantity(prior.ValueString())
		b, err2 := k8sresource.ParseQuantity(live)
		if err1 == nil && err2 == nil && a.Cmp(b) == 0 {
			return prior
		}
	}
	return types.StringValue(live)
}

// admissionModel holds admission_policy and admission_policy_enforced; the
// install resources' models embed it.
type admissionModel struct {
	AdmissionPolicy         types.Bool `tfsdk:"admission_policy"`
	AdmissionPolicyEnforced types.Bool `tfsdk:"admission_policy_enforced"`
}

// admissionAttributes are admission_policy and admission_policy_enforced of
// the mode's installation; what says what the policy allows.
func admissionAttributes(mode, what string) (policy, enforced schema.BoolAttribute) {
	return schema.BoolAttribute{
			Optional: true, Computed: true,
			Default: booldefault.StaticBool(true),
			MarkdownDescription: "Install a ValidatingAdmissionPolicy and its binding under which the " + mode + "'s ServiceAccount " + what +
				", so the API server, not kmshealth's code, enforces it even for a stolen token. Default `true`. Needs " +
				"`admissionregistration.k8s.io/v1` (Kubernetes 1.30 or later): on an older cluster the apply warns that enforcement " +
				"is off and why. `false` opts out explicitly.",
		}, schema.BoolAttribute{
			Computed: true,
			MarkdownDescription: "Whether the admission policy is installed: `false` when `admission_policy = false`, or when the cluster " +
				"did not serve ValidatingAdmissionPolicies at the last create or update (after upgrading the cluster, replace the resource " +
				"or toggle `admission_policy` to install it).",
			PlanModifiers: []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
		}
}

// planEnforced plans admission_policy_enforced: false when opted out, the
// state's value while admission_policy stays true, else known after apply.
func (m *admissionModel) planEnforced(prior *admissionModel) {
	switch {
	case !m.AdmissionPolicy.IsUnknown() && !m.AdmissionPolicy.ValueBool():
		m.AdmissionPolicyEnforced = types.BoolValue(false)
	case prior != nil && prior.AdmissionPolicy.ValueBool() && m.AdmissionPolicy.ValueBool() && !prior.AdmissionPolicyEnforced.IsNull():
		m.AdmissionPolicyEnforced = prior.AdmissionPolicyEnforced
	default:
		m.AdmissionPolicyEnforced = types.BoolUnknown()
	}
}

// enforce decides, at create or update, whether the admission policy is
// installed: when asked for and, by one discovery request, served. A
// cluster that cannot enforce it gets a warning, never silence.
func (m *admissionModel) enforce(ctx context.Context, cl install.Clients, mode string, diags *diag.Diagnostics) bool {
	if !m.AdmissionPolicy.ValueBool() {
		m.AdmissionPolicyEnforced = types.BoolValue(false)
		return false
	}
	if known := m.AdmissionPolicyEnforced; !known.IsUnknown() && !known.IsNull() {
		return known.ValueBool() // kept from the last create or update
	}
	served, err := install.AdmissionPoliciesServed(ctx, cl.Core.Discovery())
	if err != nil {
		diags.AddWarning("Admission policy not checked", fmt.Sprintf("Could not tell whether the cluster serves ValidatingAdmissionPolicies (%v), so the %s is installed without one: "+
			"its ServiceAccount is limited by RBAC alone. Apply again to retry.", err, mode))
		served = false
	} else if !served {
		diags.AddAttributeWarning(path.Root("admission_policy"), "Admission policy enforcement is off",
			fmt.Sprintf("The cluster does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (Kubernetes 1.30 or later), so the %s's "+
				"ServiceAccount is limited by RBAC alone: RBAC names the objects it may write, not the fields. Upgrade the cluster, then replace this "+
				"resource; or set admission_policy = false to opt out explicitly.", mode))
	}
	m.AdmissionPolicyEnforced = types.BoolValue(served)
	return served
}

// checkTarget refuses, at apply, a KMS target whose resource is namespaced
// (its RBAC and admission policy name it cluster-wide: a namespaced
// target would grant that name in every namespace), by one discovery
// request; a resource not served yet is warned about.
func checkTarget(ctx context.Context, cl install.Clients, t kmshealth.Target, attr path.Path, diags *diag.Diagnostics) bool {
	_, err := kmshealth.ResolveKind(ctx, cl.Core.Discovery(), t)
	switch {
	case err == nil:
		return true
	case errors.Is(err, kmshealth.ErrNamespacedTarget):
		diags.AddAttributeError(attr, "Namespaced KMS target", err.Error()+
			": name a cluster-scoped object; RBAC and the admission policy grant its status by name, which for a namespaced resource would mean that name in every namespace.")
		return false
	case errors.Is(err, kmshealth.ErrTargetNotServed):
		diags.AddAttributeWarning(attr, "KMS target not served yet", err.Error()+
			": install its CustomResourceDefinition; until then nothing can be reported there.")
		return true
	}
	diags.AddAttributeError(attr, "Cannot check the KMS target", err.Error())
	return false
}

// imageAttribute is the `image` attribute of an installed component: the
// provider's own binary at its own version by default.
func imageAttribute(component, why string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true, Computed: true,
		MarkdownDescription: "Container image of the " + component + ". Default: the provider's own binary at its own version, `" +
			install.ImageRepository + ":<provider version>@sha256:<digest>` in a release build, " + why + ". " +
			"A development build knows no published image and warns at plan time: set `image` then. " +
			"Set it to pull from a mirror; pin it by digest (`name@sha256:…`) so the pods cannot silently run other code.",
		Validators: []validator.String{imageRef},
	}
}

// planImage fills image with the default when the configuration leaves it
// out, and warns when this build knows no published image of its version
// (a development or untagged build): its default names a tag nobody
// pushed, and the pods would never start.
func planImage(image *types.String, configured types.String, clients *Clients, diags *diag.Diagnostics) {
	if !configured.IsNull() || clients == nil {
		return
	}
	*image = types.StringValue(install.DefaultImage(clients.Version))
	if !install.ImagePublished() {
		diags.AddAttributeWarning(path.Root("image"), "No published image for this provider build",
			fmt.Sprintf("This provider (version %q) is a development build: no image of it was published, so the default %s "+
				"cannot be pulled and the pods would not start. Build one with `make image`, load or push it, and set `image` "+
				"(pinned by digest, name@sha256:…).", clients.Version, image.ValueString()))
	}
}
