package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

var (
	_ datasource.DataSourceWithConfigure        = (*kmsKeyUsageDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*kmsKeyUsageDataSource)(nil)
)

// NewKMSKeyUsageDataSource is the factory of kmshealth_kms_key_usage.
func NewKMSKeyUsageDataSource() datasource.DataSource {
	return &kmsKeyUsageDataSource{}
}

// kmsKeyUsageDataSource joins the key IDs the KMS plugins report (the
// health target) with what kube-apiserver's /metrics says it did with each
// key's hash, and judges whether an old key may be retired.
type kmsKeyUsageDataSource struct {
	clients *Clients
}

type kmsKeyUsageModel struct {
	Target             types.String    `tfsdk:"target"`
	RetireKeyID        types.String    `tfsdk:"retire_key_id"`
	Reencryption       types.String    `tfsdk:"reencryption"`
	APIServerStartedAt types.String    `tfsdk:"apiserver_started_at"`
	ActiveKeyIDHash    types.String    `tfsdk:"active_key_id_hash"`
	Keys               []keyUsageModel `tfsdk:"keys"`
	UnknownKeyIDHashes []string        `tfsdk:"unknown_key_id_hashes"`
	RetireReady        types.Bool      `tfsdk:"retire_ready"`
	RetireReason       types.String    `tfsdk:"retire_reason"`
}

type keyUsageModel struct {
	KeyID           types.String `tfsdk:"key_id"`
	KeyIDHash       types.String `tfsdk:"key_id_hash"`
	Active          types.Bool   `tfsdk:"active"`
	InUse           types.Bool   `tfsdk:"in_use"`
	FromStorage     types.Int64  `tfsdk:"from_storage"`
	ToStorage       types.Int64  `tfsdk:"to_storage"`
	LastFromStorage types.String `tfsdk:"last_from_storage"`
	LastToStorage   types.String `tfsdk:"last_to_storage"`
}

// reencryptionRefExample is the example the reencryption attribute's
// messages give.
const reencryptionRefExample = "kube-system/rotate-b"

// parseReencryptionRef splits "<namespace>/<name>" of a
// kmshealth_kms_reencryption and checks that its record ConfigMap can exist.
func parseReencryptionRef(s string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not <namespace>/<name> of a kmshealth_kms_reencryption, e.g. %s", s, reencryptionRefExample)
	}
	var msgs []string
	for _, m := range install.ValidateNamespace(namespace) {
		msgs = append(msgs, "namespace: "+m)
	}
	for _, m := range validation.IsDNS1123Subdomain(reencrypt.RecordName(name)) {
		msgs = append(msgs, fmt.Sprintf("name (its record is the ConfigMap %s): %s", reencrypt.RecordName(name), m))
	}
	if len(msgs) > 0 {
		return "", "", fmt.Errorf("%q: %s", s, strings.Join(msgs, "; "))
	}
	return namespace, name, nil
}

var (
	reencryptionRef = checkedString{"Invalid reencryption", "must be <namespace>/<name> of a kmshealth_kms_reencryption, e.g. " + reencryptionRefExample,
		func(s string) error { _, _, err := parseReencryptionRef(s); return err }}
	retireKeyID = checkedString{"Invalid retire_key_id", "must be a KMS v2 key ID: 1 to 1024 bytes",
		func(s string) error { _, err := kmshealth.KeyIDHash(s); return err }}
)

func (d *kmsKeyUsageDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_kms_key_usage"
}

func (d *kmsKeyUsageDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Says, per KMS v2 key encryption key the plugins report, whether kube-apiserver still reads " +
			"stored objects with it, and with `retire_key_id` whether that old key may be destroyed (`retire_ready`): the " +
			"last step of a key rotation, after `kmshealth_kms_plugin_health` gated it and `kmshealth_kms_reencryption` " +
			"re-encrypted everything under the new key.\n\n" +
			"It joins the key IDs (`kekID`s) of the reports on `target` with kube-apiserver's `/metrics` " +
			"(`" + kmshealth.MetricKeyIDHashTotal + "` and `" + kmshealth.MetricKeyIDHashLastTimestamp + "`, whose " +
			"`key_id_hash` label is `provider::kmshealth::kms_key_id_hash` of the key ID). Those counters count since " +
			"kube-apiserver started, and at its start its watch caches read, and decrypt, every stored object of each " +
			"cached resource. So an old key is proven unused only by a kube-apiserver that **started after** the " +
			"re-encryption run finished and has decrypted **nothing** with the old key since.\n\n" +
			"The provider talks to one kube-apiserver (behind a load balancer, to whichever answers): with several, " +
			"every one must show `retire_ready` before the key is destroyed. Read this data source once per " +
			"kube-apiserver, with a provider alias whose `host` is that instance's address.\n\n" +
			"Needs `get` on the non-resource URL `/metrics` (a ClusterRole rule `nonResourceURLs: [\"/metrics\"]`, " +
			"`verbs: [\"get\"]`), `get` on the target object and, with `reencryption`, `get` on ConfigMaps in its namespace.",
		Attributes: map[string]schema.Attribute{
			"target": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The object the KMS health reports are on, as in `kmshealth_kms_plugin_health`: its plugins' " +
					"`kekID`s are the keys listed in `keys`. Default `" + kmshealth.DefaultTarget().String() + "`.",
				Validators: []validator.String{healthTarget{}},
			},
			"retire_key_id": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The old key ID (a plugin's Status `key_id`, the `kekID` of the reports) to judge " +
					"`retire_ready` for. Needs `reencryption`.",
				Validators: []validator.String{retireKeyID},
			},
			"reencryption": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The `kmshealth_kms_reencryption` that re-encrypted under the new key, as " +
					"`<namespace>/<name>` (e.g. `" + reencryptionRefExample + "`); its run is read from the ConfigMap " +
					"`kmshealth-reencryption-<name>` in that namespace. Needs `retire_key_id`.",
				Validators: []validator.String{reencryptionRef},
			},
			"apiserver_started_at": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "RFC 3339 start time of the kube-apiserver that answered (`process_start_time_seconds`): " +
					"every count below is since then.",
			},
			"active_key_id_hash": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The `key_id_hash` kube-apiserver writes new objects with: the key its writing " +
					"provider's Status returned last. Empty when its metrics do not tell (no Status since it started).",
			},
			"keys": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Every key ID the plugins report on `target`, plus `retire_key_id` and the " +
					"re-encryption run's key, ordered by key ID.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key_id":      schema.StringAttribute{Computed: true, MarkdownDescription: "The key ID."},
					"key_id_hash": schema.StringAttribute{Computed: true, MarkdownDescription: "`sha256:` and the hex SHA-256 of the key ID: its `key_id_hash` label."},
					"active":      schema.BoolAttribute{Computed: true, MarkdownDescription: "kube-apiserver writes with this key (`active_key_id_hash`)."},
					"in_use": schema.BoolAttribute{
						Computed:            true,
						MarkdownDescription: "kube-apiserver decrypted at least one stored object with this key since it started.",
					},
					"from_storage": schema.Int64Attribute{Computed: true, MarkdownDescription: "Objects read from etcd and decrypted with this key since kube-apiserver started."},
					"to_storage":   schema.Int64Attribute{Computed: true, MarkdownDescription: "Objects encrypted with this key and written since kube-apiserver started."},
					"last_from_storage": schema.StringAttribute{
						Computed: true, MarkdownDescription: "RFC 3339 time of the last read with this key; null when none.",
					},
					"last_to_storage": schema.StringAttribute{
						Computed: true, MarkdownDescription: "RFC 3339 time of the last write with this key; null when none.",
					},
				}},
			},
			"unknown_key_id_hashes": schema.ListAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "Key hashes kube-apiserver used since it started that match none of `keys`: objects stored " +
					"under a key no plugin reports any more (destroyed, or a plugin not reported on `target`). Such objects " +
					"cannot be read once their key is gone.",
			},
			"retire_ready": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "`retire_key_id` may be destroyed as far as this kube-apiserver can prove: the " +
					"`reencryption` run finished, under a key other than `retire_key_id` that kube-apiserver now writes " +
					"with; kube-apiserver started after the run finished (at least two seconds after its recorded " +
					"`finished_at`: that keeps whole seconds, and the process start time may read up to a second early), its watch cache finished reading every resource of the run, " +
					"and it decrypted nothing with `retire_key_id` since it started. `false` without `retire_key_id`.",
			},
			"retire_reason": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Why `retire_ready` is what it is, as a sentence that says what to do next (e.g. restart " +
					"kube-apiserver, re-encrypt again). Handy in a precondition's `error_message`.",
			},
		},
	}
}

func (d *kmsKeyUsageDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.RequiredTogether(path.MatchRoot("retire_key_id"), path.MatchRoot("reencryption")),
	}
}

func (d *kmsKeyUsageDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.clients = configure(req.ProviderData, &resp.Diagnostics)
}

func (d *kmsKeyUsageDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m kmsKeyUsageModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Target.IsNull() {
		m.Target = types.StringValue(kmshealth.DefaultTarget().String())
	}
	target, err := kmshealth.ParseTarget(m.Target.ValueString())
	if err != nil { // the validator has checked it
		resp.Diagnostics.AddAttributeError(path.Root("target"), "Invalid target", err.Error())
		return
	}
	if d.clients != nil && !d.clients.Known() {
		resp.Diagnostics.AddError("Cannot read KMS key usage yet",
			"The kmshealth provider configuration depends on values not known until apply (e.g. a cluster created in this run), "+
				"and this data source reads the cluster during the plan. Add a depends_on on the resources that create the cluster, "+
				"so that it is read during the apply, or apply them first.")
		return
	}
	core, dyn, ok := d.clients.coreAndDynamic(&resp.Diagnostics)
	if !ok {
		return
	}

	obs, err := kmshealth.Observe(ctx, dyn, kmshealth.Query{Target: target, MaxStaleness: defaultMaxStaleness, Now: time.Now})
	if err != nil {
		(&kmsPluginHealthDataSource{clients: d.clients}).addReadError(&resp.Diagnostics, target, 0, err)
		return
	}
	body, err := core.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		d.addMetricsError(&resp.Diagnostics, err)
		return
	}
	usage, err := kmshealth.ParseKeyUsage(body)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read kube-apiserver /metrics", err.Error())
		return
	}

	var run *kmshealth.ReencryptionRun
	if !m.Reencryption.IsNull() {
		ns, name, err := parseReencryptionRef(m.Reencryption.ValueString())
		if err != nil { // the validator has checked it
			resp.Diagnostics.AddAttributeError(path.Root("reencryption"), "Invalid reencryption", err.Error())
			return
		}
		rec, err := reencrypt.ReadRecord(ctx, core, ns, name)
		if err != nil {
			d.clients.addAPIError(&resp.Diagnostics, apiRequest{
				Summary: "Cannot read the re-encryption run", Verb: "get", Kind: "ConfigMap", Resource: "configmaps",
				Namespace: ns, Name: reencrypt.RecordName(name), Attribute: path.Root("reencryption"),
				Hint: "The provider's credentials need get on ConfigMaps in " + ns + ".",
			}, err)
			return
		}
		run = reencryptionRun(m.Reencryption.ValueString(), rec)
	}

	keyIDs := reportedKEKIDs(obs.Health)
	if !m.RetireKeyID.IsNull() {
		keyIDs = append(keyIDs, m.RetireKeyID.ValueString())
	}
	if run != nil && run.KeyID != "" {
		keyIDs = append(keyIDs, run.KeyID)
	}
	m.setUsage(usage, keyIDs)

	m.RetireReady = types.BoolValue(false)
	m.RetireReason = types.StringValue("retire_key_id is not set: set it, with reencryption, to judge whether that key may be retired")
	if !m.RetireKeyID.IsNull() {
		v, err := kmshealth.JudgeRetire(usage, m.RetireKeyID.ValueString(), run)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("retire_key_id"), "Cannot judge the key to retire", err.Error())
			return
		}
		m.RetireReady = types.BoolValue(v.Ready)
		m.RetireReason = types.StringValue(v.Reason)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// reencryptionRun is what the retire judgement needs of a run record; a
// record without a run (nil) is no run.
func reencryptionRun(ref string, rec *reencrypt.Record) *kmshealth.ReencryptionRun {
	if rec == nil {
		return nil
	}
	run := &kmshealth.ReencryptionRun{Name: ref, KeyID: rec.KeyID, Resources: rec.Resources}
	if rec.Complete() {
		run.FinishedAt = rec.FinishedAt.Time
	}
	return run
}

// reportedKEKIDs are the key IDs any node's plugins report, sorted.
func reportedKEKIDs(h kmshealth.Health) []string {
	var ids []string
	for _, n := range h.Nodes {
		for _, p := range n.Plugins {
			if p.KEKID != "" {
				ids = append(ids, p.KEKID)
			}
		}
	}
	return ids
}

// setUsage fills the usage attributes: one entry per key ID (deduplicated,
// sorted), and the hashes that match none.
func (m *kmsKeyUsageModel) setUsage(u kmshealth.APIServerKeyUsage, keyIDs []string) {
	slices.Sort(keyIDs)
	keyIDs = slices.Compact(keyIDs)
	active, _ := u.ActiveKeyHash()
	m.APIServerStartedAt = rfc3339OrNull(u.StartedAt)
	m.ActiveKeyIDHash = types.StringValue(active)
	m.Keys = make([]keyUsageModel, 0, len(keyIDs))
	known := map[string]bool{}
	for _, id := range keyIDs {
		h, err := kmshealth.KeyIDHash(id)
		if err != nil {
			continue // reports and the validators only let valid key IDs through
		}
		known[h] = true
		k := u.Keys[h]
		if k == nil {
			k = &kmshealth.KeyHashUsage{Hash: h}
		}
		m.Keys = append(m.Keys, keyUsageModel{
			KeyID:           types.StringValue(id),
			KeyIDHash:       types.StringValue(h),
			Active:          types.BoolValue(h == active),
			InUse:           types.BoolValue(k.FromStorage > 0),
			FromStorage:     types.Int64Value(int64(k.FromStorage)),
			ToStorage:       types.Int64Value(int64(k.ToStorage)),
			LastFromStorage: rfc3339OrNull(k.LastFromStorage),
			LastToStorage:   rfc3339OrNull(k.LastToStorage),
		})
	}
	m.UnknownKeyIDHashes = []string{}
	for h, k := range u.Keys {
		if !known[h] && (k.FromStorage > 0 || k.ToStorage > 0) {
			m.UnknownKeyIDHashes = append(m.UnknownKeyIDHashes, h)
		}
	}
	slices.Sort(m.UnknownKeyIDHashes)
}

// addMetricsError reports a failed GET /metrics; a 403 says which rule
// the credentials lack.
func (d *kmsKeyUsageDataSource) addMetricsError(diags *diag.Diagnostics, err error) {
	if apierrors.IsForbidden(err) {
		diags.AddError("Cannot read kube-apiserver /metrics: forbidden",
			fmt.Sprintf("%v\n\nThe provider's credentials need get on the non-resource URL /metrics: a ClusterRole with the rule "+
				"{nonResourceURLs: [\"/metrics\"], verbs: [\"get\"]}, bound to them (e.g. by a ClusterRoleBinding). "+
				"kube-apiserver's metrics are where it counts each KMS key's use; nothing else says whether a key is still needed.", err))
		return
	}
	d.clients.addAPIError(diags, apiRequest{Summary: "Cannot read kube-apiserver /metrics", Verb: "get"}, err)
}
