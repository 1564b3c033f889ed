package provider

import (
	"context"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// tlsCustomCase is a Custom profile with an OpenSSL name, an IANA name, a
// name Go cannot use (dropped with a warning) and two groups, not in Go's
// order (which the resolved groups follow).
var tlsCustomCase = struct {
	hcl, minVersion string
	ciphers, groups []string
}{
	hcl:        `{ min_tls_version = "VersionTLS12", ciphers = ["ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES128-GCM-SHA256"], groups = ["secp256r1", "X25519"] }`,
	minVersion: "VersionTLS12",
	ciphers:    []string{"ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES128-GCM-SHA256"},
	groups:     []string{"secp256r1", "X25519"},
}

// TestTLSProfileFunctionIsTheResource: for every predefined type, with and
// without fips, and a Custom profile, tls_profile() gives exactly the computed attributes the
// resource plans (its own resolve and setResolved), and the warnings the
// resource would show.
func TestTLSProfileFunctionIsTheResource(t *testing.T) {
	ctx := context.Background()
	custom := &tlsCustomBlock{MinTLSVersion: types.StringValue(tlsCustomCase.minVersion),
		Ciphers: listValue(tlsCustomCase.ciphers), Groups: listValue(tlsCustomCase.groups)}
	for _, tt := range []struct {
		typ    string
		custom *tlsCustomBlock
		fips   bool
	}{{typ: "Old"}, {typ: "Intermediate"}, {typ: "Modern"}, {typ: "Custom", custom: custom},
		{typ: "Old", fips: true}, {typ: "Intermediate", fips: true}, {typ: "Modern", fips: true}, {typ: "Custom", custom: custom, fips: true}} {
		t.Run(fmt.Sprintf("%s fips=%v", tt.typ, tt.fips), func(t *testing.T) {
			// The resource: its plan-time path for a static profile.
			m := tlsProfileModel{Source: types.StringValue(string(tlsprofile.SourceStatic)), FIPS: types.BoolValue(tt.fips),
				Profile: &tlsProfileBlock{Type: types.StringValue(tt.typ), Custom: tt.custom}}
			var diags diag.Diagnostics
			res, known := (&tlsProfileResource{}).resolve(ctx, &m, &diags)
			if !known || diags.HasError() {
				t.Fatalf("resource resolve: known=%v %v", known, diags)
			}
			if err := m.setResolved(res.JSON); err != nil {
				t.Fatal(err)
			}
			var resourceWarnings []string
			for _, d := range diags.Warnings() {
				resourceWarnings = append(resourceWarnings, d.Detail())
			}

			// The function, from the same values as HCL would give them.
			arg := types.DynamicNull()
			switch {
			case tt.custom != nil:
				arg = types.DynamicValue(types.ObjectValueMust(
					map[string]attr.Type{"min_tls_version": types.StringType, "ciphers": types.TupleType{ElemTypes: stringTypes(len(tlsCustomCase.ciphers))}, "groups": types.ListType{ElemType: types.StringType}, "fips": types.BoolType},
					map[string]attr.Value{"min_tls_version": tt.custom.MinTLSVersion, "ciphers": tupleValue(tlsCustomCase.ciphers), "groups": tt.custom.Groups, "fips": types.BoolValue(tt.fips)}))
			case tt.fips:
				arg = types.DynamicValue(types.ObjectValueMust(map[string]attr.Type{"fips": types.BoolType}, map[string]attr.Value{"fips": types.BoolValue(true)}))
			}
			spec, known, err := tlsProfileSpec(tt.typ, arg)
			if err != nil || !known {
				t.Fatalf("tlsProfileSpec: known=%v %v", known, err)
			}
			got, err := resolveTLSProfile(spec)
			if err != nil {
				t.Fatal(err)
			}
			a := got.Attributes()
			for name, want := range map[string]attr.Value{
				"type": types.StringValue(tt.typ), "min_tls_version": m.MinTLSVersion, "cipher_suites": m.CipherSuites,
				"groups": m.Groups, "component_args": m.ComponentArgs, "fips_dropped": m.FIPSDropped, "hash": m.Hash, "profile_json": m.ProfileJSON,
			} {
				if !a[name].Equal(want) {
					t.Errorf("%s: function %s, resource %s", name, a[name], want)
				}
			}
			var warnings []string
			if diags := a["warnings"].(types.List).ElementsAs(ctx, &warnings, false); diags.HasError() {
				t.Fatal(diags)
			}
			if len(warnings) != len(resourceWarnings) || (len(warnings) > 0 && !reflect.DeepEqual(warnings, resourceWarnings)) {
				t.Errorf("warnings: function %q, resource %q", warnings, resourceWarnings)
			}
		})
	}
}

func stringTypes(n int) []attr.Type {
	out := make([]attr.Type, n)
	for i := range out {
		out[i] = types.StringType
	}
	return out
}

func tupleValue(items []string) types.Tuple {
	vals := make([]attr.Value, len(items))
	for i, s := range items {
		vals[i] = types.StringValue(s)
	}
	return types.TupleValueMust(stringTypes(len(items)), vals)
}

// TestTLSProfileSpec: the custom argument as HCL gives it (objects with
// tuples, lists or sets; maps; null) and what it refuses, by name.
func TestTLSProfileSpec(t *testing.T) {
	obj := func(attrs map[string]attr.Value) types.Dynamic {
		typesOf := map[string]attr.Type{}
		for k, v := range attrs {
			typesOf[k] = v.Type(context.Background())
		}
		return types.DynamicValue(types.ObjectValueMust(typesOf, attrs))
	}
	strs := func(items ...string) types.Set {
		vals := make([]attr.Value, len(items))
		for i, s := range items {
			vals[i] = types.StringValue(s)
		}
		return types.SetValueMust(types.StringType, vals)
	}
	for _, tt := range []struct {
		name      string
		custom    types.Dynamic
		want      tlsprofile.Spec
		wantKnown bool
		wantErr   string
	}{
		{name: "null", custom: types.DynamicNull(), want: tlsprofile.Spec{}, wantKnown: true},
		{name: "null underneath", custom: types.DynamicValue(types.ObjectNull(map[string]attr.Type{})), want: tlsprofile.Spec{}, wantKnown: true},
		{name: "empty object", custom: obj(map[string]attr.Value{}), want: tlsprofile.Spec{}, wantKnown: true},
		{name: "tuple and set", custom: obj(map[string]attr.Value{"min_tls_version": types.StringValue("VersionTLS13"), "ciphers": tupleValue([]string{"a", "b"}), "groups": strs("X25519")}),
			want: tlsprofile.Spec{MinTLSVersion: "VersionTLS13", Ciphers: []string{"a", "b"}, Groups: []string{"X25519"}}, wantKnown: true},
		{name: "fips", custom: obj(map[string]attr.Value{"min_tls_version": types.StringValue("VersionTLS13"), "fips": types.BoolValue(true)}),
			want: tlsprofile.Spec{MinTLSVersion: "VersionTLS13", FIPS: true}, wantKnown: true},
		{name: "null attribute", custom: obj(map[string]attr.Value{"min_tls_version": types.StringValue("VersionTLS12"), "groups": types.ListNull(types.StringType)}),
			want: tlsprofile.Spec{MinTLSVersion: "VersionTLS12"}, wantKnown: true},
		{name: "map", custom: types.DynamicValue(types.MapValueMust(types.StringType, map[string]attr.Value{"min_tls_version": types.StringValue("VersionTLS12")})),
			want: tlsprofile.Spec{MinTLSVersion: "VersionTLS12"}, wantKnown: true},
		{name: "unknown", custom: types.DynamicUnknown()},
		{name: "unknown attribute", custom: obj(map[string]attr.Value{"min_tls_version": types.StringUnknown()})},
		{name: "unknown element", custom: obj(map[string]attr.Value{"ciphers": types.TupleValueMust([]attr.Type{types.StringType}, []attr.Value{types.StringUnknown()})})},
		{name: "misspelt attribute", custom: obj(map[string]attr.Value{"group": tupleValue([]string{"X25519"})}), wantErr: `unknown attribute "group"; use min_tls_version, ciphers, groups, fips`},
		{name: "the older name, curves", custom: obj(map[string]attr.Value{"curves": tupleValue([]string{"X25519"})}), wantErr: `unknown attribute "curves": it is called groups now`},
		{name: "fips not a bool", custom: obj(map[string]attr.Value{"fips": types.StringValue("yes")}), wantErr: `fips must be a bool`},
		{name: "version not a string", custom: obj(map[string]attr.Value{"min_tls_version": types.NumberValue(big.NewFloat(12))}), wantErr: `min_tls_version must be a string such as "VersionTLS12"`},
		{name: "ciphers a string", custom: obj(map[string]attr.Value{"min_tls_version": types.NumberNull(), "ciphers": types.StringValue("x")}), wantErr: "ciphers must be a list of strings"},
		{name: "a string", custom: types.DynamicValue(types.StringValue("Modern")), wantErr: "must be null or an object"},
		{name: "list of numbers", custom: obj(map[string]attr.Value{"ciphers": types.TupleValueMust([]attr.Type{types.Int64Type}, []attr.Value{types.Int64Value(1)})}), wantErr: "ciphers[0] must be a string"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, known, err := tlsProfileSpec("Custom", tt.custom)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Type, tt.want.Source = "Custom", tlsprofile.SourceStatic
			if known != tt.wantKnown || (known && !reflect.DeepEqual(spec, tt.want)) {
				t.Fatalf("spec %+v known %v, want %+v known %v", spec, known, tt.want, tt.wantKnown)
			}
		})
	}
}

// outputsEqualResource checks that each output equals the resource's
// attribute of the same name (lists joined with commas by the config).
func outputsEqualResource(names ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[tlsAddr]
		if rs == nil {
			return fmt.Errorf("%s not in state", tlsAddr)
		}
		for _, name := range names {
			out := s.RootModule().Outputs[name]
			if out == nil {
				return fmt.Errorf("output %s not in state", name)
			}
			want := rs.Primary.Attributes[name]
			if n, ok := rs.Primary.Attributes[name+".#"]; ok {
				count, err := strconv.Atoi(n)
				if err != nil {
					return fmt.Errorf("%s.# = %q", name, n)
				}
				items := make([]string, count)
				for i := range items {
					items[i] = rs.Primary.Attributes[fmt.Sprintf("%s.%d", name, i)]
				}
				want = strings.Join(items, ",")
			}
			if out.Value != want {
				return fmt.Errorf("output %s = %q, resource %s = %q", name, out.Value, name, want)
			}
		}
		return nil
	}
}

// TestAccFunction_tlsProfile: tls_profile() equals what
// kmshealth_tls_profile_configmap writes for the same profile (predefined
// and Custom), through the CLI, beside a live ConfigMap; a Custom profile's
// result is pinned whole.
func TestAccFunction_tlsProfile(t *testing.T) {
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	config := func(typ, customBlock, customArg string) string {
		call := fmt.Sprintf("provider::kmshealth::tls_profile(%q%s)", typ, customArg)
		return tlsConfig(fmt.Sprintf("namespace = %q\nname = \"from-function\"\nprofile {\n  type = %q\n%s}", ns, typ, customBlock)) +
			fmt.Sprintf("locals {\n  p = %s\n}\n", call) +
			functionOutput("profile", "local.p") +
			functionOutput("hash", "local.p.hash") + functionOutput("profile_json", "local.p.profile_json") +
			functionOutput("min_tls_version", "local.p.min_tls_version") +
			functionOutput("cipher_suites", `join(",", local.p.cipher_suites)`) + functionOutput("groups", `join(",", local.p.groups)`) +
			functionOutput("component_args", `join(",", local.p.component_args)`) + functionOutput("fips_dropped", `join(",", local.p.fips_dropped)`)
	}
	customBlock := fmt.Sprintf("  custom {\n    min_tls_version = %q\n    ciphers = %s\n    groups = %s\n  }\n",
		tlsCustomCase.minVersion, hclList(tlsCustomCase.ciphers), hclList(tlsCustomCase.groups))
	same := outputsEqualResource("hash", "profile_json", "min_tls_version", "cipher_suites", "groups", "component_args", "fips_dropped")
	const customJSON = `{
  "type": "Custom",
  "minTLSVersion": "VersionTLS12",
  "ciphers": [
    "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "DHE-RSA-AES128-GCM-SHA256"
  ],
  "cipherSuites": [
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
  ],
  "groups": [
    "secp256r1",
    "X25519"
  ],
  "curvePreferences": [
    "X25519",
    "secp256r1"
  ],
  "componentArgs": [
    "--tls-min-version=VersionTLS12",
    "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "--tls-curve-preferences=29,23"
  ],
  "source": "static"
}
`
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   functionVersionChecks,
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkTLSProfileGone(ns, "from-function"),
		Steps: []resource.TestStep{{
			Config: config("Intermediate", "", ""),
			Check:  resource.ComposeAggregateTestCheckFunc(checkTLSProfileLive(ns, "from-function"), same),
		}, {
			Config: config("Modern", "", ""),
			Check:  resource.ComposeAggregateTestCheckFunc(checkTLSProfileLive(ns, "from-function"), same),
		}, {
			Config: config("Custom", customBlock, ", "+tlsCustomCase.hcl),
			Check:  resource.ComposeAggregateTestCheckFunc(checkTLSProfileLive(ns, "from-function"), same),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("profile", knownvalue.ObjectExact(map[string]knownvalue.Check{
					"type":            knownvalue.StringExact("Custom"),
					"min_tls_version": knownvalue.StringExact("VersionTLS12"),
					"cipher_suites": knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), knownvalue.StringExact("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
					}),
					"groups": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("X25519"), knownvalue.StringExact("secp256r1")}),
					"component_args": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("--tls-min-version=VersionTLS12"),
						knownvalue.StringExact("--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
						knownvalue.StringExact("--tls-curve-preferences=29,23")}),
					"fips_dropped": knownvalue.ListExact([]knownvalue.Check{}),
					"hash":         knownvalue.StringExact(tlsprofile.HashJSON([]byte(customJSON))),
					"profile_json": knownvalue.StringExact(customJSON),
					"warnings": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(
						"Custom profile: dropped ciphers Go cannot use: DHE-RSA-AES128-GCM-SHA256 (TLS_DHE_RSA_WITH_AES_128_GCM_SHA256: not implemented by Go crypto/tls)")}),
				})),
			},
		}},
	})
}

func hclList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// TestAccFunction_tlsProfileBadInput: each mistake is an error naming the
// argument and attribute, with the valid values, at plan time.
func TestAccFunction_tlsProfileBadInput(t *testing.T) {
	step := func(typ, custom string, want *regexp.Regexp) resource.TestStep {
		return resource.TestStep{
			Config:      functionOutput("p", fmt.Sprintf("provider::kmshealth::tls_profile(%q%s)", typ, custom)),
			ExpectError: want,
		}
	}
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionVersionChecks,
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			step("Strict", "", literalRE(`Invalid value for "type" parameter: unknown profile type "Strict"`, "use one of: Old, Intermediate, Modern, Custom")),
			step("", "", literalRE("type is empty; use one of: Old, Intermediate, Modern, Custom")),
			step("Intermediate", `, { min_tls_version = "VersionTLS13" }`, literalRE(`Invalid value for "custom" parameter`, "only used with type Custom", "set type to Custom")),
			step("Custom", `, { min_tls_version = "VersionTLS12", group = ["X25519"] }`, literalRE(`Invalid value for "custom" parameter: unknown attribute "group"; use min_tls_version, ciphers, groups, fips`)),
			step("Custom", `, { min_tls_version = "VersionTLS12", curves = ["X25519"] }`, literalRE(`Invalid value for "custom" parameter: unknown attribute "curves": it is called groups now`)),
			step("Custom", `, { min_tls_version = "VersionTLS13", groups = ["X25519"], fips = true }`, literalRE("custom.groups", "names no FIPS-approved group")),
			step("Custom", `, { ciphers = ["ECDHE-RSA-AES128-GCM-SHA256"] }`, literalRE("custom.min_tls_version", "VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13")),
			step("Custom", `, { min_tls_version = "VersionTLS12", groups = ["P-256"] }`, literalRE(`custom.groups`, `unknown group "P-256"; OpenShift spells it secp256r1`)),
			step("Custom", `, { min_tls_version = "VersionTLS12", ciphers = ["DHE-RSA-AES128-GCM-SHA256"] }`, literalRE("custom.ciphers", "no TLS 1.0–1.2 cipher Go can use is left")),
			step("Custom", `, { min_tls_version = "VersionTLS12" }, { groups = ["X25519"] }`, literalRE(`Invalid value for "custom" parameter: tls_profile takes at most one custom object, and was given 2`)),
		},
	})
}
