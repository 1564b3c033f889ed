package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

var _ function.Function = (*tlsProfileFunction)(nil)

// NewTLSProfileFunction is the factory of provider::kmshealth::tls_profile.
func NewTLSProfileFunction() function.Function { return &tlsProfileFunction{} }

type tlsProfileFunction struct{}

// tlsProfileResultType is tls_profile()'s result: the computed attributes of
// kmshealth_tls_profile_configmap under the same names, filled by the same
// code (tlsProfileModel.setResolved), plus what the resource would warn.
var tlsProfileResultType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"type":            types.StringType,
	"min_tls_version": types.StringType,
	"cipher_suites":   types.ListType{ElemType: types.StringType},
	"groups":          types.ListType{ElemType: types.StringType},
	"component_args":  types.ListType{ElemType: types.StringType},
	"fips_dropped":    types.ListType{ElemType: types.StringType},
	"hash":            types.StringType,
	"profile_json":    types.StringType,
	"warnings":        types.ListType{ElemType: types.StringType},
}}

// The attributes of tls_profile()'s custom argument: those of the
// resource's profile.custom block, and its fips.
const (
	customMinTLSVersion = "min_tls_version"
	customCiphers       = "ciphers"
	customGroups        = "groups"
	customFIPS          = "fips"
)

func (f *tlsProfileFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "tls_profile"
}

func (f *tlsProfileFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Resolves a TLS security profile as kmshealth_tls_profile_configmap does, without a cluster",
		MarkdownDescription: "Resolves an OpenShift-style TLS security profile (`Old`, `Intermediate`, `Modern` or `Custom`) into what a Go " +
			"server is configured with, by the same code as `kmshealth_tls_profile_configmap` with `source = \"static\"`, so the " +
			"result equals what that resource writes: `type`, `min_tls_version` (e.g. `VersionTLS12`), `cipher_suites` (IANA " +
			"names of the TLS 1.0–1.2 suites; empty with a minimum of TLS 1.3, whose suites are not configurable), `groups` " +
			"(the key-exchange groups by OpenShift's names, in Go's preference order; empty when a `Custom` profile names none and the " +
			"TLS library's defaults apply), `component_args` (the `--tls-min-version`, `--tls-cipher-suites` and `--tls-curve-preferences` " +
			"flags Kubernetes components take, as the resource's `component_args`), `fips_dropped` (with `fips`, what FIPS does not " +
			"approve and was dropped), `hash` (the hex SHA-256 of `profile_json`, the value of the rollout annotation `" + tlsprofile.HashAnnotation + "`), " +
			"`profile_json` (the ConfigMap's `" + tlsprofile.DocumentKey + "`, byte for byte) and `warnings` (what the resource " +
			"would warn about: names Go cannot use, which are dropped). Use it to hand a Helm release or a container the resolved " +
			"values, or to check a profile in a `precondition`, without a cluster. A profile read from the cluster (`source = " +
			"\"cluster\"`) needs the resource. Call it as `tls_profile(\"Intermediate\")` for a predefined type, or as " +
			"`tls_profile(\"Custom\", { min_tls_version = \"VersionTLS12\", ciphers = [...], groups = [...] })`; add `fips = true` to the object, " +
			"for any type (`tls_profile(\"Intermediate\", { fips = true })`), to keep only what FIPS approves. An unknown type, TLS version or cipher or curve name, custom settings with a type " +
			"other than `Custom`, or a profile Go cannot honour is an error naming the argument and attribute, listing the valid " +
			"values. Needs Terraform 1.8 or later, or OpenTofu 1.7 or later.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "type",
				MarkdownDescription: "`Old`, `Intermediate`, `Modern` or `Custom`, as `profile.type` of the resource."},
		},
		// Optional, hence variadic (at most one): `tls_profile("Modern")`.
		// A null literal for a dynamic parameter makes OpenTofu 1.12 return
		// an unknown result without calling the provider, so omitting it is
		// the form that works under both CLIs.
		VariadicParameter: function.DynamicParameter{Name: "custom", AllowNullValue: true,
			MarkdownDescription: "Omitted (or `null`, with Terraform) for a predefined type; for `Custom`, one object with the attributes of the " +
				"resource's `profile.custom` block: `min_tls_version` (required), `ciphers` (OpenSSL or IANA names) and `groups` " +
				"(e.g. `[\"X25519\", \"secp256r1\"]`); and, for any type, `fips` (a bool, as the resource's `fips`). Other attribute names are refused."},
		Return: function.ObjectReturn{AttributeTypes: tlsProfileResultType.AttrTypes},
	}
}

func (f *tlsProfileFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var (
		typ     string
		customs types.Tuple
	)
	resp.Error = req.Arguments.Get(ctx, &typ, &customs)
	if resp.Error != nil {
		return
	}
	custom := types.DynamicNull()
	switch elems := customs.Elements(); len(elems) {
	case 0:
	case 1:
		d, ok := elems[0].(types.Dynamic)
		if !ok {
			resp.Error = function.NewArgumentFuncError(1, fmt.Sprintf("custom arrived as %T; this is a bug in the provider", elems[0]))
			return
		}
		custom = d
	default:
		resp.Error = function.NewArgumentFuncError(2, fmt.Sprintf("tls_profile takes at most one custom object, and was given %d; put every setting in one object", len(elems)))
		return
	}
	if typ == "" {
		resp.Error = function.NewArgumentFuncError(0, "type is empty; use one of: "+strings.Join(tlsprofile.ValidTypes(), ", "))
		return
	}
	spec, known, err := tlsProfileSpec(typ, custom)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(1, err.Error())
		return
	}
	if !known {
		resp.Error = resp.Result.Set(ctx, types.ObjectUnknown(tlsProfileResultType.AttrTypes))
		return
	}
	result, err := resolveTLSProfile(spec)
	if err != nil {
		// Terraform names the argument; the message need not repeat it.
		arg, msg := int64(1), err.Error()
		var fe *field.Error
		if errors.As(err, &fe) && fe.Field == "type" {
			arg, msg = 0, strings.TrimPrefix(msg, "type: ")
		}
		resp.Error = function.NewArgumentFuncError(arg, msg)
		return
	}
	resp.Error = resp.Result.Set(ctx, result)
}

// tlsProfileSpec reads the arguments into the static spec the resource's
// profile block would give; known is false while part of custom is unknown.
func tlsProfileSpec(typ string, custom types.Dynamic) (spec tlsprofile.Spec, known bool, err error) {
	spec = tlsprofile.Spec{Type: tlsprofile.ProfileType(typ), Source: tlsprofile.SourceStatic}
	if custom.IsUnknown() || custom.IsUnderlyingValueUnknown() {
		return spec, false, nil
	}
	if custom.IsNull() || custom.IsUnderlyingValueNull() {
		return spec, true, nil
	}
	valid := []string{customMinTLSVersion, customCiphers, customGroups, customFIPS}
	var attrs map[string]attr.Value
	switch v := custom.UnderlyingValue().(type) {
	case basetypes.ObjectValue:
		attrs = v.Attributes()
	case basetypes.MapValue:
		attrs = v.Elements()
	default:
		return spec, false, fmt.Errorf("must be null or an object with the attributes %s, not %s", strings.Join(valid, ", "), v.Type(context.Background()))
	}
	known = true
	for name, v := range attrs {
		if name == "curves" {
			return spec, false, fmt.Errorf("unknown attribute %q: it is called %s now, as in OpenShift's API", name, customGroups)
		}
		if !slices.Contains(valid, name) {
			return spec, false, fmt.Errorf("unknown attribute %q; use %s", name, strings.Join(valid, ", "))
		}
		if v.IsUnknown() {
			known = false
			continue
		}
		if v.IsNull() {
			continue
		}
		switch name {
		case customMinTLSVersion:
			s, ok := v.(basetypes.StringValue)
			if !ok {
				return spec, false, fmt.Errorf("%s must be a string such as %q, not %s", name, tlsprofile.VersionTLS12, v.Type(context.Background()))
			}
			spec.MinTLSVersion = tlsprofile.TLSVersion(s.ValueString())
		case customFIPS:
			b, ok := v.(basetypes.BoolValue)
			if !ok {
				return spec, false, fmt.Errorf("%s must be a bool, not %s", name, v.Type(context.Background()))
			}
			spec.FIPS = b.ValueBool()
		case customCiphers, customGroups:
			items, itemsKnown, err := stringItems(name, v)
			if err != nil {
				return spec, false, err
			}
			known = known && itemsKnown
			if name == customCiphers {
				spec.Ciphers = items
			} else {
				spec.Groups = items
			}
		}
	}
	return spec, known, nil
}

// stringItems reads a list, tuple or set of strings (a literal `["a", "b"]`
// arrives as a tuple).
func stringItems(name string, v attr.Value) ([]string, bool, error) {
	var elems []attr.Value
	switch c := v.(type) {
	case basetypes.TupleValue:
		elems = c.Elements()
	case basetypes.ListValue:
		elems = c.Elements()
	case basetypes.SetValue:
		elems = c.Elements()
	default:
		return nil, false, fmt.Errorf("%s must be a list of strings, not %s", name, v.Type(context.Background()))
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		if e.IsUnknown() {
			return nil, false, nil
		}
		s, ok := e.(basetypes.StringValue)
		if !ok || s.IsNull() {
			return nil, false, fmt.Errorf("%s[%d] must be a string, not %s", name, i, e)
		}
		out = append(out, s.ValueString())
	}
	return out, true, nil
}

// resolveTLSProfile validates and resolves spec exactly as the resource's
// ValidateConfig and ModifyPlan do for a static profile, and fills the
// result from the resolved document by the resource's own setResolved.
func resolveTLSProfile(spec tlsprofile.Spec) (types.Object, error) {
	if err := tlsprofile.ValidateSpec(spec); err != nil {
		return types.Object{}, functionFieldError(err)
	}
	res, warnings, err := tlsprofile.Resolve(spec, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		return types.Object{}, functionFieldError(err)
	}
	var m tlsProfileModel
	if err := m.setResolved(res.JSON); err != nil {
		return types.Object{}, fmt.Errorf("the resolved profile does not read back: %w", err)
	}
	return types.ObjectValueMust(tlsProfileResultType.AttrTypes, map[string]attr.Value{
		"type":            types.StringValue(string(res.Document.Type)),
		"min_tls_version": m.MinTLSVersion,
		"cipher_suites":   m.CipherSuites,
		"groups":          m.Groups,
		"component_args":  m.ComponentArgs,
		"fips_dropped":    m.FIPSDropped,
		"hash":            m.Hash,
		"profile_json":    m.ProfileJSON,
		"warnings":        listValue(nonNilStrings(warnings)),
	}), nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// functionFieldError names tlsprofile's fields as the function's custom
// argument spells them (min_tls_version, not minTLSVersion), keeping the
// *field.Error (or the joined ones) reachable.
func functionFieldError(err error) error {
	msg := strings.ReplaceAll(fieldErrorText(err), "minTLSVersion", customMinTLSVersion)
	msg = strings.ReplaceAll(msg, "\n", "; ")
	return &renamedError{msg: msg, err: err}
}

type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }
