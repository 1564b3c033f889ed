package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
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

// applyFailed reports a failed Apply: a foreign object at the attribute
// that can fix it (foreignAttr), a refusal as such, and a write that
// failed half-way with what to do next, marking the objects out of sync.
// It reports whether anything may have been written, i.e. whether the
// state must record the installation.
func (m installedMode) applyFailed(diags *diag.Diagnostics, err error, foreignAttr func(*install.ForeignError) path.Path, inSync *types.Bool) bool {
	var foreign *install.ForeignError
	refused := errors.Is(err, install.ErrRefused)
	switch {
	case errors.As(err, &foreign):
		diags.AddAttributeError(foreignAttr(foreign), "Object not managed by kmshealth", err.Error())
	case refused:
		diags.AddError("Cannot install the "+m.name, err.Error())
	default:
		diags.AddError(m.title+" installed only in part", err.Error()+
			"\n\nThe objects written so far are recorded; fix the cause and apply again, or destroy to remove them.")
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
