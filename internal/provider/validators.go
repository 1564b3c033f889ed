package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
)

// kubeName validates a Kubernetes name of one flavour at plan time.
type kubeName struct {
	what  string // "a namespace", "an object name", "a data key"
	check func(string) []string
}

var (
	namespaceName = kubeName{"a namespace name (RFC 1123 label)", validation.IsDNS1123Label}
	objectName    = kubeName{"an object name (RFC 1123 subdomain)", validation.IsDNS1123Subdomain}
	dataKey       = kubeName{"a Secret/ConfigMap data key", validation.IsConfigMapKey}
	fieldManager  = kubeName{"a field manager name (1–128 characters)", func(s string) []string {
		if s == "" || len(s) > 128 {
			return []string{"must be 1 to 128 characters"}
		}
		return nil
	}}
)

func (v kubeName) Description(context.Context) string { return "must be " + v.what }

func (v kubeName) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v kubeName) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if msgs := v.check(req.ConfigValue.ValueString()); len(msgs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value",
			fmt.Sprintf("%q is not %s: %s.", req.ConfigValue.ValueString(), v.what, strings.Join(msgs, "; ")))
	}
}

// pemBundle inspects a CA bundle at plan time: errors stop the plan,
// warnings (expiring soon, not a CA) are shown.
type pemBundle struct{ now func() time.Time }

func (v pemBundle) Description(context.Context) string {
	return "must be PEM CERTIFICATE blocks, none expired"
}

func (v pemBundle) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v pemBundle) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	_, findings := cabundle.Inspect([]byte(req.ConfigValue.ValueString()), v.now())
	addFindings(&resp.Diagnostics, req.Path, findings)
}

// exactlyOneOf is resourcevalidator.ExactlyOneOf of two root attributes
// (or blocks) that answers the common case from the raw configuration:
// exactly one of the two known and set, the other null, is valid. The
// framework's validator matches each path expression against a walk of the
// whole configuration, 3% of the provider's CPU in a no-op plan of 200
// caBundle resources (BENCHMARKS.md); every other case (both set, neither,
// an unknown value) is handed to it, so the diagnostics are its own.
type exactlyOneOf struct {
	names [2]string
	full  resource.ConfigValidator
}

func exactlyOneOfRoots(a, b string) exactlyOneOf {
	return exactlyOneOf{names: [2]string{a, b}, full: resourcevalidator.ExactlyOneOf(path.MatchRoot(a), path.MatchRoot(b))}
}

func (v exactlyOneOf) Description(ctx context.Context) string { return v.full.Description(ctx) }

func (v exactlyOneOf) MarkdownDescription(ctx context.Context) string {
	return v.full.MarkdownDescription(ctx)
}

func (v exactlyOneOf) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if v.oneSet(req.Config.Raw) {
		return
	}
	v.full.ValidateResource(ctx, req, resp)
}

// oneSet reports whether exactly one of the two is known and not null and
// the other is null, as the framework's validator would find them.
func (v exactlyOneOf) oneSet(config tftypes.Value) bool {
	var vals map[string]tftypes.Value
	if config.IsNull() || !config.IsKnown() || config.As(&vals) != nil {
		return false
	}
	a, okA := vals[v.names[0]]
	b, okB := vals[v.names[1]]
	if !okA || !okB || !a.IsKnown() || !b.IsKnown() {
		return false
	}
	return a.IsNull() != b.IsNull()
}

// requiredInBlock makes attributes of a single nested block required when
// the block is present (Required would also demand the absent block).
type requiredInBlock []string

func (v requiredInBlock) Description(context.Context) string {
	return "when the block is set, " + strings.Join(v, ", ") + " are required"
}

func (v requiredInBlock) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v requiredInBlock) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	attrs := req.ConfigValue.Attributes()
	for _, name := range v {
		if a, ok := attrs[name]; !ok || a.IsNull() {
			resp.Diagnostics.AddAttributeError(req.Path.AtName(name), "Missing required argument",
				fmt.Sprintf("The argument %q is required in a %s block.", name, req.Path))
		}
	}
}

// Validators of both installed modes' attributes.
var (
	imageRef = checkedString{"Invalid image", "must be a container image reference", install.ValidateImage}
	quantity = checkedString{"Invalid quantity", "must be a Kubernetes quantity such as 10m or 128Mi, or empty", install.ValidateQuantity}
)

// checkedString validates a string with a function of the logic package.
type checkedString struct {
	summary, description string
	check                func(string) error
}

func (v checkedString) Description(context.Context) string { return v.description }

func (v checkedString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v checkedString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, fmt.Sprintf("%s: %v.", req.Path, err))
	}
}

// goDuration validates a Go duration string such as 90s or 5m: positive
// and at least min or, when zeroMeans says what zero means (e.g. "no
// wait"), also zero.
type goDuration struct {
	min       time.Duration // the shortest allowed; 0: any positive duration
	zeroMeans string        // "": zero is not allowed
}

// want is what the duration must be, and examples of it.
func (v goDuration) want() (string, string) {
	switch {
	case v.min > 0:
		return "at least " + v.min.String(), fmt.Sprintf("%q or %q", v.min.String(), (2 * v.min).String())
	case v.zeroMeans != "":
		return "zero (" + v.zeroMeans + ") or positive", `"0s", "90s" or "5m"`
	}
	return "positive", `"90s" or "5m"`
}

func (v goDuration) Description(context.Context) string {
	want, examples := v.want()
	return "must be a Go duration, " + want + ", such as " + examples
}

func (v goDuration) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v goDuration) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	d, err := time.ParseDuration(s)
	want, examples := v.want()
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s: %q is not a duration. Write a number with a unit, such as \"90s\", \"5m\" or \"1h30m\".", req.Path, s))
	case d < v.min || d < 0 || (d == 0 && v.zeroMeans == ""):
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s: %q must be %s, such as %s.", req.Path, s, want, examples))
	}
}

// caBundleSource validates one <Kind>/<namespace>/<name>/<key> string.
type caBundleSource struct{}

func (caBundleSource) Description(context.Context) string {
	return "must be <Kind>/<namespace>/<name>/<key>, the ca_bundle_source of a kmshealth_apiservice_cabundle"
}

func (v caBundleSource) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (caBundleSource) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v := req.ConfigValue.ValueString()
	if _, err := cabundle.ParseSource(v); err != nil {
		// ParseSource speaks of the annotation it usually reads.
		reason := strings.TrimPrefix(err.Error(), fmt.Sprintf("annotation %s=%q: ", cabundle.SourceAnnotation, v))
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid CA bundle source",
			fmt.Sprintf("ca_bundles: %q is not a CA bundle source (%s). Use the ca_bundle_source attribute of a kmshealth_apiservice_cabundle, "+
				"e.g. { for r in kmshealth_apiservice_cabundle.x : r.apiservice_name => r.ca_bundle_source }, or write <Kind>/<namespace>/<name>/<key> with Kind Secret or ConfigMap, "+
				"e.g. Secret/kube-system/metrics-server-tls/ca.crt.", v, reason))
	}
}

// kmsSockets validates kms_sockets as a whole: the socket pattern, and no
// keyID twice.
type kmsSockets struct{}

func (kmsSockets) Description(context.Context) string {
	return "each must match " + kmshealth.SocketPattern.String() + ", with distinct keyIDs"
}

func (v kmsSockets) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (kmsSockets) ValidateSet(ctx context.Context, req validator.SetRequest, resp *validator.SetResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if len(req.ConfigValue.Elements()) == 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "No KMS sockets",
			fmt.Sprintf("kms_sockets is empty: list at least one unix://%s/kms-<keyID>.sock, or remove kms_sockets to probe every socket in socket_dir (default %s).", kmshealth.SocketDir, kmshealth.SocketDir))
		return
	}
	var sockets []string
	for _, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() || s.IsNull() {
			return
		}
		sockets = append(sockets, s.ValueString())
	}
	if err := reporterinstall.ValidateSockets(sockets); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid KMS socket",
			fmt.Sprintf("kms_sockets: %s.\n\nEach socket must match %s, e.g. unix://%s/kms-1.sock, as in the API server's EncryptionConfiguration; "+
				"or remove kms_sockets and set socket_dir to probe every kms-<keyID>.sock in a directory.",
				strings.ReplaceAll(err.Error(), "\n", "; "), kmshealth.SocketPattern, kmshealth.SocketDir))
	}
}

// labelMap validates a map of labels (node_selector, monitoring.labels):
// keys label keys, values label values. The error names the attribute by
// its path.
type labelMap struct{}

func (labelMap) Description(context.Context) string {
	return "keys must be label keys and values label values"
}

func (v labelMap) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (labelMap) ValidateMap(ctx context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	sel := map[string]string{}
	for k, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() {
			return
		}
		sel[k] = s.ValueString()
	}
	if err := reporterinstall.ValidateNodeSelector(sel); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid labels",
			fmt.Sprintf("%s: %s. Keys are label keys such as %s (an optional DNS prefix and a name of at most 63 characters), values label values (at most 63 characters, may be empty).",
				req.Path, strings.ReplaceAll(err.Error(), "\n", "; "), reporterinstall.ControlPlaneLabel))
	}
}

// tolerationObject validates one element of tolerations as the API server
// would.
type tolerationObject struct{}

func (tolerationObject) Description(context.Context) string {
	return "must be a valid toleration"
}

func (v tolerationObject) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (tolerationObject) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for _, a := range req.ConfigValue.Attributes() {
		if a.IsUnknown() {
			return
		}
	}
	var m tolerationModel
	resp.Diagnostics.Append(req.ConfigValue.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := reporterinstall.ValidateToleration(m.toleration()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid toleration",
			fmt.Sprintf("%s: %s.", req.Path, strings.ReplaceAll(err.Error(), "\n", "; ")))
	}
}

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

// Validators of kmshealth_reporter.
var (
	reporterName      = kubeName{"a reporter name (DNS-1123 label)", reporterinstall.ValidateName}
	targetString      = checkedString{"Invalid target", "must be <group>/<version>/<resource>/<name>", func(s string) error { _, err := kmshealth.ParseTarget(s); return err }}
	priorityClassName = kubeName{"a PriorityClass name (RFC 1123 subdomain) or empty", func(s string) []string {
		if s == "" {
			return nil
		}
		return objectName.check(s)
	}}
)

// Validators of kmshealth_reconciler.
var reconcilerName = kubeName{"a reconciler name (DNS-1035 label of at most 55 characters)", reconcilerinstall.ValidateName}

// Validators of kmshealth_kms_plugin_health.
var healthNodeName = kubeName{"a node name (RFC 1123 subdomain)", validation.IsDNS1123Subdomain}
