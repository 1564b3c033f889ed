package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

var (
	_ resource.ResourceWithConfigure      = (*rbacProxyResource)(nil)
	_ resource.ResourceWithValidateConfig = (*rbacProxyResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*rbacProxyResource)(nil)
	_ resource.ResourceWithImportState    = (*rbacProxyResource)(nil)
)

// NewRBACProxySidecarResource is the factory of kmshealth_rbac_proxy_sidecar.
func NewRBACProxySidecarResource() resource.Resource { return &rbacProxyResource{} }

type rbacProxyResource struct{ clients *Clients }

type rbacProxyModel struct {
	ID                 types.String             `tfsdk:"id"`
	Target             *rbacProxyTargetModel    `tfsdk:"target"`
	UpstreamPort       types.Int64              `tfsdk:"upstream_port"`
	ListenPort         types.Int64              `tfsdk:"listen_port"`
	HealthPort         types.Int64              `tfsdk:"health_port"`
	Image              types.String             `tfsdk:"image"`
	ProxyVersion       types.String             `tfsdk:"proxy_version"`
	Resources          *rbacProxyResourcesModel `tfsdk:"resources"`
	Authorization      *rbacProxyAuthzModel     `tfsdk:"authorization"`
	IgnorePaths        types.List               `tfsdk:"ignore_paths"`
	AllowPaths         types.List               `tfsdk:"allow_paths"`
	TLSSecretName      types.String             `tfsdk:"tls_secret_name"`
	TLSProfile         types.Object             `tfsdk:"tls_profile"`
	InsecureListen     types.Bool               `tfsdk:"insecure_listen"`
	ServiceName        types.String             `tfsdk:"service_name"`
	NetworkPolicy      *rbacProxyNetPolModel    `tfsdk:"network_policy"`
	WaitForRollout     types.Bool               `tfsdk:"wait_for_rollout"`
	Timeouts           timeouts.Value           `tfsdk:"timeouts"`
	ServiceAccountName types.String             `tfsdk:"service_account_name"`
	ConfigHash         types.String             `tfsdk:"config_hash"`
	Args               types.List               `tfsdk:"args"`
	PinnedSidecar      types.String             `tfsdk:"pinned_sidecar"`
	ObjectsInSync      types.Bool               `tfsdk:"objects_in_sync"`
}

type rbacProxyTargetModel struct {
	Kind      types.String `tfsdk:"kind"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
}

type rbacProxyResourcesModel struct {
	Requests types.Map `tfsdk:"requests"`
	Limits   types.Map `tfsdk:"limits"`
}

type rbacProxyAuthzModel struct {
	ResourceAttributes *rbacProxyAttributesModel `tfsdk:"resource_attributes"`
	Rewrites           *rbacProxyRewritesModel   `tfsdk:"rewrites"`
}

type rbacProxyAttributesModel struct {
	Namespace   types.String `tfsdk:"namespace"`
	APIGroup    types.String `tfsdk:"api_group"`
	APIVersion  types.String `tfsdk:"api_version"`
	Resource    types.String `tfsdk:"resource"`
	Subresource types.String `tfsdk:"subresource"`
	Name        types.String `tfsdk:"name"`
}

type rbacProxyRewritesModel struct {
	ByQueryParameter types.String `tfsdk:"by_query_parameter"`
	ByHTTPHeader     types.String `tfsdk:"by_http_header"`
}

type rbacProxyNetPolModel struct {
	Enabled               types.Bool   `tfsdk:"enabled"`
	FromNamespaceSelector types.Object `tfsdk:"from_namespace_selector"`
	FromPodSelector       types.Object `tfsdk:"from_pod_selector"`
}

type labelSelectorModel struct {
	MatchLabels      map[string]string               `tfsdk:"match_labels"`
	MatchExpressions []labelSelectorRequirementModel `tfsdk:"match_expressions"`
}

type labelSelectorRequirementModel struct {
	Key      string   `tfsdk:"key"`
	Operator string   `tfsdk:"operator"`
	Values   []string `tfsdk:"values"`
}

// tlsProfileAttrTypes is the object tls_profile takes: what a
// kmshealth_tls_profile_configmap exposes, so the whole resource can be
// passed (its other attributes are dropped by Terraform's conversion).
var tlsProfileAttrTypes = map[string]attr.Type{
	"min_tls_version": types.StringType,
	"cipher_suites":   types.ListType{ElemType: types.StringType},
}

var labelSelectorRequirementType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"key": types.StringType, "operator": types.StringType, "values": types.ListType{ElemType: types.StringType},
}}

var labelSelectorAttrTypes = map[string]attr.Type{
	"match_labels":      types.MapType{ElemType: types.StringType},
	"match_expressions": types.ListType{ElemType: labelSelectorRequirementType},
}

func (r *rbacProxyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_rbac_proxy_sidecar"
}

func labelSelectorAttribute(who, example string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Label selector of the " + who + " admitted, as in a NetworkPolicy peer: `match_labels` and/or `match_expressions` " +
			"(`key`, `operator` `In`/`NotIn`/`Exists`/`DoesNotExist`, `values`). `{}` selects all " + who + "s; leaving it out does not restrict by " + who + ".",
		Attributes: map[string]schema.Attribute{
			"match_labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Labels every selected " + who + " carries, e.g. `" + example + "`."},
			"match_expressions": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Requirements every selected " + who + " meets.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":      schema.StringAttribute{Required: true, MarkdownDescription: "Label key."},
					"operator": schema.StringAttribute{Required: true, MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`."},
					"values": schema.ListAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Values for `In` and `NotIn`; none for `Exists` and `DoesNotExist`."},
				}},
			},
		},
	}
}

func (r *rbacProxyResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	optionalString := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Puts [kube-rbac-proxy](https://github.com/brancz/kube-rbac-proxy) in front of the HTTP API of a Deployment, " +
			"StatefulSet or DaemonSet, as a native sidecar (an `initContainers` entry with `restartPolicy: Always`) that authenticates every " +
			"caller with a TokenReview and authorizes it with a SubjectAccessReview. It creates, in this order: the config ConfigMap " +
			"`kmshealth-rbac-proxy-<kind>-<name>`, a ClusterRoleBinding of the pods' ServiceAccount to `system:auth-delegator`, then the " +
			"workload change by server-side apply (field manager `" + rbacproxy.FieldManager + "`) of only its own fields: the sidecar, its " +
			"volumes and the pod-template annotation `" + rbacproxy.ConfigHashAnnotation + "` whose change rolls the pods. Optionally a port " +
			"on a Service and a NetworkPolicy. The workload's own containers and fields are never replaced; destroy releases exactly " +
			"kmshealth's fields and deletes what it created.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true,
				MarkdownDescription: "`<kind>/<namespace>/<name>` of the target, e.g. `Deployment/shop/web`; also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"upstream_port": schema.Int64Attribute{Required: true,
				MarkdownDescription: "The port in the pod the proxy fronts, proxied as `http://127.0.0.1:<upstream_port>/`. Make the workload listen on " +
					"`127.0.0.1` only: a port reachable from outside the pod bypasses the proxy."},
			"listen_port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(int64(rbacproxy.DefaultListenPort)),
				MarkdownDescription: fmt.Sprintf("The port the proxy serves on (HTTPS unless `insecure_listen`), on all of the pod's addresses. Default `%d`. "+
					"It must differ from `upstream_port`, `health_port` and every port the pod's containers declare.", rbacproxy.DefaultListenPort)},
			"health_port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(int64(rbacproxy.DefaultHealthPort)),
				MarkdownDescription: fmt.Sprintf("The port of the proxy's own unauthenticated `%s` (HTTPS, same certificate), which the sidecar's liveness "+
					"and readiness probes call. Default `%d`. Unused with `insecure_listen`.", rbacproxy.HealthPath, rbacproxy.DefaultHealthPort)},
			"image": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(rbacproxy.DefaultImage),
				MarkdownDescription: "kube-rbac-proxy image of the sidecar. Default `" + rbacproxy.DefaultImage + "`, the release kmshealth's end-to-end " +
					"tests run. Set it to pull from a mirror; pin it by digest (`name:" + rbacproxy.DefaultVersion + "@sha256:…`) so the pods cannot silently run " +
					"other code. Its tag names the release whose flags the arguments are checked against at plan time (see `proxy_version`): a release " +
					"kmshealth knows no flag set of is refused."},
			"proxy_version": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The kube-rbac-proxy release `image` is built from, e.g. `" + rbacproxy.DefaultVersion + "`, when its tag does not say it " +
					"(a digest only, or a mirror's own tags). Default: the release in the image's tag; an image whose tag names none is assumed to take " +
					"the flags of `" + rbacproxy.DefaultVersion + "`, with a warning. The sidecar's arguments must all be flags of that release, or the plan " +
					"fails naming the attribute that needs the flag."},
			"ignore_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Request paths served **without** authentication or authorization (`--ignore-paths`), as `path.Match` patterns " +
					"starting with `/`, e.g. `[\"/healthz\"]`. Identity headers a caller sends on these paths reach the upstream unchecked. " +
					"Conflicts with `allow_paths`."},
			"allow_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "The only request paths served (`--allow-paths`, others get 404), as `path.Match` patterns starting with `/`, " +
					"e.g. `[\"/metrics\"]`. Conflicts with `ignore_paths`."},
			"tls_secret_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "A `kubernetes.io/tls` Secret in the target's namespace (keys `" + rbacproxy.TLSCertKey + "` and `" + rbacproxy.TLSPrivateKeyKey +
					"`) whose certificate the proxy serves, mounted read-only. Without it the proxy serves a self-signed certificate it makes at startup, " +
					"so callers can only verify it by pinning: give one your callers trust (e.g. from cert-manager)."},
			"tls_profile": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "The TLS settings of the listener, as a `kmshealth_tls_profile_configmap` resolves them: pass the resource itself " +
					"(`tls_profile = kmshealth_tls_profile_configmap.cluster`) or an object with `min_tls_version` (`--tls-min-version`, default " +
					"`" + rbacproxy.DefaultTLSMinVersion + "`) and `cipher_suites` (IANA names, `--tls-cipher-suites`; empty for Go's defaults). " +
					"A profile change changes the sidecar's arguments and so rolls the pods. A profile's key-exchange groups are not passed: no " +
					"kube-rbac-proxy release has a flag for them, and the listener offers the defaults of the Go release the proxy was built with.",
				Attributes: map[string]schema.Attribute{
					"min_tls_version": optionalString("`VersionTLS10` to `VersionTLS13`."),
					"cipher_suites": schema.ListAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "IANA cipher suite names for TLS 1.2 and below (Go always enables the TLS 1.3 suites)."},
				},
			},
			"insecure_listen": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Serve plain HTTP on `listen_port` (`--insecure-listen-address`) instead of HTTPS. Default `false`. Allowed, with a " +
					"warning at every plan: the flag is deprecated upstream, bearer tokens cross the network in clear text, and identity headers can be " +
					"forged on `ignore_paths`. It conflicts with `tls_secret_name` and `tls_profile`."},
			"service_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "An existing Service in the target's namespace that selects the target's pods: the port `" + rbacproxy.ServicePortName +
					"` (`listen_port` → `listen_port`, TCP) is added to it by server-side apply of only that port, and removed on destroy or when this " +
					"changes. Every port of the Service must be named."},
			"wait_for_rollout": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "After create and update, watch the target until every replica runs the new pod template and is ready, bounded by " +
					"`timeouts`; a pod that cannot start (image pull, crash loop, scheduling) fails the apply at once with its own reason. Default " +
					"`false`: the apply returns once the objects are written, and the workload's controller rolls the pods."},
			"service_account_name": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The ServiceAccount the target's pods run as (`spec.template.spec.serviceAccountName`, `default` when unset), read " +
					"from the cluster: the sidecar authenticates to the API server with its token, so this is the account bound to " +
					"`system:auth-delegator` (ClusterRoleBinding `kmshealth-rbac-proxy:<namespace>:<kind>:<name>`). A change of the workload's " +
					"ServiceAccount shows in the plan and moves the binding."},
			"config_hash": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Hex SHA-256 of the proxy's config file, the value of the pod-template annotation `" + rbacproxy.ConfigHashAnnotation + "`."},
			"args": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The sidecar's arguments exactly as applied: review them in the plan."},
			"pinned_sidecar": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The whole sidecar as the API server stores it, as JSON: the container (every field, with the values the API " +
					"server defaults — `terminationMessagePath`, `terminationMessagePolicy`, `imagePullPolicy`, the probes' timings — filled in), " +
					"its volumes (with their default `defaultMode`) and the config hash. Pass it to `kmshealth_reconciler`'s `rbac_proxy_sidecars` " +
					"entry as `pinned_sidecar`: its admission policy then lets the reconciler write exactly this sidecar, field for field, and nothing else."},
			"objects_in_sync": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "`false` when, at the last refresh, the sidecar, its volumes or annotation, the config ConfigMap, the binding, the " +
					"Service port or the NetworkPolicy was missing or changed out of band (e.g. the sidecar removed by a `kubectl replace` of the " +
					"workload's manifest, or the ServiceAccount of its pods changed). The plan then shows it turning `true`, and the apply restores them. Always `true` after an apply."},
		},
		Blocks: map[string]schema.Block{
			"target": schema.SingleNestedBlock{
				MarkdownDescription: "Required. The workload to protect; it must exist at apply time. Changing it replaces the resource.",
				Validators:          []validator.Object{objectvalidator.IsRequired()},
				Attributes: map[string]schema.Attribute{
					"kind": schema.StringAttribute{Required: true, PlanModifiers: replace,
						MarkdownDescription: "`Deployment`, `StatefulSet` or `DaemonSet` (apps/v1)."},
					"namespace": schema.StringAttribute{Required: true, PlanModifiers: replace,
						MarkdownDescription: "Namespace of the workload; kmshealth's ConfigMap and NetworkPolicy are created there."},
					"name": schema.StringAttribute{Required: true, PlanModifiers: replace, MarkdownDescription: "Name of the workload."},
				},
			},
			"resources": schema.SingleNestedBlock{
				MarkdownDescription: "Requests and limits of the sidecar container. None by default.",
				Attributes: map[string]schema.Attribute{
					"requests": schema.MapAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Resource name → quantity, e.g. `{ cpu = \"10m\", memory = \"32Mi\" }`."},
					"limits": schema.MapAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Resource name → quantity, e.g. `{ memory = \"64Mi\" }`; not below the request."},
				},
			},
			"authorization": schema.SingleNestedBlock{
				MarkdownDescription: "What each request is authorized as, rendered into the proxy's config file (top-level `authorization:`). " +
					"Without `resource_attributes` the proxy sends a non-resource SubjectAccessReview: the request path, and the verb from the HTTP method.",
				Blocks: map[string]schema.Block{
					"resource_attributes": schema.SingleNestedBlock{
						MarkdownDescription: "The SubjectAccessReview's resource attributes: a caller is allowed when RBAC grants it the verb (from the " +
							"HTTP method: `GET` → `get`, `POST` → `create`, …) on this resource. With `rewrites`, each may contain `{{ .Value }}`. " +
							"`resource` is required in this block.",
						Attributes: map[string]schema.Attribute{
							"namespace":   optionalString("Namespace of the check; empty for a cluster-scoped check."),
							"api_group":   optionalString("API group, e.g. `monitoring.coreos.com`; empty for the core group (not `core`, not `v1`)."),
							"api_version": optionalString("API version, e.g. `v1`, without the group."),
							"resource":    optionalString("Resource, e.g. `services`: RBAC rules match on it."),
							"subresource": optionalString("Subresource, e.g. `proxy`."),
							"name":        optionalString("Object name, for RBAC rules with `resourceNames`."),
						},
					},
					"rewrites": schema.SingleNestedBlock{
						MarkdownDescription: "Where `{{ .Value }}` in `resource_attributes` comes from: each value of the query parameter and of the " +
							"header is authorized on its own, and a request without any gets 400.",
						Attributes: map[string]schema.Attribute{
							"by_query_parameter": optionalString("Name of the query parameter, e.g. `namespace`."),
							"by_http_header":     optionalString("Name of the HTTP header, e.g. `X-Namespace`."),
						},
					},
				},
			},
			"network_policy": schema.SingleNestedBlock{
				MarkdownDescription: "A NetworkPolicy `kmshealth-rbac-proxy-<kind>-<name>` selecting the target's pods (by its `spec.selector`) that " +
					"admits ingress only on `listen_port`, from pods matching both selectors. As with every NetworkPolicy, the selected pods then " +
					"accept no other ingress unless another policy admits it; it takes effect only where the network plugin enforces NetworkPolicies.",
				Attributes: map[string]schema.Attribute{
					"enabled": schema.BoolAttribute{Optional: true,
						MarkdownDescription: "Create the NetworkPolicy. Default `false`; turning it off deletes it."},
					"from_namespace_selector": labelSelectorAttribute("namespace", `{ "kubernetes.io/metadata.name" = "monitoring" }`),
					"from_pod_selector":       labelSelectorAttribute("pod", `{ "app.kubernetes.io/name" = "prometheus" }`),
				},
			},
			// create and update bound wait_for_rollout (default 10m); delete
			// bounds the removal of kmshealth's objects and fields.
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

func (r *rbacProxyResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = configure(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks everything that needs no cluster, at plan time,
// with rbacproxy.Validate: each problem at its attribute, with the fix;
// and shows rbacproxy's warnings (insecure_listen, weak TLS).
func (r *rbacProxyResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m rbacProxyModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, unknown := m.config(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	rbacProxyFields.addErrors(&resp.Diagnostics, "Invalid rbac proxy sidecar", c.Validate(), unknown.covers)
	rbacProxyFields.addWarnings(&resp.Diagnostics, c.Warnings(), rbacProxyWarningSummary, unknown.covers)
}

func rbacProxyWarningSummary(field string) string {
	switch {
	case field == "insecureListen":
		return "Plain HTTP listener"
	case strings.HasPrefix(field, "tls."):
		return "Weak or ineffective TLS setting"
	}
	return "Setting without effect"
}

// ModifyPlan fills id, the pods' ServiceAccount (one GET of the target
// when the cluster can be reached), config_hash and args, and plans
// objects_in_sync = true: a refresh that found drift makes that a change,
// and the apply restores the objects.
func (r *rbacProxyResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan rbacProxyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var state *rbacProxyModel
	if !req.State.Raw.IsNull() {
		state = &rbacProxyModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	plan.ObjectsInSync = types.BoolValue(true)
	plan.ID, plan.ServiceAccountName = types.StringUnknown(), types.StringUnknown()
	if t, ok := plan.target(); ok {
		plan.ID = types.StringValue(t.String())
		plan.ServiceAccountName = r.planServiceAccount(ctx, t, state)
	}
	c, unknown := plan.config(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	// The config file and the arguments do not depend on the ServiceAccount.
	complete := !slices.ContainsFunc(unknown, func(f string) bool { return f != "serviceAccountName" })
	plan.setRendered(c, complete && c.Validate() == nil)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// planServiceAccount is the target's ServiceAccount as the cluster holds
// it now; the state's when the target cannot be read (not created yet, no
// connection); unknown otherwise.
func (r *rbacProxyResource) planServiceAccount(ctx context.Context, t rbacproxy.Target, state *rbacProxyModel) types.String {
	if r.clients.Known() {
		if cs, err := r.clients.Core(); err == nil {
			if w, err := rbacproxy.GetWorkload(ctx, cs, t); err == nil {
				return types.StringValue(w.ServiceAccount())
			}
		}
	}
	if state != nil {
		if st, ok := state.target(); ok && st == t && !state.ServiceAccountName.IsNull() {
			return state.ServiceAccountName
		}
	}
	return types.StringUnknown()
}

func (r *rbacProxyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan rbacProxyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultRolloutTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.write(ctx, &plan, nil, timeout, &resp.Diagnostics) {
		// Also after a write that failed half-way: the resource is then
		// tainted, and destroy removes what was written.
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

func (r *rbacProxyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state rbacProxyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || !r.clients.Known() {
		return // provider configuration unknown: keep the state as it is
	}
	cl, ok := r.clients.installClients(&resp.Diagnostics)
	if !ok {
		return
	}
	t, _ := state.target()
	if state.ConfigHash.IsNull() { // import: the record says what was applied
		if !r.adopt(ctx, cl.Core, t, &state, &resp.Diagnostics) {
			return
		}
	}
	c, _ := state.config(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	live, err := rbacproxy.Observe(ctx, cl, c)
	if err != nil {
		r.addError(&resp.Diagnostics, "Cannot read the rbac proxy sidecar's objects", err)
		return
	}
	if live.Workload == nil && live.ConfigMap == nil && live.Binding == nil && live.NetworkPolicy == nil {
		resp.Diagnostics.AddWarning("Protected workload gone",
			fmt.Sprintf("%s and kmshealth's objects for it no longer exist, so kmshealth_rbac_proxy_sidecar for it is removed from the state; the next apply protects it again once it is back.", t))
		resp.State.RemoveResource(ctx)
		return
	}
	if live.Workload != nil {
		state.ServiceAccountName = types.StringValue(live.Workload.ServiceAccount())
		c.ServiceAccountName = live.Workload.ServiceAccount()
	}
	drift, err := c.Drift(live)
	if err != nil {
		drift = []string{"the recorded configuration cannot be rebuilt: " + err.Error()}
	}
	if len(drift) > 0 {
		hint := "The next apply restores them."
		if live.Workload == nil {
			hint = "Re-create the workload and apply, or destroy this resource to remove kmshealth's objects for it."
		}
		resp.Diagnostics.AddWarning("rbac proxy sidecar drifted", fmt.Sprintf("Changed out of band since the last apply: %s. %s", strings.Join(drift, "; "), hint))
	}
	state.ObjectsInSync = types.BoolValue(len(drift) == 0)
	state.setRendered(c, true)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// adopt fills an imported state from the record in the config ConfigMap.
func (r *rbacProxyResource) adopt(ctx context.Context, cs clientset.Core, t rbacproxy.Target, state *rbacProxyModel, diags *diag.Diagnostics) bool {
	name := rbacproxy.ObjectName(t)
	cm, err := cs.CoreV1().ConfigMaps(t.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		diags.AddError("Nothing to import",
			fmt.Sprintf("%s is not protected by kmshealth: its config ConfigMap %s/%s does not exist. Declare a kmshealth_rbac_proxy_sidecar for it and apply instead.", t, t.Namespace, name))
		return false
	}
	if err != nil {
		r.clients.addAPIError(diags, apiRequest{Summary: "Cannot read the rbac proxy config", Verb: "get", Kind: "ConfigMap", Resource: "configmaps", Namespace: t.Namespace, Name: name}, err)
		return false
	}
	c, err := rbacproxy.DecodeRecord(cm)
	if err != nil {
		diags.AddError("Cannot import the rbac proxy sidecar", err.Error())
		return false
	}
	state.fromConfig(ctx, c, diags)
	state.WaitForRollout = types.BoolValue(false) // the default: nothing in the cluster says otherwise
	state.Timeouts = timeouts.Value{Object: types.ObjectNull(state.Timeouts.AttributeTypes(ctx))}
	return !diags.HasError()
}

func (r *rbacProxyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state rbacProxyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultRolloutTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.write(ctx, &plan, &state, timeout, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
}

// write applies the plan with rbacproxy.Ensure (which checks the cluster
// before the first write, and releases the Service port the prior state
// had when the plan names another) and, when asked, waits for the
// rollout. It reports whether anything may have been written, i.e.
// whether the state must record it.
func (r *rbacProxyResource) write(ctx context.Context, plan, prior *rbacProxyModel, timeout time.Duration, diags *diag.Diagnostics) bool {
	cl, ok := r.clients.installClients(diags)
	if !ok {
		return false
	}
	c, _ := plan.config(ctx, diags)
	if diags.HasError() {
		return false
	}
	opts := rbacproxy.EnsureOptions{}
	if !plan.ServiceAccountName.IsUnknown() {
		opts.PlannedServiceAccount = plan.ServiceAccountName.ValueString()
	}
	if prior != nil {
		opts.PriorServiceName = prior.ServiceName.ValueString()
	}
	c, err := rbacproxy.Ensure(ctx, cl, c, opts)
	var failed *rbacproxy.StepError
	if err != nil {
		if !errors.As(err, &failed) {
			failed = &rbacproxy.StepError{Step: rbacproxy.StepRead, Err: err}
		}
		r.addEnsureError(diags, c.Target, failed)
		if !failed.Written() {
			return false
		}
	}
	plan.ID = types.StringValue(c.Target.String())
	plan.ServiceAccountName = types.StringValue(c.ServiceAccountName)
	plan.setRendered(c, true)
	// Applied only in part: the state records it out of sync, so the next
	// plan shows the apply that completes it.
	appliedInPart := failed != nil && failed.Step == rbacproxy.StepApply
	plan.ObjectsInSync = types.BoolValue(!appliedInPart)
	if appliedInPart {
		return true
	}
	if plan.WaitForRollout.ValueBool() {
		r.waitForRollout(ctx, cl, c.Target, timeout, diags)
	}
	return true
}

// addEnsureError reports where rbacproxy.Ensure stopped.
func (r *rbacProxyResource) addEnsureError(diags *diag.Diagnostics, t rbacproxy.Target, failed *rbacproxy.StepError) {
	var changed *rbacproxy.TargetChangedError
	switch {
	case errors.As(failed, &changed):
		diags.AddAttributeError(path.Root("service_account_name"), "Target changed since the plan", changed.Error())
	case failed.Step == rbacproxy.StepRead:
		r.addError(diags, "Cannot read the rbac proxy sidecar's objects", failed.Err)
	case failed.Step == rbacproxy.StepCheck:
		rbacProxyFields.addErrors(diags, "Cannot protect "+t.String(), failed.Err, nil)
	case failed.Step == rbacproxy.StepValidate:
		rbacProxyFields.addErrors(diags, "Invalid rbac proxy sidecar", failed.Err, nil)
	case failed.Step == rbacproxy.StepApply:
		r.addError(diags, "rbac proxy sidecar applied only in part", failed.Err)
	default:
		r.addError(diags, "Cannot remove the proxy port from the previous Service", failed.Err)
	}
}

// waitForRollout waits, by watch, within timeout, until the target runs
// the new pod template everywhere.
func (r *rbacProxyResource) waitForRollout(ctx context.Context, cl install.Clients, t rbacproxy.Target, timeout time.Duration, diags *diag.Diagnostics) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	progress := func(p string) {
		tflog.Info(ctx, "Waiting for "+t.String()+" to roll out with the rbac proxy sidecar", map[string]any{"progress": p})
	}
	id, _ := install.WorkloadID(t)
	if err := install.WaitForRollout(wctx, cl, id, progress); err != nil {
		diags.AddAttributeError(path.Root("wait_for_rollout"), "Target not rolled out", err.Error())
	}
}

func (r *rbacProxyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state rbacProxyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultRolloutTimeout)
	resp.Diagnostics.Append(diags...)
	cl, ok := r.clients.installClients(&resp.Diagnostics)
	if !ok {
		return
	}
	c, _ := state.config(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Uninstall(dctx, cl); err != nil {
		r.addError(&resp.Diagnostics, "Cannot remove the rbac proxy sidecar", err)
	}
}

func (r *rbacProxyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	t, err := parseRBACProxyID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("target"), &rbacProxyTargetModel{
		Kind: types.StringValue(string(t.Kind)), Namespace: types.StringValue(t.Namespace), Name: types.StringValue(t.Name),
	})...)
}

// parseRBACProxyID reads an import ID, <kind>/<namespace>/<name>.
func parseRBACProxyID(id string) (rbacproxy.Target, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return rbacproxy.Target{}, fmt.Errorf("import ID %q: want <kind>/<namespace>/<name> of the protected workload, e.g. Deployment/shop/web", id)
	}
	t := rbacproxy.Target{Kind: rbacproxy.Kind(parts[0]), Namespace: parts[1], Name: parts[2]}
	var msgs []string
	for _, e := range rbacproxy.FieldErrors((rbacproxy.Config{Target: t}).Validate()) {
		if f, ok := strings.CutPrefix(e.Field, "target."); ok {
			msgs = append(msgs, f+" "+e.Detail)
		}
	}
	if len(msgs) > 0 {
		return rbacproxy.Target{}, fmt.Errorf("import ID %q (<kind>/<namespace>/<name>): %s", id, strings.Join(msgs, "; "))
	}
	return t, nil
}

// addError reports a failed request for one of the objects by cause.
func (r *rbacProxyResource) addError(diags *diag.Diagnostics, summary string, err error) {
	var oe *rbacproxy.ObjectError
	req := apiRequest{Summary: summary, Attribute: path.Root("target")}
	if errors.As(err, &oe) {
		req.Verb, req.Kind, req.Group, req.Resource, req.Namespace, req.Name = oe.Verb, oe.Kind, oe.Group, oe.Resource, oe.Namespace, oe.Name
		if oe.Kind == "Service" {
			req.Attribute = path.Root("service_name")
		}
	}
	r.clients.addAPIError(diags, req, err)
}

// The model and rbacproxy.Config.

// target is the target the model names; ok is false while it is not known.
func (m *rbacProxyModel) target() (rbacproxy.Target, bool) {
	if m.Target == nil || m.Target.Kind.IsUnknown() || m.Target.Namespace.IsUnknown() || m.Target.Name.IsUnknown() {
		return rbacproxy.Target{}, false
	}
	return rbacproxy.Target{Kind: rbacproxy.Kind(m.Target.Kind.ValueString()), Namespace: m.Target.Namespace.ValueString(), Name: m.Target.Name.ValueString()}, true
}

// unknownFields are the top-level Config fields (JSON names) whose value
// is not known yet: their problems are judged once they are.
type unknownFields []string

func (u unknownFields) covers(field string) bool {
	for _, f := range u {
		if field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[") {
			return true
		}
	}
	return false
}

// known reports whether v is known all the way down.
func known(ctx context.Context, v attr.Value) bool {
	tv, err := v.ToTerraformValue(ctx)
	return err == nil && tv.IsFullyKnown()
}

// port is an Int64 attribute as an int32 port, saturated (Validate then
// reports it with its own value when it fits, 65536 and beyond as is).
func port(v types.Int64) int32 {
	n := v.ValueInt64()
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return int32(n)
}

// config is the rbacproxy.Config the model describes (the ServiceAccount
// from service_account_name, "default" while unknown), and the fields not
// known yet.
func (m *rbacProxyModel) config(ctx context.Context, diags *diag.Diagnostics) (rbacproxy.Config, unknownFields) {
	var c rbacproxy.Config
	var unknown unknownFields
	mark := func(field string, values ...attr.Value) bool {
		for _, v := range values {
			if !known(ctx, v) {
				unknown = append(unknown, field)
				return false
			}
		}
		return true
	}
	if m.Target == nil {
		unknown = append(unknown, "target") // IsRequired reports it
	} else if t, ok := m.target(); ok {
		c.Target = t
	} else {
		unknown = append(unknown, "target")
	}
	if mark("upstreamPort", m.UpstreamPort) {
		c.UpstreamPort = port(m.UpstreamPort)
	}
	if mark("listenPort", m.ListenPort) {
		c.ListenPort = port(m.ListenPort)
	}
	if mark("healthPort", m.HealthPort) {
		c.HealthPort = port(m.HealthPort)
	}
	if mark("image", m.Image) {
		c.Image = m.Image.ValueString()
	}
	if mark("proxyVersion", m.ProxyVersion) {
		c.ProxyVersion = m.ProxyVersion.ValueString()
	}
	if r := m.Resources; r != nil && mark("resources", r.Requests, r.Limits) {
		diags.Append(r.Requests.ElementsAs(ctx, &c.Resources.Requests, true)...)
		diags.Append(r.Limits.ElementsAs(ctx, &c.Resources.Limits, true)...)
	}
	if a := m.Authorization; a != nil {
		if ra := a.ResourceAttributes; ra != nil && mark("authorization", ra.Namespace, ra.APIGroup, ra.APIVersion, ra.Resource, ra.Subresource, ra.Name) {
			c.Authorization.ResourceAttributes = &rbacproxy.ResourceAttributes{
				Namespace: ra.Namespace.ValueString(), APIGroup: ra.APIGroup.ValueString(), APIVersion: ra.APIVersion.ValueString(),
				Resource: ra.Resource.ValueString(), Subresource: ra.Subresource.ValueString(), Name: ra.Name.ValueString(),
			}
		}
		if rw := a.Rewrites; rw != nil && mark("authorization", rw.ByQueryParameter, rw.ByHTTPHeader) {
			c.Authorization.Rewrites = &rbacproxy.Rewrites{ByQueryParameter: rw.ByQueryParameter.ValueString(), ByHTTPHeader: rw.ByHTTPHeader.ValueString()}
		}
	}
	if mark("ignorePaths", m.IgnorePaths) {
		diags.Append(m.IgnorePaths.ElementsAs(ctx, &c.IgnorePaths, true)...)
	}
	if mark("allowPaths", m.AllowPaths) {
		diags.Append(m.AllowPaths.ElementsAs(ctx, &c.AllowPaths, true)...)
	}
	if mark("tls", m.TLSSecretName, m.TLSProfile) {
		c.TLS.SecretName = m.TLSSecretName.ValueString()
		if !m.TLSProfile.IsNull() {
			var p struct {
				MinTLSVersion types.String `tfsdk:"min_tls_version"`
				CipherSuites  []string     `tfsdk:"cipher_suites"`
			}
			diags.Append(m.TLSProfile.As(ctx, &p, basetypes.ObjectAsOptions{})...)
			c.TLS.MinVersion, c.TLS.CipherSuites = p.MinTLSVersion.ValueString(), p.CipherSuites
		}
	}
	if mark("insecureListen", m.InsecureListen) {
		c.InsecureListen = m.InsecureListen.ValueBool()
	}
	if mark("serviceName", m.ServiceName) {
		c.ServiceName = m.ServiceName.ValueString()
	}
	if np := m.NetworkPolicy; np != nil && mark("networkPolicy", np.Enabled, np.FromNamespaceSelector, np.FromPodSelector) {
		c.NetworkPolicy = rbacproxy.NetworkPolicy{
			Enabled:               np.Enabled.ValueBool(),
			FromNamespaceSelector: labelSelector(ctx, np.FromNamespaceSelector, diags),
			FromPodSelector:       labelSelector(ctx, np.FromPodSelector, diags),
		}
	}
	c.ServiceAccountName = "default"
	if mark("serviceAccountName", m.ServiceAccountName) && !m.ServiceAccountName.IsNull() {
		c.ServiceAccountName = m.ServiceAccountName.ValueString()
	}
	return c, unknown
}

func labelSelector(ctx context.Context, v types.Object, diags *diag.Diagnostics) *metav1.LabelSelector {
	if v.IsNull() {
		return nil
	}
	var m labelSelectorModel
	diags.Append(v.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	out := &metav1.LabelSelector{MatchLabels: m.MatchLabels}
	for _, e := range m.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
	}
	return out
}

func labelSelectorValue(ctx context.Context, s *metav1.LabelSelector, diags *diag.Diagnostics) types.Object {
	if s == nil {
		return types.ObjectNull(labelSelectorAttrTypes)
	}
	m := labelSelectorModel{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		m.MatchExpressions = append(m.MatchExpressions, labelSelectorRequirementModel{Key: e.Key, Operator: string(e.Operator), Values: e.Values})
	}
	v, d := types.ObjectValueFrom(ctx, labelSelectorAttrTypes, m)
	diags.Append(d...)
	return v
}

func stringListOrNull(items []string) types.List {
	if items == nil {
		return types.ListNull(types.StringType)
	}
	return listValue(items)
}

func stringMapOrNull(ctx context.Context, m map[string]string, diags *diag.Diagnostics) types.Map {
	if m == nil {
		return types.MapNull(types.StringType)
	}
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	diags.Append(d...)
	return v
}

func optionalStringValue(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// fromConfig fills the model from a recorded Config (import).
func (m *rbacProxyModel) fromConfig(ctx context.Context, c rbacproxy.Config, diags *diag.Diagnostics) {
	c = c.Defaulted()
	m.ID = types.StringValue(c.Target.String())
	m.Target = &rbacProxyTargetModel{Kind: types.StringValue(string(c.Target.Kind)), Namespace: types.StringValue(c.Target.Namespace), Name: types.StringValue(c.Target.Name)}
	m.UpstreamPort = types.Int64Value(int64(c.UpstreamPort))
	m.ListenPort = types.Int64Value(int64(c.ListenPort))
	m.HealthPort = types.Int64Value(int64(c.HealthPort))
	m.Image = types.StringValue(c.Image)
	m.ProxyVersion = optionalStringValue(c.ProxyVersion)
	m.Resources = nil
	if c.Resources.Requests != nil || c.Resources.Limits != nil {
		m.Resources = &rbacProxyResourcesModel{Requests: stringMapOrNull(ctx, c.Resources.Requests, diags), Limits: stringMapOrNull(ctx, c.Resources.Limits, diags)}
	}
	m.Authorization = nil
	if a := c.Authorization; a.ResourceAttributes != nil || a.Rewrites != nil {
		m.Authorization = &rbacProxyAuthzModel{}
		if ra := a.ResourceAttributes; ra != nil {
			m.Authorization.ResourceAttributes = &rbacProxyAttributesModel{
				Namespace: optionalStringValue(ra.Namespace), APIGroup: optionalStringValue(ra.APIGroup), APIVersion: optionalStringValue(ra.APIVersion),
				Resource: optionalStringValue(ra.Resource), Subresource: optionalStringValue(ra.Subresource), Name: optionalStringValue(ra.Name),
			}
		}
		if rw := a.Rewrites; rw != nil {
			m.Authorization.Rewrites = &rbacProxyRewritesModel{ByQueryParameter: optionalStringValue(rw.ByQueryParameter), ByHTTPHeader: optionalStringValue(rw.ByHTTPHeader)}
		}
	}
	m.IgnorePaths = stringListOrNull(c.IgnorePaths)
	m.AllowPaths = stringListOrNull(c.AllowPaths)
	m.TLSSecretName = optionalStringValue(c.TLS.SecretName)
	m.TLSProfile = types.ObjectNull(tlsProfileAttrTypes)
	if !c.InsecureListen && (c.TLS.MinVersion != rbacproxy.DefaultTLSMinVersion || len(c.TLS.CipherSuites) > 0) {
		m.TLSProfile = types.ObjectValueMust(tlsProfileAttrTypes, map[string]attr.Value{
			"min_tls_version": types.StringValue(c.TLS.MinVersion), "cipher_suites": stringListOrNull(c.TLS.CipherSuites),
		})
	}
	m.InsecureListen = types.BoolValue(c.InsecureListen)
	m.ServiceName = optionalStringValue(c.ServiceName)
	m.NetworkPolicy = nil
	if np := c.NetworkPolicy; np.Enabled || np.FromNamespaceSelector != nil || np.FromPodSelector != nil {
		m.NetworkPolicy = &rbacProxyNetPolModel{
			Enabled:               types.BoolValue(np.Enabled),
			FromNamespaceSelector: labelSelectorValue(ctx, np.FromNamespaceSelector, diags),
			FromPodSelector:       labelSelectorValue(ctx, np.FromPodSelector, diags),
		}
	}
	m.ServiceAccountName = types.StringValue(c.ServiceAccountName)
}

// setRendered fills config_hash, args and pinned_sidecar from c, or leaves them unknown
// when c is not complete yet.
func (m *rbacProxyModel) setRendered(c rbacproxy.Config, complete bool) {
	m.ConfigHash, m.Args, m.PinnedSidecar = types.StringUnknown(), types.ListUnknown(types.StringType), types.StringUnknown()
	if !complete {
		return
	}
	hash, err := c.ConfigHash()
	if err != nil {
		return
	}
	m.ConfigHash = types.StringValue(hash)
	m.Args = listValue(c.Args())
	if pinned, err := c.EncodePinned(); err == nil {
		m.PinnedSidecar = types.StringValue(pinned)
	}
}

// Problems of a Config, at their attributes.

// rbacProxyFields maps rbacproxy's Config fields (its JSON names) to the
// attributes: snake_case, except the tls fields, which are spread over
// tls_secret_name and tls_profile.
var rbacProxyFields = fieldAttributes{
	renames: map[string]string{
		"tls":            "tls_profile",
		"tls.secretName": "tls_secret_name",
		"tls.minVersion": "tls_profile.min_tls_version",
	},
	words: rbacProxyWords,
}

// rbacProxyPath maps a Config field (rbacproxy's JSON names, e.g.
// "tls.cipherSuites[2]" or "resources.requests[cpu]") to its attribute.
func rbacProxyPath(field string) path.Path { return rbacProxyFields.path(field) }

// rbacProxyWords renames rbacproxy's Config fields in its messages; the
// Kubernetes fields messages also name stay as they are.
var rbacProxyWords = strings.NewReplacer(
	"spec.serviceAccountName", "spec.serviceAccountName",
	"automountServiceAccountToken", "automountServiceAccountToken",
	"tls.secretName", "tls_secret_name",
	"tls.minVersion", "tls_profile.min_tls_version",
	"tls.cipherSuites", "tls_profile.cipher_suites",
	"minVersion", "min_tls_version",
	"insecureListen", "insecure_listen",
	"proxyVersion", "proxy_version",
	"serviceAccountName", "service_account_name",
	"serviceName", "service_name",
	"upstreamPort", "upstream_port",
	"listenPort", "listen_port",
	"healthPort", "health_port",
	"ignorePaths", "ignore_paths",
	"allowPaths", "allow_paths",
	"resourceAttributes", "resource_attributes",
	"byQueryParameter", "by_query_parameter",
	"byHTTPHeader", "by_http_header",
	"apiGroup", "api_group",
	"apiVersion", "api_version",
	"networkPolicy", "network_policy",
	"fromNamespaceSelector", "from_namespace_selector",
	"fromPodSelector", "from_pod_selector",
	"matchExpressions", "match_expressions",
	"matchLabels", "match_labels",
)
