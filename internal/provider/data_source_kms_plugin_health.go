package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

var (
	_ datasource.DataSourceWithConfigure = (*kmsPluginHealthDataSource)(nil)
)

// defaultMaxStaleness is how old a node's report may be by default: four
// reporter intervals, the aggregator's rule.
const defaultMaxStaleness = kmshealth.StalenessFactor * kmshealth.DefaultInterval

// NewKMSPluginHealthDataSource is the factory of kmshealth_kms_plugin_health.
func NewKMSPluginHealthDataSource() datasource.DataSource {
	return &kmsPluginHealthDataSource{now: time.Now}
}

type kmsPluginHealthDataSource struct {
	clients *Clients
	now     func() time.Time
}

type kmsPluginHealthModel struct {
	Target         types.String      `tfsdk:"target"`
	MaxStaleness   types.String      `tfsdk:"max_staleness"`
	ExpectedNodes  types.Set         `tfsdk:"expected_nodes"`
	RequireHealthy types.Bool        `tfsdk:"require_healthy"`
	WaitTimeout    types.String      `tfsdk:"wait_timeout"`
	Healthy        types.Bool        `tfsdk:"healthy"`
	RotationReady  types.Bool        `tfsdk:"rotation_ready"`
	DegradedReason types.String      `tfsdk:"degraded_reason"`
	ReportFormat   types.String      `tfsdk:"report_format"`
	ActiveKEKIDs   map[string]string `tfsdk:"active_kek_ids"`
	Problems       []string          `tfsdk:"problems"`
	Nodes          []healthNodeModel `tfsdk:"nodes"`
}

type healthNodeModel struct {
	Name        types.String        `tfsdk:"name"`
	Status      types.String        `tfsdk:"status"`
	Stale       types.Bool          `tfsdk:"stale"`
	LastChecked types.String        `tfsdk:"last_checked"`
	Problem     types.String        `tfsdk:"problem"`
	Plugins     []healthPluginModel `tfsdk:"plugins"`
}

type healthPluginModel struct {
	KeyID       types.String `tfsdk:"key_id"`
	KEKID       types.String `tfsdk:"kek_id"`
	Status      types.String `tfsdk:"status"`
	LastChecked types.String `tfsdk:"last_checked"`
	Detail      types.String `tfsdk:"detail"`
}

// healthQuery is what the configuration asks for, defaults applied.
type healthQuery struct {
	target         kmshealth.Target
	maxStaleness   time.Duration
	expectedNodes  []string // nil: every node that has reported
	requireHealthy bool
	wait           time.Duration
}

// query applies the defaults to the arguments (so the state shows them)
// and parses them; the validators have already checked them.
func (m *kmsPluginHealthModel) query(ctx context.Context) (healthQuery, diag.Diagnostics) {
	var q healthQuery
	var diags diag.Diagnostics
	if m.Target.IsNull() {
		m.Target = types.StringValue(kmshealth.DefaultTarget().String())
	}
	if m.MaxStaleness.IsNull() {
		m.MaxStaleness = types.StringValue(defaultMaxStaleness.String())
	}
	if m.RequireHealthy.IsNull() {
		m.RequireHealthy = types.BoolValue(false)
	}
	if m.WaitTimeout.IsNull() {
		m.WaitTimeout = types.StringValue("0s")
	}
	var err error
	if q.target, err = kmshealth.ParseTarget(m.Target.ValueString()); err != nil {
		diags.AddAttributeError(path.Root("target"), "Invalid target", err.Error())
	}
	if q.maxStaleness, err = time.ParseDuration(m.MaxStaleness.ValueString()); err != nil {
		diags.AddAttributeError(path.Root("max_staleness"), "Invalid duration", err.Error())
	}
	if q.wait, err = time.ParseDuration(m.WaitTimeout.ValueString()); err != nil {
		diags.AddAttributeError(path.Root("wait_timeout"), "Invalid duration", err.Error())
	}
	if !m.ExpectedNodes.IsNull() {
		diags.Append(m.ExpectedNodes.ElementsAs(ctx, &q.expectedNodes, false)...)
	}
	q.requireHealthy = m.RequireHealthy.ValueBool()
	return q, diags
}

// setHealth fills the computed attributes from a judgement.
func (m *kmsPluginHealthModel) setHealth(h kmshealth.Health) {
	m.Healthy = types.BoolValue(h.Healthy)
	m.RotationReady = types.BoolValue(h.RotationReady)
	m.DegradedReason = types.StringValue(h.DegradedReason)
	m.ActiveKEKIDs = h.ActiveKEKIDs
	if m.ActiveKEKIDs == nil {
		m.ActiveKEKIDs = map[string]string{}
	}
	m.Problems = append([]string{}, h.Problems...)
	m.Nodes = make([]healthNodeModel, 0, len(h.Nodes))
	for _, n := range h.Nodes {
		node := healthNodeModel{
			Name:        types.StringValue(n.Name),
			Status:      types.StringValue(string(n.State)),
			Stale:       types.BoolValue(n.Stale),
			LastChecked: rfc3339OrNull(n.LastChecked),
			Problem:     types.StringValue(n.Problem),
			Plugins:     make([]healthPluginModel, 0, len(n.Plugins)),
		}
		for _, p := range n.Plugins {
			node.Plugins = append(node.Plugins, healthPluginModel{
				KeyID:       types.StringValue(p.KeyID),
				KEKID:       types.StringValue(p.KEKID),
				Status:      types.StringValue(string(p.Status)),
				LastChecked: rfc3339OrNull(p.LastChecked),
				Detail:      types.StringValue(p.Detail),
			})
		}
		m.Nodes = append(m.Nodes, node)
	}
}

// rfc3339OrNull is t in RFC 3339 (UTC), or null for the zero time.
func rfc3339OrNull(t time.Time) types.String {
	if t.IsZero() {
		return types.StringNull()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

func (d *kmsPluginHealthDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_kms_plugin_health"
}

func (d *kmsPluginHealthDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	nodeStates := "`healthy`, `stale`, `error` (a plugin's Status RPC failed, or no plugin socket was found), `unhealthy`, " +
		"`invalid` (a report that does not follow the wire format) or `missing` (an `expected_nodes` entry with no report)"
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the KMS v2 plugin health that the reporter on every control-plane node writes (one " +
			"`KMSHealthReporter_<node>` condition per node, see `kmshealth_reporter`), or OpenShift's typed " +
			"`healthReports` (see `report_format`), and judges it: is every node fresh and " +
			"every plugin healthy, and do all nodes report the same key encryption key (`kekID`) for each `keyID`? " +
			"Use `rotation_ready` in a `lifecycle.precondition` of whatever rotates the key, or set `require_healthy = true` " +
			"to fail the plan at this data source, naming each failing node and plugin. The data source is read during the " +
			"plan, so a plan that rotates a key stops before anything changes.\n\n" +
			"Needs `get` on the target object, and with `wait_timeout` also `list` and `watch` on its resource.",
		Attributes: map[string]schema.Attribute{
			"target": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The cluster-scoped object that carries the reports (in `status.conditions`, or OpenShift's typed " +
					"`status.encryptionStatus.healthReports`; see `report_format`), as " +
					"`group/version/resource/name`. Default `" + kmshealth.DefaultTarget().String() + "`: the `KMSHealth` object " +
					"that `kmshealth_reporter` installs. Any other object with `metav1.Condition` conditions works too (e.g. an " +
					"operator's custom resource, or `operator.openshift.io/v1/kubeapiservers/cluster` where OpenShift's reporters " +
					"write typed reports), when the reporters write there (their `--target` flag). A missing object is an " +
					"error, unless it appears within `wait_timeout`.",
				Validators: []validator.String{healthTarget{}},
			},
			"max_staleness": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "How old a node's report (its oldest plugin check) may be before the node counts as " +
					"`stale`, as a Go duration such as `90s` or `5m`. Default `" + defaultMaxStaleness.String() + "`: four times the " +
					"reporter's default 30 s interval. With another reporter interval, use four times that.",
				Validators: []validator.String{goDuration{}},
			},
			"expected_nodes": schema.SetAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Node names that must have reported, e.g. every control-plane node. A node in this set " +
					"without a report is `missing`, and reports of nodes not in it are ignored. Default: every node that has " +
					"reported, so a node whose reporter never started goes unnoticed unless it is listed here.",
				Validators: []validator.Set{
					setvalidator.SizeAtLeast(1),
					setvalidator.ValueStringsAre(healthNodeName),
				},
			},
			"require_healthy": schema.BoolAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Fail with an error diagnostic, naming each failing node and plugin and each `keyID` " +
					"the nodes disagree on, unless `rotation_ready` is true: unhealthy, stale, missing **or inconsistent** nodes " +
					"all fail. Everything that depends on this data source then stops at the plan. Default `false`: the data " +
					"source only reports.",
			},
			"wait_timeout": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "When the cluster is not `rotation_ready`, watch the target for up to this long (a Go " +
					"duration such as `5m`) and re-judge on every change, returning as soon as it is ready; progress is " +
					"logged (`TF_LOG=INFO`). The target object may also appear meanwhile. When time runs out, the last state " +
					"is reported (an error with `require_healthy`, otherwise a warning). Default `0s`: no wait.",
				Validators: []validator.String{goDuration{zeroMeans: "no wait"}},
			},
			"healthy": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "At least one node reported, every node in `expected_nodes` reported, and every node's " +
					"report is fresh with all its plugins healthy.",
			},
			"rotation_ready": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "`healthy`, and every node reports the same `keyID`s with the same `kekID` for each: " +
					"safe to rotate the key encryption key. What `require_healthy` checks.",
			},
			"report_format": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Which report format the target carried: `" + string(kmshealth.FormatConditions) + "` (ours, " +
					"one `KMSHealthReporter_<node>` condition per node in `status.conditions`), `" + string(kmshealth.FormatOpenShiftTyped) +
					"` (OpenShift's `status.encryptionStatus.healthReports`, one entry per node and plugin, as the KMS health " +
					"reporter of openshift/library-go writes on `operator.openshift.io/v1` `kubeapiservers/cluster`), `" +
					string(kmshealth.FormatMixed) + "` (both; a node reported in both is `invalid`: run one reporter per node) or `" +
					string(kmshealth.FormatNone) + "` (no report at all: is a reporter writing to this `target`, with the " +
					"`--report-format` the target's schema has?). Both formats are judged by the same rules.",
			},
			"degraded_reason": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Why the cluster is not `healthy`, by its worst node: `" + strings.Join([]string{
					kmshealth.ReasonStale, kmshealth.ReasonError, kmshealth.ReasonUnhealthy, kmshealth.ReasonInvalid, kmshealth.ReasonMissing,
				}, "`, `") + "` (the reasons of the aggregator's `" + kmshealth.DegradedCondition + "` condition). Empty when `healthy`.",
			},
			"active_kek_ids": schema.MapAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "`keyID` → `kekID` for each `keyID` on which every node reports one and the same " +
					"`kekID`; a `keyID` the nodes disagree on is left out.",
			},
			"problems": schema.ListAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "One line per failing node (with its failing plugins) and per `keyID` the nodes disagree " +
					"on; empty when `rotation_ready`. Handy in a precondition's `error_message`.",
			},
			"nodes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Each judged node, ordered by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":   schema.StringAttribute{Computed: true, MarkdownDescription: "Node name."},
					"status": schema.StringAttribute{Computed: true, MarkdownDescription: "The node's verdict: " + nodeStates + "."},
					"stale": schema.BoolAttribute{
						Computed:            true,
						MarkdownDescription: "The report is older than `max_staleness` (the reporter stopped, or cannot reach the API server).",
					},
					"last_checked": schema.StringAttribute{
						Computed:            true,
						MarkdownDescription: "RFC 3339 time of the node's oldest plugin check; null when it has no report.",
					},
					"problem": schema.StringAttribute{Computed: true, MarkdownDescription: "Why the node is not healthy; empty when it is."},
					"plugins": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "The node's KMS v2 plugins as its reporter probed them, ordered by `key_id`.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key_id": schema.StringAttribute{
								Computed:            true,
								MarkdownDescription: "The plugin socket's sequence number (`kms-<key_id>.sock`).",
							},
							"kek_id": schema.StringAttribute{
								Computed:            true,
								MarkdownDescription: "The `key_id` the plugin's Status RPC returned: its current key encryption key. Empty when the RPC failed.",
							},
							"status": schema.StringAttribute{
								Computed:            true,
								MarkdownDescription: "`healthy`, `unhealthy` (healthz not `ok`, not KMS v2, or a bad key id) or `error` (the RPC failed).",
							},
							"last_checked": schema.StringAttribute{Computed: true, MarkdownDescription: "RFC 3339 time of the probe."},
							"detail":       schema.StringAttribute{Computed: true, MarkdownDescription: "What was wrong; empty when healthy."},
						}},
					},
				}},
			},
		},
	}
}

func (d *kmsPluginHealthDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.clients = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *kmsPluginHealthDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m kmsPluginHealthModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	q, diags := m.query(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.clients != nil && !d.clients.Known() {
		resp.Diagnostics.AddError("Cannot read KMS plugin health yet",
			"The kmshealth provider configuration depends on values not known until apply (e.g. a cluster created in this run), "+
				"and this data source reads the cluster during the plan. Add a depends_on on the resources that create the cluster, "+
				"so that it is read during the apply, or apply them first.")
		return
	}
	dyn, err := d.clients.Dynamic()
	if err != nil {
		connectionError(&resp.Diagnostics, err)
		return
	}
	obs, err := kmshealth.Observe(ctx, dyn, kmshealth.Query{
		Target: q.target, MaxStaleness: q.maxStaleness, ExpectedNodes: q.expectedNodes, Wait: q.wait, Now: d.now,
		Progress: func(msg string, kv map[string]any) { tflog.Info(ctx, msg, kv) },
	})
	if err != nil {
		d.addReadError(&resp.Diagnostics, q.target, q.wait, err)
		return
	}
	h := obs.Health
	if q.requireHealthy && !h.RotationReady {
		resp.Diagnostics.AddAttributeError(path.Root("require_healthy"), "KMS plugins are not ready for key rotation", healthNotReadyDetail(q, obs))
		return
	}
	if obs.TimedOut {
		resp.Diagnostics.AddWarning("KMS plugins still not ready for key rotation", healthNotReadyDetail(q, obs))
	}
	m.setHealth(h)
	m.ReportFormat = types.StringValue(string(obs.Format))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// healthNotReadyDetail lists the problems one per line and what to do.
func healthNotReadyDetail(q healthQuery, obs kmshealth.Observation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Target %s", q.target)
	if obs.TimedOut {
		fmt.Fprintf(&b, ", after waiting %s (wait_timeout)", q.wait)
	}
	b.WriteString(":\n")
	for _, p := range obs.Health.Problems {
		b.WriteString("  - " + p + "\n")
	}
	b.WriteString("\nFix the failing plugins (each node's reporter logs its probes) and wait until every node reports the same kekID " +
		"for each keyID, then plan again")
	if q.wait == 0 {
		b.WriteString(", or set wait_timeout (e.g. \"5m\") to wait for it in this run")
	}
	b.WriteString(". Nothing that depends on this data source has been changed.")
	return b.String()
}

// addReadError reports why the target could not be read: a missing
// target with what to install or set, anything else by its cause.
func (d *kmsPluginHealthDataSource) addReadError(diags *diag.Diagnostics, t kmshealth.Target, wait time.Duration, err error) {
	var missing *kmshealth.TargetMissingError
	if errors.As(err, &missing) {
		what := err.Error()
		if missing.Waited > 0 {
			what += " (wait_timeout)"
		}
		if t.IsDefault() {
			what += ". Install the KMS health reporter with a kmshealth_reporter resource: it installs the KMSHealth CRD and the \"" +
				kmshealth.DefaultObject + "\" object, and its reporters write there. If your reporters write elsewhere, set target to that object."
		} else {
			what += ". Set target to the object the reporters write their conditions to (their --target flag), or leave it unset for the KMSHealth object " +
				"that kmshealth_reporter installs."
		}
		diags.AddAttributeError(path.Root("target"), "KMS health target not found", what)
		return
	}
	req := apiRequest{
		Summary: "Cannot read the KMS health target", Verb: "get",
		Group: t.Group, Resource: t.Resource, Name: t.Name, Attribute: path.Root("target"),
	}
	if apierrors.IsForbidden(err) {
		req.Hint = fmt.Sprintf("The provider's credentials need get (and, with wait_timeout, list and watch) on %s.", t.GVR().GroupResource())
		if wait > 0 {
			req.Hint += fmt.Sprintf(" This read waits (wait_timeout = %q), so it lists and watches.", wait)
		}
	}
	d.clients.addAPIError(diags, req, err)
}
