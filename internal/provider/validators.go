package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
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
