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
		{"group", ValidateGroup, "secp256r1", ""},
		{"group, hybrid", ValidateGroup, "SecP384r1MLKEM1024", ""},
		{"group alias: refused, with OpenShift's spelling", ValidateGroup, "P-384", `unknown group "P-384"; OpenShift spells it secp384r1; use one of: X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, X25519, secp256r1, secp384r1, secp521r1`},
		{"group is case-sensitive, as OpenShift's enum", ValidateGroup, "x25519mlkem768", `unknown group "x25519mlkem768"; write it X25519MLKEM768`},
		{"group unknown", ValidateGroup, "X448", `unknown group "X448"; use one of: X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, X25519, secp256r1, secp384r1, secp521r1`},
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
		{name: "custom", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256"}, Groups: []string{"X25519", "secp256r1"}}},
		{name: "custom with a name Go lacks still validates (Resolve warns)", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"}}},
		{name: "unknown type", spec: Spec{Type: "Strong"}, fields: []string{"type"}},
		{name: "custom fields on a predefined type", spec: Spec{Type: ProfileIntermediate, MinTLSVersion: VersionTLS13}, fields: []string{"custom"}},
		{
			name:   "every bad name at once, each at its index",
			spec:   Spec{Type: ProfileCustom, MinTLSVersion: "VersionTLS9", Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256", "BOGUS"}, Groups: []string{"secp256r1", "X448", "secp256r1"}},
			fields: []string{"custom.minTLSVersion", "custom.ciphers[1]", "custom.groups[1]", "custom.groups[2]"},
			errHas: []string{`custom.groups[2]: Invalid value: duplicate group "secp256r1"; groups[0] already names it; groups is a set`},
		},
		{
			name:   "more than 7 groups",
			spec:   Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS13, Groups: []string{"X25519", "secp256r1", "secp384r1", "secp521r1", "X25519MLKEM768", "SecP256r1MLKEM768", "SecP384r1MLKEM1024", "X25519"}},
			fields: []string{"custom.groups", "custom.groups[7]"},
			errHas: []string{"names 8 groups, more than the 7 OpenShift allows"},
		},
		{name: "an empty groups list", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS13, Groups: []string{}}, fields: []string{"custom.groups"}, errHas: []string{"leave groups out for the TLS library defaults"}},
		{name: "fips on a predefined type is not a custom setting", spec: Spec{Type: ProfileOld, FIPS: true}},
		{name: "fips leaving no group", spec: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS13, Groups: []string{"X25519"}, FIPS: true}, fields: []string{"custom.groups"}, errHas: []string{"names no FIPS-approved group"}},
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
	err := fieldError("custom.groups[0]", "X448", "unknown group", "pick another", []string{"X25519", "secp256r1"})
	if got, want := err.Detail, `unknown group "X448"; pick another; use one of: X25519, secp256r1`; got != want {
		t.Errorf("Detail = %q, want %q", got, want)
	}
	if got, want := err.Error(), `custom.groups[0]: Unsupported value: unknown group "X448"; pick another; use one of: X25519, secp256r1`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if err := fieldError("type", "", "is missing", "", nil); err.Type != field.ErrorTypeInvalid || err.Error() != "type: Invalid value: is missing" {
		t.Errorf("without valid names: %q (%s), want an Invalid value", err.Error(), err.Type)
	}
}

// The groups are OpenShift's TLSGroup enum (openshift/api config/v1, see
// ProfileSourceVersion), each Go's curve ID, listed in Go's own preference
// order, and FIPS-approved only for the NIST P-curves (openshift/api#2983).
func TestGroupNames(t *testing.T) {
	tests := []struct {
		name string
		id   tls.CurveID
		wire uint16 // the IANA TLS Supported Groups code point
		fips bool
	}{
		{"X25519MLKEM768", tls.X25519MLKEM768, 4588, false},
		{"SecP256r1MLKEM768", tls.SecP256r1MLKEM768, 4587, false},
		{"SecP384r1MLKEM1024", tls.SecP384r1MLKEM1024, 4589, false},
		{"X25519", tls.X25519, 29, false},
		{"secp256r1", tls.CurveP256, 23, true},
		{"secp384r1", tls.CurveP384, 24, true},
		{"secp521r1", tls.CurveP521, 25, true},
	}
	var names []string
	for _, tt := range tests {
		names = append(names, tt.name)
		id, err := ParseGroup(tt.name)
		if err != nil || id != tt.id || uint16(id) != tt.wire {
			t.Errorf("ParseGroup(%q) = %v (%d), %v; want %v (%d)", tt.name, id, uint16(id), err, tt.id, tt.wire)
		}
		if name, ok := GroupName(tt.id); !ok || name != tt.name {
			t.Errorf("GroupName(%v) = %q, %v; want %q", tt.id, name, ok, tt.name)
		}
		if GroupIsFIPSApproved(tt.id) != tt.fips {
			t.Errorf("GroupIsFIPSApproved(%s) = %v, want %v", tt.name, !tt.fips, tt.fips)
		}
		if !goKnows(tt.id) {
			t.Errorf("this Go does not implement %s; Go 1.26 does", tt.name)
		}
	}
	if !slices.Equal(ValidGroups(), names) {
		t.Errorf("ValidGroups() = %q, want %q", ValidGroups(), names)
	}
	if _, ok := GroupName(tls.CurveID(0x4242)); ok {
		t.Error("GroupName knows an unknown group")
	}
	if goKnows(tls.CurveID(0x4242)) {
		t.Error("goKnows claims an unassigned curve ID")
	}
	// Go's own order, which the resolved groups follow: the default
	// preference list of this Go, as a client offers it.
	if got := goDefaultOrder(t); !slices.Equal(got, []tls.CurveID{tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024, tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}) {
		t.Errorf("Go's default group order is %v; groupTable must follow it", got)
	}
}

// goDefaultOrder is the groups a Go client with no CurvePreferences offers,
// in its order, as a server sees them in the ClientHello.
func goDefaultOrder(t *testing.T) []tls.CurveID {
	t.Helper()
	certs, pool := serverCerts(t)
	var offered []tls.CurveID
	server := &tls.Config{Certificates: certs, GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		offered = slices.Clone(hello.SupportedCurves)
		return nil, nil
	}}
	if _, err := handshake(t, server, &tls.Config{ServerName: wireServerName, RootCAs: pool}); err != nil {
		t.Fatal(err)
	}
	return offered
}
