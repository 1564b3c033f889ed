package provider

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
)

var (
	_ resource.ResourceWithConfigure      = (*reporterResource)(nil)
	_ resource.ResourceWithValidateConfig = (*reporterResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*reporterResource)(nil)
	_ resource.ResourceWithImportState    = (*reporterResource)(nil)
)

// defaultReporterTimeout bounds waiting for the CRD to be established (on
// create and update) and to be gone (on delete).
const defaultReporterTimeout = 2 * time.Minute

// NewReporterResource is the factory of kmshealth_reporter.
func NewReporterResource() resource.Resource { return &reporterResource{} }

type reporterResource struct {
	clients *Clients
}

type reporterModel struct {
	ID                types.String   `tfsdk:"id"`
	Namespace         types.String   `tfsdk:"namespace"`
	Name              types.String   `tfsdk:"name"`
	Image             types.String   `tfsdk:"image"`
	KMSSockets        types.Set      `tfsdk:"kms_sockets"`
	SocketDir         types.String   `tfsdk:"socket_dir"`
	ProbeInterval     types.String   `tfsdk:"probe_interval"`
	ReadTimeout       types.String   `tfsdk:"read_timeout"`
	WriteTimeout      types.String   `tfsdk:"write_timeout"`
	Target            types.String   `tfsdk:"target"`
	ReportFormat      types.String   `tfsdk:"report_format"`
	InstallCRD        types.Bool     `tfsdk:"install_crd"`
	NodeSelector      types.Map      `tfsdk:"node_selector"`
	Tolerations       types.List     `tfsdk:"tolerations"`
	RunAsUser         types.Int64    `tfsdk:"run_as_user"`
	RunAsGroup        types.Int64    `tfsdk:"run_as_group"`
	PriorityClassName types.String   `tfsdk:"priority_class_name"`
	ServiceAccount    types.String   `tfsdk:"service_account"`
	ClusterRole       types.String   `tfsdk:"cluster_role"`
	ObjectsInSync     types.Bool     `tfsdk:"objects_in_sync"`
	AnySocketDir      types.Bool     `tfsdk:"any_socket_dir"`
	WaitForRollout    types.Bool     `tfsdk:"wait_for_rollout"`
	Monitoring        types.Object   `tfsdk:"monitoring"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`

	resourcesModel // cpu_request, memory_request, memory_limit
	admissionModel // admission_policy, admission_policy_enforced
}

// tolerationModel is one element of tolerations; unset fields are null.
type tolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

var tolerationType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"key": types.StringType, "operator": types.StringType, "value": types.StringType, "effect": types.StringType, "toleration_seconds": types.Int64Type,
}}

func (t tolerationModel) toleration() corev1.Toleration {
	out := corev1.Toleration{
		Key:      t.Key.ValueString(),
		Operator: corev1.TolerationOperator(t.Operator.ValueString()),
		Value:    t.Value.ValueString(),
		Effect:   corev1.TaintEffect(t.Effect.ValueString()),
	}
	if !t.TolerationSeconds.IsNull() && !t.TolerationSeconds.IsUnknown() {
		s := t.TolerationSeconds.ValueInt64()
		out.TolerationSeconds = &s
	}
	return out
}

func optionalString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func tolerationsValue(ctx context.Context, in []corev1.Toleration) (types.List, diag.Diagnostics) {
	models := make([]tolerationModel, len(in))
	for i, t := range in {
		models[i] = tolerationModel{
			Key: optionalString(t.Key), Operator: optionalString(string(t.Operator)), Value: optionalString(t.Value),
			Effect: optionalString(string(t.Effect)), TolerationSeconds: types.Int64PointerValue(t.TolerationSeconds),
		}
	}
	return types.ListValueFrom(ctx, tolerationType, models)
}

func tolerationsOf(ctx context.Context, l types.List) ([]corev1.Toleration, diag.Diagnostics) {
	var models []tolerationModel
	diags := l.ElementsAs(ctx, &models, false)
	out := make([]corev1.Toleration, len(models))
	for i, m := range models {
		out[i] = m.toleration()
	}
	return out, diags
}

// config is the installation the model describes; values must be known
// and were validated at plan time.
func (m *reporterModel) config(ctx context.Context) (reporterinstall.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	c := reporterinstall.Config{
		Namespace:         m.Namespace.ValueString(),
		Name:              m.Name.ValueString(),
		Image:             m.Image.ValueString(),
		SocketDir:         m.SocketDir.ValueString(),
		InstallCRD:        m.InstallCRD.ValueBool(),
		RunAsUser:         m.RunAsUser.ValueInt64(),
		RunAsGroup:        m.RunAsGroup.ValueInt64(),
		PriorityClassName: m.PriorityClassName.ValueString(),
		Resources:         m.resources(),
		AdmissionPolicy:   m.AdmissionPolicyEnforced.ValueBool(),
		AnySocketDir:      m.AnySocketDir.ValueBool(),
	}
	if !m.KMSSockets.IsNull() {
		diags.Append(m.KMSSockets.ElementsAs(ctx, &c.Sockets, false)...)
	}
	diags.Append(m.NodeSelector.ElementsAs(ctx, &c.NodeSelector, false)...)
	tolerations, d := tolerationsOf(ctx, m.Tolerations)
	diags.Append(d...)
	c.Tolerations = tolerations
	for _, d := range []struct {
		attr string
		v    types.String
		out  *time.Duration
	}{{"probe_interval", m.ProbeInterval, &c.Interval}, {"read_timeout", m.ReadTimeout, &c.ReadTimeout}, {"write_timeout", m.WriteTimeout, &c.WriteTimeout}} {
		v, err := time.ParseDuration(d.v.ValueString())
		if err != nil {
			diags.AddAttributeError(path.Root(d.attr), "Invalid duration", err.Error())
		}
		*d.out = v
	}
	t, err := kmshealth.ParseTarget(m.Target.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("target"), "Invalid target", err.Error())
	}
	c.Target = t
	c.ReportFormat = kmshealth.ReportFormat(m.ReportFormat.ValueString())
	mon, d := monitoringConfig(ctx, m.Monitoring)
	diags.Append(d...)
	c.Monitoring = mon
	return c, diags
}

// setNames fills the computed names from namespace and name.
func (m *reporterModel) setNames() {
	if m.Namespace.IsUnknown() || m.Name.IsUnknown() {
		m.ID, m.ServiceAccount, m.ClusterRole = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		return
	}
	c := reporterinstall.Config{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	m.ID = types.StringValue(c.ID())
	m.ServiceAccount = types.StringValue(c.ServiceAccountName())
	m.ClusterRole = types.StringValue(c.ClusterRoleName())
}

func (r *reporterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_reporter"
}

func (r *reporterResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	defaultSelector := types.MapValueMust(types.StringType, map[string]attr.Value{reporterinstall.ControlPlaneLabel: types.StringValue("")})
	defaultTolerations, _ := tolerationsValue(ctx, reporterinstall.DefaultTolerations())
	cpuRequest, memoryRequest, memoryLimit := resourceAttributes("reporter", reporterinstall.DefaultResources())
	admissionPolicy, admissionEnforced := admissionAttributes("reporter",
		"may change, on the target's status, only the condition `KMSHealthReporter_<node>` of the node its pod runs on (taken from its pod-bound token), "+
			"with every other condition and field unchanged and no `lastChecked` more than "+kmshealth.MaxClockSkew.String()+" ahead of the API server's clock")
	resp.Schema = schema.Schema{
		MarkdownDescription: "Installs the KMS v2 plugin health reporter (`terraform-provider-kmshealth report`) on the control-plane " +
			"nodes: a DaemonSet that probes each local KMS plugin socket with the `Status` RPC and writes one " +
			"`KMSHealthReporter_<node>` condition per node on the `target` object; a ServiceAccount with an expiring, projected " +
			"token; RBAC that allows `patch` of the target's `status` and nothing else but the TokenReviews and SubjectAccessReviews " +
			"that guard its `/metrics`; and, by default, the `KMSHealth` " +
			"CustomResourceDefinition and its `cluster` object. The `kmshealth_kms_plugin_health` data source reads the " +
			"conditions. All objects are written by server-side apply under the field manager `kmshealth`; destroy removes " +
			"them and the conditions the reporters (and the reconciler's aggregator) wrote on the target.\n\n" +
			"The pods mount a directory of the node (`hostPath`), which the `baseline` and `restricted` Pod Security Standards " +
			"forbid: install into a namespace at the `privileged` level, such as `kube-system`.",
		Attributes: map[string]schema.Attribute{
			"id": importIDAttribute(),
			"namespace": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Namespace of the DaemonSet and ServiceAccount. It must exist and allow `hostPath` volumes " +
					"(Pod Security level `privileged`, e.g. `kube-system`); the apply stops with an explanation when its " +
					"`pod-security.kubernetes.io/enforce` label says `baseline` or `restricted`. Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{namespaceName},
			},
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(reporterinstall.DefaultName),
				MarkdownDescription: "Name of the DaemonSet and ServiceAccount. Default `" + reporterinstall.DefaultName + "`. " +
					"A DNS-1123 label. Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{reporterName},
			},
			"image": imageAttribute("reporter", "so the reporter always writes the format this provider's data source reads"),
			"kms_sockets": schema.SetAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "The KMS v2 plugin endpoints to probe on every node, each `unix:///var/run/kmsplugin/kms-<keyID>.sock` " +
					"(the pattern `" + kmshealth.SocketPattern.String() + "`; `<keyID>` is the plugin's sequence number in the " +
					"report), as in the API server's EncryptionConfiguration. Each is passed as `--kms-socket`, and " +
					"`" + kmshealth.SocketDir + "` is mounted. Conflicts with `socket_dir`; with neither set, the reporter probes " +
					"every socket in `" + kmshealth.SocketDir + "`.",
				Validators: []validator.Set{kmsSockets{}},
			},
			"socket_dir": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Probe every `kms-<keyID>.sock` in this node directory, listed again on every probe, so a " +
					"plugin added for a key rotation is picked up without an apply (`--socket-dir`). Default `" + kmshealth.SocketDir +
					"` when `kms_sockets` is not set; conflicts with `kms_sockets`. The directory is mounted read-only at the same " +
					"path (a `hostPath` of type `Directory`: the pods start once the plugin has created it).",
				Validators: []validator.String{
					checkedString{"Invalid socket directory", "must be an absolute, clean path", func(s string) error { return reporterinstall.ValidateSocketDir(s, true) }},
					stringvalidator.ConflictsWith(path.MatchRoot("kms_sockets")),
				},
			},
			"probe_interval": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(kmshealth.DefaultInterval.String()),
				MarkdownDescription: "How often each reporter probes its plugins and writes its condition, with up to 10% jitter " +
					"(`--interval`). A Go duration, at least `" + kmshealth.MinInterval.String() + "`. Default `" + kmshealth.DefaultInterval.String() +
					"`. A report older than 4 × this interval counts as stale.",
				Validators: []validator.String{goDuration{min: kmshealth.MinInterval}},
			},
			"read_timeout": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Timeout of each plugin's `Status` call (`--read-timeout`). Default: `" + kmshealth.DefaultReadTimeout.String() +
					"`, or a quarter of a `probe_interval` shorter than 20s, so the default fits every allowed interval; must be shorter than `probe_interval`.",
				Validators: []validator.String{goDuration{}},
			},
			"write_timeout": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Timeout of each condition write; a write that misses it is dropped, never queued (`--write-timeout`). " +
					"Default: `" + kmshealth.DefaultWriteTimeout.String() + "`, or half a `probe_interval` shorter than 20s; must be shorter than `probe_interval`.",
				Validators: []validator.String{goDuration{}},
			},
			"target": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(kmshealth.DefaultTarget().String()),
				MarkdownDescription: "The cluster-scoped object whose `status.conditions` receive the reports, as " +
					"`<group>/<version>/<resource>/<name>` (resource plural, lower case). Default `" + kmshealth.DefaultTarget().String() +
					"`, the object this resource creates. Any object with a `status` subresource and `metav1.Condition` " +
					"conditions (`listType=map` keyed by `type`) works, e.g. an OpenShift operator CR " +
					"(`operator.openshift.io/v1/kubeapiservers/cluster`); then set `install_crd = false`. The ClusterRole " +
					"allows `patch` of `<resource>/status` of exactly this name. Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{targetString},
			},
			"report_format": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(string(kmshealth.FormatConditions)),
				MarkdownDescription: "How each node's report is written on `target` (`--report-format`): `" + string(kmshealth.FormatConditions) +
					"` (default), a `" + kmshealth.ReporterConditionPrefix + "<node>` condition in `status.conditions`; or `" +
					string(kmshealth.FormatOpenShiftTyped) + "`, OpenShift's typed `status.encryptionStatus.healthReports` entries " +
					"(openshift/api#2881), for an OpenShift operator object such as `operator.openshift.io/v1/kubeapiservers/cluster` " +
					"(then `install_crd = false`; a `" + kmshealth.Kind + "` target has no such field and is refused). The admission " +
					"policy follows the format: a reporter may change only its own node's condition, or only the `healthReports` " +
					"entries whose `nodeName` is its node. `kmshealth_kms_plugin_health` reads either format. Changing it replaces the resource.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.OneOf(string(kmshealth.FormatConditions), string(kmshealth.FormatOpenShiftTyped))},
			},
			"install_crd": schema.BoolAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Install the `" + kmshealth.CRDName + "` CustomResourceDefinition, wait (by watch) until it is " +
					"established, and create the `target` object; destroy deletes both (and waits until the CRD is gone), unless " +
					"the CRD holds `" + kmshealth.Kind + "` objects someone else created. Default `true` when `target` is a `" +
					kmshealth.Kind + "` object, `false` otherwise. A CRD or object that this resource did not create is never " +
					"taken over: set `false` to report to it as it is. Turning it off later hands the CRD and the object over " +
					"(their kmshealth labels are removed) and destroy keeps them.",
			},
			"node_selector": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true, Computed: true,
				Default: mapdefault.StaticValue(defaultSelector),
				MarkdownDescription: "Node labels that select where the reporter runs. Default `{\"" + reporterinstall.ControlPlaneLabel +
					"\" = \"\"}`: the control-plane nodes, which run the API servers and their KMS plugins. `{}` selects every node.",
				Validators: []validator.Map{labelMap{}},
			},
			"tolerations": schema.ListNestedAttribute{
				Optional: true, Computed: true,
				Default: listdefault.StaticValue(defaultTolerations),
				MarkdownDescription: "Taints the reporter tolerates, as in a pod spec. Default: the control-plane taint " +
					"`" + reporterinstall.ControlPlaneTaint + ":NoSchedule` (operator `Exists`). `[]` tolerates none.",
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"key":                schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; empty with operator `Exists` tolerates every taint."},
						"operator":           schema.StringAttribute{Optional: true, MarkdownDescription: "`Exists` or `Equal` (the Kubernetes default when unset)."},
						"value":              schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value, with operator `Equal`."},
						"effect":             schema.StringAttribute{Optional: true, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; unset matches all effects."},
						"toleration_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "With effect `NoExecute`: how long the pod stays after the taint appears."},
					},
					Validators: []validator.Object{tolerationObject{}},
				},
			},
			"run_as_user": schema.Int64Attribute{
				Optional: true, Computed: true,
				Default: int64default.StaticInt64(reporterinstall.DefaultRunAsUser),
				MarkdownDescription: "User ID of the reporter process. Default `0`: KMS plugins create their sockets owned by root " +
					"(mode `0600` or `0660` on most distributions) and connecting to a Unix socket needs write permission on it. " +
					"Root here has no capabilities at all (every capability is dropped, privilege escalation is off, the root " +
					"file system is read-only, seccomp is `RuntimeDefault`), so it can open only what root owns, and the socket " +
					"directory is mounted read-only. When your plugin's socket belongs to another user or group, set that ID " +
					"here (and `run_as_group`): the pod then also runs with `runAsNonRoot`.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"run_as_group": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Group ID of the reporter process. Default: `run_as_user`.",
				Validators:          []validator.Int64{int64validator.AtLeast(0)},
			},
			"priority_class_name": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(reporterinstall.DefaultPriorityClassName),
				MarkdownDescription: "PriorityClass of the reporter pods. Default `" + reporterinstall.DefaultPriorityClassName +
					"`, like other per-node agents, so a full node does not evict the health signal key rotations depend on; " +
					"`\"\"` for none.",
				Validators: []validator.String{priorityClassName},
			},
			"cpu_request":    cpuRequest,
			"memory_request": memoryRequest,
			"memory_limit":   memoryLimit,
			"service_account": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Name of the reporter's ServiceAccount in `namespace`; its user is `system:serviceaccount:<namespace>:<service_account>`. " +
					"Its token is never mounted automatically: the pods mount a projected token that expires after an hour " +
					"(renewed by the kubelet), with the cluster CA and the namespace, where in-cluster configuration expects them.",
			},
			"cluster_role": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Name of the ClusterRole (and ClusterRoleBinding): `kmshealth-reporter:<namespace>:<name>`. Its one rule allows `patch` of `<resource>/status` of the `target` object, by name; nothing else.",
			},
			"wait_for_rollout": waitForRolloutAttribute("DaemonSet", "its pod is updated and available on every node it is scheduled to"),
			"any_socket_dir": schema.BoolAttribute{
				Optional: true, Computed: true,
				Default: booldefault.StaticBool(false),
				MarkdownDescription: "Allow a `socket_dir` outside `/var/run/kmsplugin` and `/run/kmsplugin`. Default `false`: the directory is " +
					"mounted into pods that run as root, so a typo (or a changed configuration) could otherwise mount e.g. `/etc/kubernetes`, " +
					"the cluster's keys. `true` is accepted with a warning.",
			},
			"admission_policy":          admissionPolicy,
			"admission_policy_enforced": admissionEnforced,
			"monitoring":                monitoringAttribute(reporterMonitoring),
			"objects_in_sync": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "`false` when, at the last refresh, an object of the installation was missing, or a field kmshealth " +
					"applied had been changed or taken over by another field manager (e.g. a `kubectl edit` of the DaemonSet or the " +
					"ClusterRole). The plan then shows it turning `true`, and the apply restores every object. Always `true` after an apply.",
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

func (r *reporterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// timings are the interval and the timeouts of the configuration, unset
// ones with their defaults; known is false when any is unknown or does not
// parse (its validator reports that).
func (m reporterModel) timings() (interval, read, write time.Duration, known bool) {
	parse := func(v types.String, def time.Duration) (time.Duration, bool) {
		if v.IsUnknown() {
			return 0, false
		}
		if v.IsNull() {
			return def, true
		}
		d, err := time.ParseDuration(v.ValueString())
		return d, err == nil
	}
	interval, ok1 := parse(m.ProbeInterval, kmshealth.DefaultInterval)
	defRead, defWrite := kmshealth.DefaultTimeouts(interval)
	read, ok2 := parse(m.ReadTimeout, defRead)
	write, ok3 := parse(m.WriteTimeout, defWrite)
	return interval, read, write, ok1 && ok2 && ok3
}

// ValidateConfig checks what spans attributes: the timeouts against the
// interval, install_crd against the target, the memory request against
// the limit. Unset attributes count with their defaults.
func (r *reporterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m reporterModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if interval, read, write, known := m.timings(); known {
		for _, e := range kmshealth.CheckTimings(interval, read, write) {
			if e.Timing == kmshealth.Interval {
				continue // the attribute's validator reports it
			}
			a := reporterinstall.TimingAttributes[e.Timing]
			resp.Diagnostics.AddAttributeError(path.Root(a), "Timeout not shorter than the probe interval",
				fmt.Sprintf("%s %s: lower %s or raise probe_interval.", a, e.Err, a))
		}
	}

	if !m.InstallCRD.IsNull() && !m.InstallCRD.IsUnknown() && !m.Target.IsUnknown() {
		t := kmshealth.DefaultTarget()
		if !m.Target.IsNull() {
			var err error
			if t, err = kmshealth.ParseTarget(m.Target.ValueString()); err != nil {
				t = kmshealth.DefaultTarget() // the attribute's validator reports it
			}
		}
		if err := reporterinstall.CheckInstallCRD(m.InstallCRD.ValueBool(), t); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("install_crd"), "CRD for another kind of target", err.Error()+".")
		}
	}
	if !m.ReportFormat.IsNull() && !m.ReportFormat.IsUnknown() && !m.Target.IsUnknown() {
		t := kmshealth.DefaultTarget()
		if !m.Target.IsNull() {
			if parsed, err := kmshealth.ParseTarget(m.Target.ValueString()); err == nil {
				t = parsed
			}
		}
		f := kmshealth.ReportFormat(m.ReportFormat.ValueString())
		if _, err := kmshealth.ParseReportFormat(string(f)); err == nil { // else the attribute's validator reports it
			if err := reporterinstall.CheckReportFormat(f, t); err != nil {
				resp.Diagnostics.AddAttributeError(path.Root("report_format"), "Report format the target cannot hold", err.Error()+".")
			}
		}
	}

	if !m.SocketDir.IsNull() && !m.SocketDir.IsUnknown() && !m.AnySocketDir.IsUnknown() {
		if err := reporterinstall.ValidateSocketDir(m.SocketDir.ValueString(), m.AnySocketDir.ValueBool()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("socket_dir"), "Socket directory outside the KMS plugin directories", err.Error()+".")
		} else if m.AnySocketDir.ValueBool() {
			resp.Diagnostics.AddAttributeWarning(path.Root("any_socket_dir"), "Socket directory not restricted",
				fmt.Sprintf("any_socket_dir = true: %s is mounted from every selected node into reporter pods that run as user %s. Make sure it holds nothing but KMS plugin sockets.",
					m.SocketDir.ValueString(), m.RunAsUser.String()))
		}
	}
	m.validateMemory(&resp.Diagnostics, reporterinstall.DefaultResources())
}

// ModifyPlan fills the defaults that depend on other values (image from the
// provider's version, socket_dir unless kms_sockets is set, install_crd
// from the target, run_as_group from run_as_user, the timeouts from
// probe_interval) and the computed names,
// and plans objects_in_sync = true: a refresh that found drift makes that a
// change, and the apply restores the objects.
func (r *reporterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan, config reporterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	var prior *admissionModel
	if !req.State.Raw.IsNull() {
		var state reporterModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		prior = &state.admissionModel
	}
	if resp.Diagnostics.HasError() {
		return
	}
	plan.planEnforced(prior)
	planImage(&plan.Image, config.Image, r.clients, &resp.Diagnostics)
	if config.SocketDir.IsNull() {
		switch {
		case config.KMSSockets.IsUnknown():
			plan.SocketDir = types.StringUnknown()
		case config.KMSSockets.IsNull():
			plan.SocketDir = types.StringValue(kmshealth.SocketDir)
		default:
			plan.SocketDir = types.StringNull()
		}
	}
	if config.InstallCRD.IsNull() {
		if plan.Target.IsUnknown() {
			plan.InstallCRD = types.BoolUnknown()
		} else {
			t, err := kmshealth.ParseTarget(plan.Target.ValueString())
			plan.InstallCRD = types.BoolValue(err == nil && t.IsDefault())
		}
	}
	if config.RunAsGroup.IsNull() {
		plan.RunAsGroup = plan.RunAsUser
	}
	// Unset timeouts follow the interval.
	if config.ReadTimeout.IsNull() || config.WriteTimeout.IsNull() {
		read, write := types.StringUnknown(), types.StringUnknown()
		if interval, err := time.ParseDuration(plan.ProbeInterval.ValueString()); err == nil && !plan.ProbeInterval.IsUnknown() {
			r, w := kmshealth.DefaultTimeouts(interval)
			read, write = types.StringValue(r.String()), types.StringValue(w.String())
		}
		if config.ReadTimeout.IsNull() {
			plan.ReadTimeout = read
		}
		if config.WriteTimeout.IsNull() {
			plan.WriteTimeout = write
		}
	}
	plan.setNames()
	plan.ObjectsInSync = types.BoolValue(true)
	if !plan.Monitoring.IsNull() && !plan.Monitoring.IsUnknown() && r.clients.Known() {
		if cl, ok := r.clients.installClients(&resp.Diagnostics); ok {
			monitoringAvailable(ctx, cl, &resp.Diagnostics)
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *reporterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan reporterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultReporterTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.write(ctx, &plan, timeout, &resp.Diagnostics) {
		// Also after a write that failed half-way: the resource is then
		// tainted, and destroy can clean up.
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *reporterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state reporterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return // provider configuration unknown: keep the state as it is
	}
	cl, ok := r.clients.installClients(&resp.Diagnostics)
	if !ok {
		return
	}
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	importing := state.Image.IsNull()
	var target kmshealth.Target // zero on import: the DaemonSet's
	if !importing {
		var err error
		if target, err = kmshealth.ParseTarget(state.Target.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("target"), "Invalid target in state", err.Error())
			return
		}
	}
	live, err := reporterinstall.Observe(ctx, cl, ns, name, target)
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiRequest{Summary: "Cannot read the reporter installation", Verb: "get"}, err)
		return
	}
	if !reporterMode.keepInState(ctx, resp, live, importing, ns, name) {
		return
	}

	got, parsed := live.Config()
	want := got // import: what is there is what was applied
	if importing {
		if !parsed {
			resp.Diagnostics.AddError("Cannot import the reporter",
				fmt.Sprintf("DaemonSet %s/%s has no %q container whose arguments the report mode accepts: it was changed out of band. Delete it and apply, or restore it first.",
					ns, name, reporterinstall.ContainerName))
			return
		}
		state.Target = types.StringValue(got.Target.String())
		state.ReportFormat = types.StringValue(string(got.ReportFormat))
		state.InstallCRD = types.BoolValue(got.InstallCRD)
		state.AdmissionPolicy = types.BoolValue(got.AdmissionPolicy)
		state.AdmissionPolicyEnforced = types.BoolValue(got.AdmissionPolicy)
		state.AnySocketDir = types.BoolValue(got.SocketDir != "" && reporterinstall.ValidateSocketDir(got.SocketDir, false) != nil)
		state.WaitForRollout = types.BoolValue(true) // the default: nothing in the cluster says otherwise
	} else {
		var diags diag.Diagnostics
		want, diags = state.config(ctx)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		if want.Monitoring != nil {
			// Without the prometheus-operator CRDs the monitoring objects
			// cannot exist: not drift (plan warns instead).
			if ok, err := install.MonitoringAvailable(ctx, cl); err == nil && !ok {
				want.Monitoring = nil
			}
		}
	}
	state.ObjectsInSync = objectsInSync(&resp.Diagnostics, reporterMode, want.Validate(), func() []string { return live.Drift(want) })

	// Report the live values of what the DaemonSet holds, so an
	// out-of-band change shows in the plan (objects_in_sync covers the rest).
	if live.Installed() && parsed {
		resp.Diagnostics.Append(state.setLive(ctx, got, want)...)
	}
	state.setNames()
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// setLive copies the DaemonSet's values into the model, keeping the
// model's spelling where it means the same (1m is 1m0s, 0.5Gi is 512Mi).
func (m *reporterModel) setLive(ctx context.Context, got, prior reporterinstall.Config) diag.Diagnostics {
	var diags diag.Diagnostics
	m.Image = types.StringValue(got.Image)
	if len(got.Sockets) > 0 {
		if !sameStrings(got.Sockets, prior.Sockets) || m.KMSSockets.IsNull() {
			set, d := types.SetValueFrom(ctx, types.StringType, got.Sockets)
			diags.Append(d...)
			m.KMSSockets = set
		}
		m.SocketDir = types.StringNull()
	} else {
		m.KMSSockets = types.SetNull(types.StringType)
		m.SocketDir = types.StringValue(got.SocketDir)
	}
	m.ProbeInterval = liveDuration(m.ProbeInterval, got.Interval)
	m.ReadTimeout = liveDuration(m.ReadTimeout, got.ReadTimeout)
	m.WriteTimeout = liveDuration(m.WriteTimeout, got.WriteTimeout)
	if !reflect.DeepEqual(normalizeMap(got.NodeSelector), normalizeMap(prior.NodeSelector)) || m.NodeSelector.IsNull() {
		sel, d := types.MapValueFrom(ctx, types.StringType, normalizeMap(got.NodeSelector))
		diags.Append(d...)
		m.NodeSelector = sel
	}
	if !sameTolerations(got.Tolerations, prior.Tolerations) || m.Tolerations.IsNull() {
		l, d := tolerationsValue(ctx, got.Tolerations)
		diags.Append(d...)
		m.Tolerations = l
	}
	m.RunAsUser = types.Int64Value(got.RunAsUser)
	m.RunAsGroup = types.Int64Value(got.RunAsGroup)
	m.PriorityClassName = types.StringValue(got.PriorityClassName)
	m.ReportFormat = types.StringValue(string(got.ReportFormat))
	m.setLiveResources(got.Resources)
	return diags
}

// liveDuration keeps the configured spelling of a duration the DaemonSet
// holds in Go's form, and reports any other value.
func liveDuration(prior types.String, live time.Duration) types.String {
	if d, err := time.ParseDuration(prior.ValueString()); err == nil && !prior.IsNull() && !prior.IsUnknown() && d == live {
		return prior
	}
	return types.StringValue(live.String())
}

func sameStrings(a, b []string) bool {
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func normalizeMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func sameTolerations(a, b []corev1.Toleration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchToleration(&b[i]) || !reflect.DeepEqual(a[i].TolerationSeconds, b[i].TolerationSeconds) {
			return false
		}
	}
	return true
}

func (r *reporterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan reporterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultReporterTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.write(ctx, &plan, timeout, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

// write applies the plan. It reports whether anything may have been
// written, i.e. whether the state must record the installation.
func (r *reporterResource) write(ctx context.Context, plan *reporterModel, timeout time.Duration, diags *diag.Diagnostics) bool {
	cl, ok := r.clients.installClients(diags)
	if !ok {
		return false
	}
	plan.enforce(ctx, cl, "reporter", diags)
	c, d := plan.config(ctx)
	if diags.Append(d...); diags.HasError() {
		return false
	}
	if !checkTarget(ctx, cl, c.Target, path.Root("target"), diags) {
		return false
	}
	if c.Monitoring != nil && !monitoringAvailable(ctx, cl, diags) {
		c.Monitoring = nil // nothing to write it to; the next refresh sees it missing once it can be
	}
	plan.setNames()
	plan.ObjectsInSync = types.BoolValue(true)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := reporterinstall.Apply(wctx, cl, c); err != nil {
		// A foreign CRD or target object is install_crd's to fix.
		foreignAttr := func(f *install.ForeignError) path.Path {
			if f.ID.Kind == install.CustomResourceDefinitions || f.ID.Name == c.Target.Name && f.ID.Kind.GVR == c.Target.GVR() {
				return path.Root("install_crd")
			}
			return path.Root("name")
		}
		return reporterMode.applyFailed(diags, r.clients, err, foreignAttr, &plan.ObjectsInSync)
	}
	if plan.WaitForRollout.ValueBool() {
		reporterMode.waitForRollout(wctx, timeout, diags, func(ctx context.Context, progress func(string)) error {
			return reporterinstall.WaitForRollout(ctx, cl, c.Namespace, c.Name, progress)
		})
	}
	if !c.InstallCRD {
		if _, err := kmshealth.GetTarget(ctx, cl.Dynamic, c.Target); apierrors.IsNotFound(err) {
			diags.AddAttributeWarning(path.Root("target"), "Target not found",
				fmt.Sprintf("%s does not exist (or its resource type is not served), so the reporters cannot write their conditions until it does. "+
					"Create it, set install_crd = true to let kmshealth create a %s object, or correct target.", c.Target, kmshealth.Kind))
		}
	}
	return true
}

func (r *reporterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state reporterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultReporterTimeout)
	resp.Diagnostics.Append(diags...)
	target, err := kmshealth.ParseTarget(state.Target.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("target"), "Invalid target in state", err.Error())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	cl, ok := r.clients.installClients(&resp.Diagnostics)
	if !ok {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deleted, err := reporterinstall.Delete(dctx, cl, state.Namespace.ValueString(), state.Name.ValueString(), target, state.InstallCRD.ValueBool())
	if err != nil {
		r.clients.addAPIError(&resp.Diagnostics, apiRequest{Summary: "Cannot uninstall the reporter", Verb: "delete"}, err)
		return
	}
	for _, k := range deleted.Kept {
		resp.Diagnostics.AddWarning("Left in place on purpose", k+".")
	}
}

func (r *reporterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importInstallation(ctx, req, resp, reporterinstall.ParseID)
}

// reporterMode names the reporter in the diagnostics of the shared glue.
var reporterMode = installedMode{name: "reporter", title: "Reporter", workload: "DaemonSet", namespaceLabel: reporterinstall.NamespaceLabel}
