package tlsprofile

import (
	"slices"
	"strings"
	"testing"
)

// The predefined profiles exactly as openshift/api config/v1 TLSProfiles
// defines them (Mozilla Server Side TLS 5.8; see ProfileSourceVersion):
// source github.com/openshift/api, file config/v1/types_tlssecurityprofile.go,
// read at commit 2a3d73913b5a7caec4c57d5c3d04f51106ec4da3 (its TLSProfiles
// map last changed in f2ddf1eb36afb7c3250bfbed3f870f01393f74e5, 2026-05-29).
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
			if want := []string{"X25519MLKEM768", "X25519", "secp256r1", "secp384r1"}; !slices.Equal(p.Groups, want) {
				t.Errorf("groups = %q, want %q", p.Groups, want)
			}
		})
	}
	if !strings.Contains(ProfileSourceVersion, "5.8") || !strings.Contains(ProfileSourceVersion, "2a3d73913b5a7caec4c57d5c3d04f51106ec4da3") {
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

// Each predefined profile resolved, pinned as the whole profile.json its
// ConfigMap carries, and its hash. Source: github.com/openshift/api,
// config/v1/types_tlssecurityprofile.go, the TLSProfiles map, at commit
// 2a3d73913b5a7caec4c57d5c3d04f51106ec4da3 — ciphers and minTLSVersion as
// given there, groups [X25519MLKEM768, X25519, secp256r1, secp384r1];
// cipherSuites and curvePreferences are what Go 1.26's crypto/tls takes of
// them (Old loses the three suites Go does not implement), componentArgs
// the same as Kubernetes component flags. A change here changes every
// consumer's hash and rolls it: update only on purpose.
func TestPredefinedProfilesResolvePinned(t *testing.T) {
	tests := []struct {
		typ  ProfileType
		doc  string
		hash string
	}{
		{ProfileOld, `{
  "type": "Old",
  "minTLSVersion": "VersionTLS10",
  "ciphers": [
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
    "DES-CBC3-SHA"
  ],
  "cipherSuites": [
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
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA"
  ],
  "groups": [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1"
  ],
  "curvePreferences": [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1"
  ],
  "componentArgs": [
    "--tls-min-version=VersionTLS10",
    "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,TLS_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_CBC_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_AES_256_CBC_SHA,TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "--tls-curve-preferences=4588,29,23,24"
  ],
  "source": "static"
}
`, "43f8d7cd93c8beb2651bd2e233bd3d5c4fdae589af7d5874a69049b3640c1230"},
		{ProfileIntermediate, `{
  "type": "Intermediate",
  "minTLSVersion": "VersionTLS12",
  "ciphers": [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305"
  ],
  "cipherSuites": [
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
  ],
  "groups": [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1"
  ],
  "curvePreferences": [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1"
  ],
  "componentArgs": [
    "--tls-min-version=VersionTLS12",
    "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "--tls-curve-preferences=4588,29,23,24"
  ],
  "source": "static"
}
`, "0eb1b307afa159fab02f72279e4d85959833df63145626f92ea447b9755bb3e9"},
		{ProfileModern, `{
  "type": "Modern",
  "minTLSVersion": "VersionTLS13",
  "ciphers": [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256"
  ],
  "cipherSuites": [],
  "groups": [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1"
  ],
  "curvePreferences": [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1"
  ],
  "componentArgs": [
    "--tls-min-version=VersionTLS13",
    "--tls-curve-preferences=4588,29,23,24"
  ],
  "source": "static"
}
`, "6e0578d0e0a9b2be308671ebc1c218ce327a50b09a63605ee4daf49bc97baffa"},
	}
	oldWarning := "dropped ciphers Go cannot use: ECDHE-ECDSA-AES256-SHA384 (TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384: not implemented by Go crypto/tls), " +
		"ECDHE-RSA-AES256-SHA384 (TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384: not implemented by Go crypto/tls), AES256-SHA256 (TLS_RSA_WITH_AES_256_CBC_SHA256: not implemented by Go crypto/tls)"
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			hashes := map[string]Adherence{}
			// Strict adherence does not refuse a predefined profile: its
			// lists are intent-based and may be reduced. The adherence is
			// written into the document, so it changes the hash.
			for _, adherence := range []Adherence{AdherenceNoOpinion, AdherenceLegacy, AdherenceStrict} {
				r, warnings, err := Resolve(Spec{Type: tt.typ}, adherence)
				if err != nil {
					t.Fatalf("adherence %q: %v", adherence, err)
				}
				want := tt.doc
				if adherence != AdherenceNoOpinion {
					want = strings.Replace(want, `  "source"`, `  "tlsAdherence": "`+string(adherence)+`",
  "source"`, 1)
				}
				if string(r.JSON) != want {
					t.Errorf("adherence %q: profile.json changed (update on purpose):\n got %s\nwant %s", adherence, r.JSON, want)
				}
				if adherence == AdherenceNoOpinion && r.Hash != tt.hash {
					t.Errorf("hash = %s, want %s", r.Hash, tt.hash)
				}
				if other, dup := hashes[r.Hash]; dup {
					t.Errorf("adherence %q has the hash of adherence %q", adherence, other)
				}
				hashes[r.Hash] = adherence
				switch {
				case tt.typ == ProfileOld && (len(warnings) != 1 || !strings.Contains(warnings[0], oldWarning)):
					t.Errorf("warnings = %q, want one: %s", warnings, oldWarning)
				case tt.typ != ProfileOld && len(warnings) != 0:
					t.Errorf("warnings = %q, want none", warnings)
				}
			}
		})
	}
}
