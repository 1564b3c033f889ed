package tlsprofile

import (
	"slices"
	"strings"
	"testing"
)

// The predefined profiles exactly as openshift/api config/v1 TLSProfiles
// defines them (Mozilla Server Side TLS 5.8; see ProfileSourceVersion).
// Written out in full, not composed, so any change to Predefined — a
// deliberate upgrade to a newer OpenShift list included — fails here first.
func TestPredefinedProfilesArePinned(t *testing.T) {
	tests := []struct {
		typ     ProfileType
		min     TLSVersion
		ciphers []string
	}{
		{ProfileOld, VersionTLS10, []string{
			"TLS_AES_128_GCM_SHA256",
			"TLS_AES_256_GCM_SHA384",
			"TLS_CHACHA20_POLY1305_SHA256",
			"ECDHE-ECDSA-AES128-GCM-SHA256",
			"ECDHE-RSA-AES128-GCM-SHA256",
			"ECDHE-ECDSA-AES256-GCM-SHA384",
			"ECDHE-RSA-AES256-GCM-SHA384",
			"ECDHE-ECDSA-CHACHA20-POLY1305",
			"ECDHE-RSA-CHACHA20-POLY1305",
			"ECDHE-ECDSA-AES128-SHA256",
			"ECDHE-RSA-AES128-SHA256",
			"ECDHE-ECDSA-AES128-SHA",
			"ECDHE-RSA-AES128-SHA",
			"ECDHE-ECDSA-AES256-SHA384",
			"ECDHE-RSA-AES256-SHA384",
			"ECDHE-ECDSA-AES256-SHA",
			"ECDHE-RSA-AES256-SHA",
			"AES128-GCM-SHA256",
			"AES256-GCM-SHA384",
			"AES128-SHA256",
			"AES256-SHA256",
			"AES128-SHA",
			"AES256-SHA",
			"DES-CBC3-SHA",
		}},
		{ProfileIntermediate, VersionTLS12, []string{
			"TLS_AES_128_GCM_SHA256",
			"TLS_AES_256_GCM_SHA384",
			"TLS_CHACHA20_POLY1305_SHA256",
			"ECDHE-ECDSA-AES128-GCM-SHA256",
			"ECDHE-RSA-AES128-GCM-SHA256",
			"ECDHE-ECDSA-AES256-GCM-SHA384",
			"ECDHE-RSA-AES256-GCM-SHA384",
			"ECDHE-ECDSA-CHACHA20-POLY1305",
			"ECDHE-RSA-CHACHA20-POLY1305",
		}},
		{ProfileModern, VersionTLS13, []string{
			"TLS_AES_128_GCM_SHA256",
			"TLS_AES_256_GCM_SHA384",
			"TLS_CHACHA20_POLY1305_SHA256",
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			p, ok := Predefined(tt.typ)
			if !ok {
				t.Fatalf("Predefined(%s) = false", tt.typ)
			}
			if p.Type != tt.typ || p.MinTLSVersion != tt.min {
				t.Errorf("type %s min %s, want %s %s", p.Type, p.MinTLSVersion, tt.typ, tt.min)
			}
			if !slices.Equal(p.Ciphers, tt.ciphers) {
				t.Errorf("ciphers changed:\n got %q\nwant %q", p.Ciphers, tt.ciphers)
			}
			if p.Curves != nil {
				t.Errorf("curves = %q, want none: OpenShift's predefined profiles name no curves", p.Curves)
			}
		})
	}
	if !strings.Contains(ProfileSourceVersion, "5.8") {
		t.Errorf("ProfileSourceVersion %q no longer names Mozilla 5.8: update the pinned lists above with it", ProfileSourceVersion)
	}
}

func TestPredefinedRejectsCustomAndUnknown(t *testing.T) {
	for _, typ := range []ProfileType{ProfileCustom, "", "old", "Bogus"} {
		if _, ok := Predefined(typ); ok {
			t.Errorf("Predefined(%q) = true, want false", typ)
		}
	}
}

func TestPredefinedReturnsFreshSlices(t *testing.T) {
	p, _ := Predefined(ProfileIntermediate)
	p.Ciphers[0] = "changed"
	q, _ := Predefined(ProfileIntermediate)
	if q.Ciphers[0] != "TLS_AES_128_GCM_SHA256" {
		t.Fatalf("a caller's edit leaked into the next Predefined call: %q", q.Ciphers[0])
	}
}

// What each predefined profile means to Go, and the hash of its document.
// A hash change means profile.json changed and every rollout target rolls:
// update these only on purpose.
func TestPredefinedProfilesResolvePinned(t *testing.T) {
	tests := []struct {
		typ      ProfileType
		suites   []string
		warnings []string
		hash     string
	}{
		{ProfileOld, []string{
			"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
			"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
			"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
			"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
			"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
			"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
			"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
			"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
			"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
			"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
			"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
			"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
			"TLS_RSA_WITH_AES_128_GCM_SHA256",
			"TLS_RSA_WITH_AES_256_GCM_SHA384",
			"TLS_RSA_WITH_AES_128_CBC_SHA256",
			"TLS_RSA_WITH_AES_128_CBC_SHA",
			"TLS_RSA_WITH_AES_256_CBC_SHA",
			"TLS_RSA_WITH_3DES_EDE_CBC_SHA",
		}, []string{"ECDHE-ECDSA-AES256-SHA384", "ECDHE-RSA-AES256-SHA384", "AES256-SHA256"},
			"97e17fd9c75be23f3de0cce3fc81ddf04fa17e047bb0167321d89f67f10adeb3"},
		{ProfileIntermediate, []string{
			"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
			"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
			"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
			"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
			"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
			"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
		}, nil, "71b55ec46185422c83c8ddc1e5c381dea82597890f0b38c3a669de7695e8e96a"},
		{ProfileModern, []string{}, nil, "0413a32136a25dfc9e3be7cb41c8d7a6dda254d847d97117c865f86aaade4b5f"},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			// Strict adherence does not refuse a predefined profile: its
			// lists are intent-based and may be reduced.
			for _, adherence := range []Adherence{AdherenceNoOpinion, AdherenceLegacy, AdherenceStrict} {
				r, warnings, err := Resolve(Spec{Type: tt.typ}, adherence)
				if err != nil {
					t.Fatalf("adherence %q: %v", adherence, err)
				}
				if !slices.Equal(r.Document.CipherSuites, tt.suites) {
					t.Errorf("cipherSuites:\n got %q\nwant %q", r.Document.CipherSuites, tt.suites)
				}
				if !r.Document.CurvePreferences.UsesLibraryDefaults() || !strings.Contains(string(r.JSON), `"curvePreferences": "`+LibraryDefaults+`"`) {
					t.Errorf("curvePreferences = %q, want the explicit library-defaults marker in the document", r.Document.CurvePreferences)
				}
				p, _ := Predefined(tt.typ)
				if !slices.Equal(r.Document.Ciphers, p.Ciphers) || !slices.Equal(r.Document.Curves, p.Curves) || r.Document.MinTLSVersion != p.MinTLSVersion {
					t.Errorf("document does not carry the profile as given: %+v", r.Document)
				}
				if len(tt.warnings) == 0 && len(warnings) != 0 {
					t.Errorf("warnings = %q, want none", warnings)
				}
				for _, w := range tt.warnings {
					if len(warnings) != 1 || !strings.Contains(warnings[0], w) {
						t.Errorf("warnings = %q, want one naming %s", warnings, w)
					}
				}
				if r.Hash != tt.hash {
					t.Errorf("hash = %s, want %s (profile.json changed: update on purpose)\n%s", r.Hash, tt.hash, r.JSON)
				}
			}
		})
	}
}
