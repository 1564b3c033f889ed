package tlsprofile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestResolve(t *testing.T) {
	custom := func(min TLSVersion, ciphers []string, groups ...string) Spec {
		return Spec{Type: ProfileCustom, MinTLSVersion: min, Ciphers: ciphers, Groups: groups}
	}
	predefinedGroups := []string{"X25519MLKEM768", "X25519", "secp256r1", "secp384r1"}
	tests := []struct {
		name      string
		spec      Spec
		adherence Adherence

		// on success
		typ        ProfileType
		min        TLSVersion
		suites     []string
		curvePrefs []string // nil: library defaults
		source     Source
		warnings   []string // substrings, one per warning, in order

		// on failure
		errField string
		errHas   []string
	}{
		{
			name: "empty type means Intermediate",
			spec: Spec{}, typ: ProfileIntermediate, min: VersionTLS12, source: SourceStatic,
			suites:     []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
			curvePrefs: predefinedGroups,
		},
		{
			name: "OpenSSL, IANA and Go alias names, any case, deduplicated, in given order",
			spec: custom(VersionTLS12, []string{"ecdhe-rsa-aes256-gcm-sha384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites: []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
		},
		{
			name: "TLS 1.3 suites are never configured",
			spec: custom(VersionTLS12, []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"}),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		},
		{
			name: "some TLS 1.3 suites named: warned that Go enables all three",
			spec: custom(VersionTLS12, []string{"TLS_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256"}),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites:   []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
			warnings: []string{"custom.ciphers names only some TLS 1.3 suites (TLS_AES_256_GCM_SHA384); Go always enables all three"},
		},
		{
			name:      "legacy drops names Go cannot use, with a warning listing them",
			spec:      custom(VersionTLS12, []string{"DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "NOPE-CIPHER", "ECDHE-RSA-AES256-SHA384"}),
			adherence: AdherenceLegacy,
			typ:       ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites:   []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			warnings: []string{"dropped ciphers Go cannot use: DHE-RSA-AES128-GCM-SHA256 (TLS_DHE_RSA_WITH_AES_128_GCM_SHA256: not implemented by Go crypto/tls), NOPE-CIPHER (unknown name), ECDHE-RSA-AES256-SHA384 (TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384: not implemented"},
		},
		{
			name:      "strict refuses names Go cannot use",
			spec:      custom(VersionTLS12, []string{"DHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"}),
			adherence: AdherenceStrict,
			errField:  "custom.ciphers",
			errHas:    []string{"Go cannot use DHE-RSA-AES128-GCM-SHA256", "StrictAllComponents refuses"},
		},
		{
			name:      "an unknown adherence is strict, and says so",
			spec:      custom(VersionTLS12, []string{"NOPE-CIPHER", "ECDHE-RSA-AES128-GCM-SHA256"}),
			adherence: "SomethingNew",
			errField:  "custom.ciphers",
			errHas:    []string{"NOPE-CIPHER (unknown name)"},
			warnings:  []string{`unknown tlsAdherence "SomethingNew": treated as StrictAllComponents`},
		},
		{
			name:     "below TLS 1.3 with only TLS 1.3 suites is refused, never an empty list",
			spec:     custom(VersionTLS12, []string{"TLS_AES_128_GCM_SHA256"}),
			errField: "custom.ciphers",
			errHas:   []string{"minTLSVersion VersionTLS12 allows TLS 1.2 and below, but no TLS 1.0–1.2 cipher Go can use is left", "or set minTLSVersion to VersionTLS13"},
			warnings: []string{"names only some TLS 1.3 suites"},
		},
		{
			name: "below TLS 1.3 with only unusable ciphers is refused under legacy too",
			spec: custom(VersionTLS11, []string{"DHE-RSA-AES256-SHA256"}), adherence: AdherenceLegacy,
			errField: "custom.ciphers",
			errHas:   []string{"no TLS 1.0–1.2 cipher Go can use is left (dropped: DHE-RSA-AES256-SHA256"},
			warnings: []string{"dropped ciphers Go cannot use: DHE-RSA-AES256-SHA256"},
		},
		{
			name:     "below TLS 1.3 with no ciphers at all is refused",
			spec:     custom(VersionTLS12, nil),
			errField: "custom.ciphers",
			errHas:   []string{"no TLS 1.0–1.2 cipher Go can use is left"},
		},
		{
			name: "TLS 1.3 minimum configures no cipher, and warns about TLS 1.2 names",
			spec: custom(VersionTLS13, []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"}),
			typ:  ProfileCustom, min: VersionTLS13, source: SourceStatic, suites: []string{},
			warnings: []string{"custom.ciphers: ECDHE-RSA-AES128-GCM-SHA256 never apply, because minTLSVersion is VersionTLS13"},
		},
		{
			name: "TLS 1.3 minimum with no ciphers is fine",
			spec: custom(VersionTLS13, nil),
			typ:  ProfileCustom, min: VersionTLS13, source: SourceStatic, suites: []string{},
		},
		{
			name: "TLS 1.0 minimum with only TLS 1.2 suites is warned",
			spec: custom(VersionTLS10, []string{"ECDHE-RSA-AES128-GCM-SHA256"}),
			typ:  ProfileCustom, min: VersionTLS10, source: SourceStatic,
			suites:   []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			warnings: []string{"minTLSVersion VersionTLS10, but every remaining cipher needs TLS 1.2"},
		},
		{
			name: "empty custom minimum: legacy uses TLS 1.2 with a warning",
			spec: custom("", []string{"ECDHE-RSA-AES128-GCM-SHA256"}),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites:   []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			warnings: []string{"custom.minTLSVersion is empty: using VersionTLS12"},
		},
		{
			name:      "empty custom minimum: strict refuses",
			spec:      custom("", []string{"ECDHE-RSA-AES128-GCM-SHA256"}),
			adherence: AdherenceStrict,
			errField:  "custom.minTLSVersion",
			errHas:    []string{"is empty", "VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13"},
		},
		{
			name:     "unknown minimum",
			spec:     custom("VersionTLS14", []string{"ECDHE-RSA-AES128-GCM-SHA256"}),
			errField: "custom.minTLSVersion",
			errHas:   []string{`unknown TLS version "VersionTLS14"`, "use one of: VersionTLS10"},
		},
		{
			name:     "unknown type lists the valid ones",
			spec:     Spec{Type: "Paranoid"},
			errField: "type",
			errHas:   []string{`unknown profile type "Paranoid"; use one of: Old, Intermediate, Modern, Custom`},
		},
		{
			name:     "custom settings on a predefined type",
			spec:     Spec{Type: ProfileModern, Groups: []string{"X25519"}},
			errField: "custom",
			errHas:   []string{"only used with type Custom, and type is Modern", "set type to Custom"},
		},
		{
			name: "groups are a filter on what Go offers, listed in Go's preference order",
			spec: custom(VersionTLS12, []string{"ECDHE-RSA-AES128-GCM-SHA256"}, "secp256r1", "secp384r1", "X25519", "secp521r1", "SecP256r1MLKEM768", "SecP384r1MLKEM1024", "X25519MLKEM768"),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites:     []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			curvePrefs: []string{"X25519MLKEM768", "SecP256r1MLKEM768", "SecP384r1MLKEM1024", "X25519", "secp256r1", "secp384r1", "secp521r1"},
		},
		{
			name: "legacy drops an unknown group with a warning",
			spec: custom(VersionTLS12, []string{"ECDHE-RSA-AES128-GCM-SHA256"}, "X25519", "brainpoolP256r1"),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites:     []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			curvePrefs: []string{"X25519"},
			warnings:   []string{"dropped groups Go cannot use: brainpoolP256r1 (unknown name)"},
		},
		{
			name:      "strict refuses a group Go cannot honour, naming the field",
			spec:      custom(VersionTLS12, []string{"ECDHE-RSA-AES128-GCM-SHA256"}, "X25519", "brainpoolP256r1"),
			adherence: AdherenceStrict,
			errField:  "custom.groups",
			errHas:    []string{"custom.groups: Unsupported value: Go cannot use brainpoolP256r1", "use one of: X25519MLKEM768"},
		},
		{
			name:      "strict refuses it in the cluster's APIServer too",
			spec:      Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS13, Groups: []string{"X448"}, Source: SourceCluster},
			adherence: "SomethingNewer",
			errField:  "spec.tlsSecurityProfile.custom.groups",
			errHas:    []string{"Go cannot use X448"},
			warnings:  []string{`unknown tlsAdherence "SomethingNewer"`},
		},
		{
			name:     "groups named but none usable is refused, never the library defaults",
			spec:     custom(VersionTLS12, []string{"ECDHE-RSA-AES128-GCM-SHA256"}, "brainpoolP256r1"),
			errField: "custom.groups",
			errHas:   []string{"names no group Go can use (brainpoolP256r1 (unknown name))", "remove groups to use the TLS library defaults"},
			warnings: []string{"dropped groups Go cannot use: brainpoolP256r1"},
		},
		{
			name: "only TLS 1.3 hybrid groups with TLS 1.2 ECDHE ciphers is warned",
			spec: custom(VersionTLS12, []string{"ECDHE-RSA-AES128-GCM-SHA256"}, "X25519MLKEM768"),
			typ:  ProfileCustom, min: VersionTLS12, source: SourceStatic,
			suites:     []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			curvePrefs: []string{"X25519MLKEM768"},
			warnings:   []string{"custom.groups names only TLS 1.3 hybrid groups"},
		},
		{
			name: "fips keeps the NIST curves and the AES-GCM suites, raises the minimum, says what it dropped",
			spec: Spec{Type: ProfileOld, FIPS: true},
			typ:  ProfileOld, min: VersionTLS12, source: SourceStatic,
			suites:     []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
			curvePrefs: []string{"secp256r1", "secp384r1"},
			warnings: []string{"Old profile with fips: dropped what FIPS does not approve: TLS_CHACHA20_POLY1305_SHA256, ECDHE-ECDSA-CHACHA20-POLY1305, ECDHE-RSA-CHACHA20-POLY1305, ECDHE-ECDSA-AES128-SHA256, " +
				"ECDHE-RSA-AES128-SHA256, ECDHE-ECDSA-AES128-SHA, ECDHE-RSA-AES128-SHA, ECDHE-ECDSA-AES256-SHA384, ECDHE-RSA-AES256-SHA384, ECDHE-ECDSA-AES256-SHA, ECDHE-RSA-AES256-SHA, " +
				"AES128-GCM-SHA256, AES256-GCM-SHA384, AES128-SHA256, AES256-SHA256, AES128-SHA, AES256-SHA, DES-CBC3-SHA, X25519MLKEM768, X25519; minTLSVersion VersionTLS10 raised to VersionTLS12"},
		},
		{
			name:     "fips leaving no TLS 1.2 cipher is refused at the ciphers",
			spec:     Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-CHACHA20-POLY1305"}, FIPS: true},
			errField: "custom.ciphers",
			errHas:   []string{"(not FIPS-approved: ECDHE-RSA-CHACHA20-POLY1305)"},
			warnings: []string{"dropped what FIPS does not approve: ECDHE-RSA-CHACHA20-POLY1305"},
		},
		{
			name:     "a cluster profile's errors name the APIServer field",
			spec:     Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Source: SourceCluster},
			errField: "spec.tlsSecurityProfile.custom.ciphers",
			errHas:   []string{"spec.tlsSecurityProfile.custom.ciphers: Invalid value: minTLSVersion VersionTLS12"},
		},
		{
			name: "a cluster profile records its source",
			spec: Spec{Type: ProfileModern, Source: SourceCluster},
			typ:  ProfileModern, min: VersionTLS13, source: SourceCluster, suites: []string{}, curvePrefs: predefinedGroups,
		},
		{
			name:     "unknown source",
			spec:     Spec{Source: "helm"},
			errField: "source",
			errHas:   []string{`unknown profile source "helm"; use one of: static, cluster`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, warnings, err := Resolve(tt.spec, tt.adherence)
			if len(warnings) != len(tt.warnings) {
				t.Errorf("warnings = %q, want %d", warnings, len(tt.warnings))
			} else {
				for i, w := range tt.warnings {
					if !strings.Contains(warnings[i], w) {
						t.Errorf("warning %d = %q, want it to contain %q", i, warnings[i], w)
					}
				}
			}
			if tt.errField != "" {
				var fe *field.Error
				if !errors.As(err, &fe) {
					t.Fatalf("err = %v, want a *field.Error at %s", err, tt.errField)
				}
				if fe.Field != tt.errField {
					t.Errorf("error field = %q, want %q (%v)", fe.Field, tt.errField, err)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				if r.JSON != nil || r.Hash != "" {
					t.Errorf("a refused profile still produced a document: %s", r.JSON)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			d := r.Document
			if d.Type != tt.typ || d.MinTLSVersion != tt.min || d.Source != tt.source {
				t.Errorf("type/min/source = %s %s %s, want %s %s %s", d.Type, d.MinTLSVersion, d.Source, tt.typ, tt.min, tt.source)
			}
			if !slices.Equal(d.CipherSuites, tt.suites) {
				t.Errorf("cipherSuites = %q, want %q", d.CipherSuites, tt.suites)
			}
			if !slices.Equal(d.CurvePreferences, tt.curvePrefs) || d.CurvePreferences.UsesLibraryDefaults() != (tt.curvePrefs == nil) {
				t.Errorf("curvePreferences = %q, want %q", d.CurvePreferences, tt.curvePrefs)
			}
			if tt.spec.Type == ProfileCustom && !tt.spec.FIPS && (!slices.Equal(d.Ciphers, nonNil(tt.spec.Ciphers)) || !slices.Equal(d.Groups, nonNil(tt.spec.Groups))) {
				t.Errorf("ciphers/groups not kept as given: %q %q", d.Ciphers, d.Groups)
			}
			if _, err := TLSConfigFromJSON(r.JSON); err != nil {
				t.Errorf("the resolved document does not configure Go: %v", err)
			}
		})
	}
}

func TestResolveDoesNotAliasTheSpec(t *testing.T) {
	for _, fips := range []bool{false, true} {
		spec := Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"}, Groups: []string{"secp256r1", "X25519"}, FIPS: fips}
		r, _, err := Resolve(spec, AdherenceNoOpinion)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(spec.Ciphers, []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"}) || !slices.Equal(spec.Groups, []string{"secp256r1", "X25519"}) {
			t.Fatalf("fips %v: Resolve changed the caller's spec: %q %q", fips, spec.Ciphers, spec.Groups)
		}
		spec.Ciphers[0], spec.Groups[0] = "changed", "changed"
		if r.Document.Ciphers[0] != "ECDHE-RSA-AES128-GCM-SHA256" || r.Document.Groups[0] != "secp256r1" {
			t.Fatalf("fips %v: the document shares the spec's slices: %q %q", fips, r.Document.Ciphers, r.Document.Groups)
		}
	}
}

func TestAdherence(t *testing.T) {
	tests := []struct {
		a             Adherence
		known, strict bool
	}{
		{AdherenceNoOpinion, true, false},
		{AdherenceLegacy, true, false},
		{AdherenceStrict, true, true},
		{"Strict", false, true},
		{"legacyadheringcomponentsonly", false, true},
	}
	for _, tt := range tests {
		if tt.a.IsKnown() != tt.known || tt.a.IsStrict() != tt.strict {
			t.Errorf("%q: known %v strict %v, want %v %v", tt.a, tt.a.IsKnown(), tt.a.IsStrict(), tt.known, tt.strict)
		}
	}
}
