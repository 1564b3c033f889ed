package tlsprofile

import (
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestSingleValueValidators(t *testing.T) {
	tests := []struct {
		name     string
		validate func(string) error
		value    string
		errHas   string // empty: valid
	}{
		{"type empty is the default", ValidateType, "", ""},
		{"type Custom", ValidateType, "Custom", ""},
		{"type is case-sensitive, as in OpenShift", ValidateType, "modern", `unknown profile type "modern"; use one of: Old, Intermediate, Modern, Custom`},
		{"version", ValidateTLSVersion, "VersionTLS13", ""},
		{"version unknown", ValidateTLSVersion, "TLS1.3", `unknown TLS version "TLS1.3"; use one of: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13`},
		{"version empty", ValidateTLSVersion, "", `unknown TLS version; use one of`},
		{"cipher OpenSSL", ValidateCipher, "ECDHE-RSA-AES128-GCM-SHA256", ""},
		{"cipher IANA", ValidateCipher, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", ""},
		{"cipher lower case", ValidateCipher, "ecdhe-rsa-aes128-gcm-sha256", ""},
		{"cipher TLS 1.3", ValidateCipher, "TLS_AES_128_GCM_SHA256", ""},
		{"cipher real but not in Go", ValidateCipher, "DHE-RSA-AES128-GCM-SHA256", ""},
		{"cipher unknown", ValidateCipher, "RC4-SHA", `unknown cipher "RC4-SHA"; use one of: AES128-GCM-SHA256,`},
		{"curve OpenShift name", ValidateCurve, "secp256r1", ""},
		{"curve alias", ValidateCurve, "P-384", ""},
		{"curve any case", ValidateCurve, "x25519mlkem768", ""},
		{"curve unknown", ValidateCurve, "X448", `unknown curve "X448"; use one of: X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, X25519, secp256r1, secp384r1, secp521r1, P-256`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.validate(tt.value)
			if tt.errHas == "" {
				if err != nil {
					t.Fatalf("%q: %v", tt.value, err)
				}
				return
			}
			var fe *field.Error
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want a *field.Error containing %q", err, tt.errHas)
			}
			if fe.Field != "" {
				t.Errorf("a single-value validator set Field %q; its caller knows the place", fe.Field)
			}
		})
	}
}

func TestValidateSpec(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		fields []string // the *field.Error fields, in order; none: valid
		errHas []string
	}{
		{name: "empty spec is Intermediate", spec: Spec{}},
		{name: "predefined", spec: Spec{Type: ProfileOld}},
		{name: "custom", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256"}, Curves: []string{"X25519", "P-256"}}},
		{name: "custom with a name Go lacks still validates (Resolve warns)", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"}}},
		{name: "unknown type", spec: Spec{Type: "Strong"}, fields: []string{"type"}},
		{name: "custom fields on a predefined type", spec: Spec{Type: ProfileIntermediate, MinTLSVersion: VersionTLS13}, fields: []string{"custom"}},
		{
			name:   "every bad name at once, each at its index",
			spec:   Spec{Type: ProfileCustom, MinTLSVersion: "VersionTLS9", Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256", "BOGUS"}, Curves: []string{"P-256", "X448", "secp256r1"}},
			fields: []string{"custom.minTLSVersion", "custom.ciphers[1]", "custom.curves[1]", "custom.curves[2]"},
			errHas: []string{`custom.curves[2]: Invalid value: duplicate curve "secp256r1"; curves[0] already names secp256r1`},
		},
		{name: "custom without a minimum", spec: Spec{Type: ProfileCustom, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256"}}, fields: []string{"custom.minTLSVersion"}, errHas: []string{"is required with type Custom"}},
		{name: "valid names that cannot be honoured", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"TLS_AES_128_GCM_SHA256"}}, fields: []string{"custom.ciphers"}, errHas: []string{"no TLS 1.0–1.2 cipher Go can use is left"}},
		{name: "cluster paths", spec: Spec{Type: ProfileCustom, MinTLSVersion: "x", Source: SourceCluster}, fields: []string{"spec.tlsSecurityProfile.custom.minTLSVersion"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateSpec(tt.spec)
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("ValidateSpec: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateSpec accepted %+v", tt.spec)
			}
			var got []string
			for _, e := range unjoin(err) {
				var fe *field.Error
				if !errors.As(e, &fe) {
					t.Fatalf("%v is not a *field.Error", e)
				}
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("fields = %q, want %q\n%v", got, tt.fields, err)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q:\n%v", s, err)
				}
			}
		})
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestFieldErrorMessage(t *testing.T) {
	err := fieldError("custom.curves[0]", "X448", "unknown curve", "pick another", []string{"X25519", "secp256r1"})
	if got, want := err.Detail, `unknown curve "X448"; pick another; use one of: X25519, secp256r1`; got != want {
		t.Errorf("Detail = %q, want %q", got, want)
	}
	if got, want := err.Error(), `custom.curves[0]: Unsupported value: unknown curve "X448"; pick another; use one of: X25519, secp256r1`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if err := fieldError("type", "", "is missing", "", nil); err.Type != field.ErrorTypeInvalid || err.Error() != "type: Invalid value: is missing" {
		t.Errorf("without valid names: %q (%s), want an Invalid value", err.Error(), err.Type)
	}
}

func TestCurveNames(t *testing.T) {
	tests := []struct {
		names []string
		id    tls.CurveID
	}{
		{[]string{"X25519MLKEM768", "x25519mlkem768"}, tls.X25519MLKEM768},
		{[]string{"SecP256r1MLKEM768"}, tls.SecP256r1MLKEM768},
		{[]string{"SecP384r1MLKEM1024"}, tls.SecP384r1MLKEM1024},
		{[]string{"X25519", "x25519"}, tls.X25519},
		{[]string{"secp256r1", "P-256", "prime256v1", "CurveP256"}, tls.CurveP256},
		{[]string{"secp384r1", "P-384", "CurveP384"}, tls.CurveP384},
		{[]string{"secp521r1", "P-521", "CurveP521"}, tls.CurveP521},
	}
	for _, tt := range tests {
		for _, n := range tt.names {
			if id, err := ParseCurve(n); err != nil || id != tt.id {
				t.Errorf("ParseCurve(%q) = %v, %v; want %v", n, id, err, tt.id)
			}
		}
		if name, ok := CurveName(tt.id); !ok || name != tt.names[0] {
			t.Errorf("CurveName(%v) = %q, %v; want %q", tt.id, name, ok, tt.names[0])
		}
	}
	if _, ok := CurveName(tls.CurveID(0x4242)); ok {
		t.Error("CurveName knows an unknown curve")
	}
	if got := len(ValidCurves()); got != 14 {
		t.Errorf("%d curve names, want 14", got)
	}
}
