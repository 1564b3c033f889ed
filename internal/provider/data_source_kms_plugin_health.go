package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

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
			"`KMSHealthReporter_<node>` condition per node, see `kmshealth_reporter`) and judges it: is every node fresh and " +
			"every plugin healthy, and do all nodes report the same key encryption key (`kekID`) for each `keyID`? " +
			"Use `rotation_ready` in a `lifecycle.precondition` of whatever rotates the key, or set `require_healthy = true` " +
			"to fail the plan at this data source, naming each failing node and plugin. The data source is read during the " +
			"plan, so a plan that rotates a key stops before anything changes.\n\n" +
			"Needs `get` on the target object, and with `wait_timeout` also `list` and `watch` on its resource.",
		Attributes: map[string]schema.Attribute{
			"target": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The cluster-scoped object whose `status.conditions` carry the reports, as " +
					"`group/version/resource/name`. Default `" + kmshealth.DefaultTarget().String() + "`: the `KMSHealth` object " +
					"that `kmshealth_reporter` installs. Any other object with `metav1.Condition` conditions works too (e.g. an " +
					"operator's custom resource), when the reporters write there (their `--target` flag). A missing object is an " +
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
	obs, err := observeHealth(ctx, dyn, q, d.now)
	if err != nil {
		addHealthReadError(&resp.Diagnostics, q.target, err)
		return
	}
	h := obs.health
	if q.requireHealthy && !h.RotationReady {
		resp.Diagnostics.AddAttributeError(path.Root("require_healthy"), "KMS plugins are not ready for key rotation", healthNotReadyDetail(q, obs))
		return
	}
	if obs.timedOut {
		resp.Diagnostics.AddWarning("KMS plugins still not ready for key rotation", healthNotReadyDetail(q, obs))
	}
	m.setHealth(h)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// healthNotReadyDetail lists the problems one per line and what to do.
func healthNotReadyDetail(q healthQuery, obs healthObservation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Target %s", q.target)
	if obs.timedOut {
		fmt.Fprintf(&b, ", after waiting %s (wait_timeout)", q.wait)
	}
	b.WriteString(":\n")
	for _, p := range obs.health.Problems {
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

// healthTargetMissingError says the target object, or its resource, does not exist.
type healthTargetMissingError struct {
	target         kmshealth.Target
	resourceServed bool
	waited         time.Duration
}

func (e *healthTargetMissingError) Error() string {
	t := e.target
	var what string
	if e.resourceServed {
		what = fmt.Sprintf("%s %q (target %s) does not exist", t.Resource, t.Name, t)
		if e.waited > 0 {
			what += fmt.Sprintf(", also after waiting %s (wait_timeout)", e.waited)
		}
	} else {
		what = fmt.Sprintf("the API server serves no resource %q in %s (target %s)", t.Resource, t.GVR().GroupVersion(), t)
	}
	if t.IsDefault() {
		return what + ". Install the KMS health reporter with a kmshealth_reporter resource: it installs the KMSHealth CRD and the \"" +
			kmshealth.DefaultObject + "\" object, and its reporters write there. If your reporters write elsewhere, set target to that object."
	}
	return what + ". Set target to the object the reporters write their conditions to (their --target flag), or leave it unset for the KMSHealth object " +
		"that kmshealth_reporter installs."
}

func addHealthReadError(diags *diag.Diagnostics, t kmshealth.Target, err error) {
	var missing *healthTargetMissingError
	switch {
	case errors.As(err, &missing):
		diags.AddAttributeError(path.Root("target"), "KMS health target not found", err.Error())
	case apierrors.IsForbidden(err):
		diags.AddError("Cannot read the KMS health target", fmt.Sprintf("%v\n\nThe provider's credentials need get (and, with wait_timeout, list and watch) on %s.",
			err, t.GVR().GroupResource()))
	default:
		diags.AddError("Cannot read the KMS health target", err.Error())
	}
}

// healthObservation is the judged health and how it was reached.
type healthObservation struct {
	health   kmshealth.Health
	timedOut bool // wait_timeout ran out before rotation_ready
}

// observeHealth reads and judges the target; when it is not rotation ready and
// q.wait allows, it watches the target and judges every change until it
// is ready or the time is up. Time alone never makes a cluster ready (a
// report only turns stale), so only watch events can end the wait early;
// when it runs out, the last object seen is judged once more at that time.
func observeHealth(ctx context.Context, dyn dynamic.Interface, q healthQuery, now func() time.Time) (healthObservation, error) {
	judge := func(obj *unstructured.Unstructured) kmshealth.Health {
		return kmshealth.Evaluate(kmshealth.Conditions(obj), kmshealth.EvalOptions{Now: now(), MaxStaleness: q.maxStaleness, ExpectedNodes: q.expectedNodes})
	}
	obj, err := kmshealth.GetTarget(ctx, dyn, q.target)
	switch {
	case apierrors.IsNotFound(err):
		served, lerr := healthResourceServed(ctx, dyn, q.target)
		if lerr != nil {
			return healthObservation{}, lerr
		}
		if !served || q.wait == 0 {
			return healthObservation{}, &healthTargetMissingError{target: q.target, resourceServed: served}
		}
		obj = nil
	case err != nil:
		return healthObservation{}, err
	default:
		if h := judge(obj); h.RotationReady || q.wait == 0 {
			return healthObservation{health: h}, nil
		}
	}

	start := now()
	tflog.Info(ctx, "KMS plugins not ready for key rotation; watching the target", map[string]any{
		"target": q.target.String(), "wait_timeout": q.wait.String(),
	})
	wctx, cancel := context.WithTimeout(ctx, q.wait)
	defer cancel()
	last := obj
	var lastProblems []string
	ready := func(ev watch.Event) (bool, error) {
		o, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted {
			last = nil
			tflog.Info(ctx, "KMS health target deleted; waiting for it to appear", map[string]any{"target": q.target.String()})
			return false, nil
		}
		last = o
		h := judge(o)
		if h.RotationReady {
			return true, nil
		}
		if !slices.Equal(h.Problems, lastProblems) {
			lastProblems = h.Problems
			tflog.Info(ctx, "KMS plugins not ready for key rotation yet", map[string]any{
				"target": q.target.String(), "problems": strings.Join(h.Problems, "; "),
				"waited": now().Sub(start).Truncate(time.Millisecond).String(),
			})
		}
		return false, nil
	}
	lw := &healthTargetListWatch{ri: dyn.Resource(q.target.GVR()), selector: healthNameSelector(q.target)}
	_, err = watchtools.UntilWithSync(wctx, lw.listWatch(), &unstructured.Unstructured{}, nil, ready)
	if ctx.Err() != nil {
		return healthObservation{}, ctx.Err()
	}
	if err != nil && !lw.served() {
		// The informer only logs and retries a failed list or watch (e.g.
		// no RBAC for them): report why nothing could be watched.
		return healthObservation{}, fmt.Errorf("watch target %s for %s (wait_timeout): %w", q.target, q.wait, lw.err())
	}
	timedOut := err != nil
	if timedOut {
		tflog.Info(ctx, "KMS plugins not ready when wait_timeout ran out", map[string]any{"target": q.target.String(), "wait_timeout": q.wait.String()})
	} else {
		tflog.Info(ctx, "KMS plugins ready for key rotation", map[string]any{
			"target": q.target.String(), "waited": now().Sub(start).Truncate(time.Millisecond).String(),
		})
	}
	if last == nil {
		return healthObservation{}, &healthTargetMissingError{target: q.target, resourceServed: true, waited: q.wait}
	}
	return healthObservation{health: judge(last), timedOut: timedOut}, nil
}

// healthResourceServed tells a missing object from a missing resource (e.g. the
// CRD is not installed): both make a get NotFound, only the latter a list.
func healthResourceServed(ctx context.Context, dyn dynamic.Interface, t kmshealth.Target) (bool, error) {
	_, err := dyn.Resource(t.GVR()).List(ctx, metav1.ListOptions{Limit: 1, FieldSelector: healthNameSelector(t)})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("list %s for target %s: %w", t.GVR().GroupResource(), t, err)
	}
	return true, nil
}

func healthNameSelector(t kmshealth.Target) string {
	return fields.OneTermEqualSelector("metadata.name", t.Name).String()
}

// healthTargetListWatch lists and watches the target object alone, and
// remembers whether a list or watch (which the informer may use to list)
// ever succeeded, and the last error.
type healthTargetListWatch struct {
	ri       dynamic.ResourceInterface
	selector string

	mu      sync.Mutex
	ok      bool
	lastErr error
}

func (w *healthTargetListWatch) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = w.selector
			list, err := w.ri.List(ctx, o)
			w.record(err == nil, err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = w.selector
			wi, err := w.ri.Watch(ctx, o)
			w.record(err == nil, err)
			return wi, err
		},
	}
}

func (w *healthTargetListWatch) record(ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ok = w.ok || ok
	if err != nil {
		w.lastErr = err
	}
}

func (w *healthTargetListWatch) served() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ok
}

func (w *healthTargetListWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastErr == nil {
		return errors.New("no list or watch completed in time")
	}
	return w.lastErr
}

// Plan-time validators of this data source.
var healthNodeName = kubeName{"a node name (RFC 1123 subdomain)", validation.IsDNS1123Subdomain}

// healthTarget validates a group/version/resource/name target.
type healthTarget struct{}

func (healthTarget) Description(context.Context) string {
	return "must be group/version/resource/name of a cluster-scoped object, e.g. " + kmshealth.DefaultTarget().String()
}

func (v healthTarget) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (healthTarget) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := kmshealth.ParseTarget(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid target",
			fmt.Sprintf("%s: %v. Name the cluster-scoped object whose status.conditions the reporters write, or leave it unset for %s.",
				req.Path, err, kmshealth.DefaultTarget()))
	}
}
