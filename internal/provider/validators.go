package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
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
