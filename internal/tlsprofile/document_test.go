package tlsprofile

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func mustResolve(t *testing.T, spec Spec) Resolved {
	t.Helper()
	r, _, err := Resolve(spec, AdherenceNoOpinion)
	if err != nil {
		t.Fatalf("Resolve(%+v): %v", spec, err)
	}
	return r
}

func TestDocumentFieldOrder(t *testing.T) {
	r := mustResolve(t, Spec{Type: ProfileIntermediate})
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^  "(\w+)":`).FindAllSubmatch(r.JSON, -1) {
		keys = append(keys, string(m[1]))
	}
	want := []string{"type", "minTLSVersion", "ciphers", "cipherSuites", "groups", "curvePreferences", "componentArgs", "source"}
	if !slices.Equal(keys, want) {
		t.Fatalf("profile.json keys = %q, want %q\n%s", keys, want, r.JSON)
	}
	if bytes.Contains(r.JSON, []byte("isOpenShift")) || bytes.Contains(r.JSON, []byte("hash")) {
		t.Errorf("profile.json carries outputs that are not the profile:\n%s", r.JSON)
	}
}

func TestHashIsSha256OfTheExactBytes(t *testing.T) {
	r := mustResolve(t, Spec{Type: ProfileModern})
	sum := sha256.Sum256(r.JSON)
	if want := hex.EncodeToString(sum[:]); r.Hash != want || HashJSON(r.JSON) != want {
		t.Fatalf("hash = %s, want sha256 of profile.json %s", r.Hash, want)
	}
	if !bytes.HasSuffix(r.JSON, []byte("}\n")) {
		t.Errorf("profile.json does not end in a newline: %q", r.JSON)
	}
}

func TestHashChangesOnlyWithTheProfile(t *testing.T) {
	base := Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"}, Groups: []string{"X25519", "secp256r1"}}
	h := mustResolve(t, base).Hash
	for i := 0; i < 20; i++ {
		if got := mustResolve(t, base).Hash; got != h {
			t.Fatalf("hash is not stable: %s then %s", h, got)
		}
	}
	// The adherence is part of the document, so a change of the adherence
	// alone rolls the consumers (as kubernetes-nmstate#1514 does).
	byAdherence := map[string]Adherence{}
	for _, a := range []Adherence{AdherenceNoOpinion, AdherenceLegacy, AdherenceStrict} {
		r, _, err := Resolve(base, a)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := byAdherence[r.Hash]; dup {
			t.Errorf("adherence %q: same hash as adherence %q", a, other)
		}
		byAdherence[r.Hash] = a
	}
	changes := map[string]func(s *Spec){
		"minimum":      func(s *Spec) { s.MinTLSVersion = VersionTLS11 },
		"cipher added": func(s *Spec) { s.Ciphers = append(s.Ciphers, "ECDHE-RSA-AES256-GCM-SHA384") },
		"cipher order": func(s *Spec) { s.Ciphers = []string{s.Ciphers[1], s.Ciphers[0]} },
		"group added":  func(s *Spec) { s.Groups = append(s.Groups, "secp384r1") },
		"no groups":    func(s *Spec) { s.Groups = nil },
		"fips":         func(s *Spec) { s.FIPS = true },
		"source":       func(s *Spec) { s.Source = SourceCluster },
	}
	seen := map[string]string{h: "base"}
	for name, change := range changes {
		s := base
		s.Ciphers, s.Groups = slices.Clone(base.Ciphers), slices.Clone(base.Groups)
		change(&s)
		got := mustResolve(t, s).Hash
		if other, dup := seen[got]; dup {
			t.Errorf("%s: same hash as %s", name, other)
		}
		seen[got] = name
	}
}

func TestLibraryDefaultsAreExplicit(t *testing.T) {
	r := mustResolve(t, Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256"}})
	if !bytes.Contains(r.JSON, []byte(`"curvePreferences": "library-defaults"`)) || !bytes.Contains(r.JSON, []byte(`"groups": []`)) {
		t.Fatalf("a profile naming no groups must say the library defaults apply:\n%s", r.JSON)
	}
	cfg, err := TLSConfigFromJSON(r.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurvePreferences != nil {
		t.Errorf("CurvePreferences = %v, want nil (Go's defaults)", cfg.CurvePreferences)
	}
}

func TestParseDocumentRoundTrip(t *testing.T) {
	for _, spec := range []Spec{{Type: ProfileOld}, {Type: ProfileIntermediate, Source: SourceCluster}, {Type: ProfileModern},
		{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256"}}} {
		r := mustResolve(t, spec)
		d, err := ParseDocument(r.JSON)
		if err != nil {
			t.Fatalf("%s: %v", spec.Type, err)
		}
		b, h, err := d.Encode()
		if err != nil || !bytes.Equal(b, r.JSON) || h != r.Hash {
			t.Errorf("%s: parse and encode do not give the same bytes back (%v):\n%s\n%s", spec.Type, err, b, r.JSON)
		}
	}
}

func TestParseDocumentIgnoresUnknownFields(t *testing.T) {
	r := mustResolve(t, Spec{Type: ProfileIntermediate})
	b := bytes.Replace(r.JSON, []byte(`"source": "static"`), []byte(`"source": "static", "addedLater": {"x": 1}`), 1)
	if _, err := ParseDocument(b); err != nil {
		t.Fatalf("a field from a newer version broke an older consumer: %v", err)
	}
}

func TestParseDocumentRejects(t *testing.T) {
	valid := `{"type":"Custom","minTLSVersion":"VersionTLS12","ciphers":["ECDHE-RSA-AES128-GCM-SHA256"],"cipherSuites":["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],"groups":[],"curvePreferences":"library-defaults",` +
		`"componentArgs":["--tls-min-version=VersionTLS12","--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],"source":"static"}`
	if _, err := ParseDocument([]byte(valid)); err != nil {
		t.Fatalf("the valid base document is refused: %v", err)
	}
	tests := []struct {
		name, from, to, errHas string
	}{
		{"not JSON", valid, "{", "not a JSON object"},
		{"missing curvePreferences", `,"curvePreferences":"library-defaults"`, ``, "lacks [curvePreferences]"},
		{"missing cipherSuites", `"cipherSuites":["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],`, ``, "lacks [cipherSuites]"},
		{"empty curvePreferences list", `"library-defaults"`, `[]`, `curvePreferences is empty; write "library-defaults"`},
		{"null curvePreferences", `"library-defaults"`, `null`, `curvePreferences is null; it must be "library-defaults" or a list`},
		{"another marker", `"library-defaults"`, `"defaults"`, `curvePreferences is the string "defaults"`},
		{"unknown group", `"library-defaults"`, `["X448"]`, `curvePreferences[0]: Unsupported value: unknown group "X448"`},
		{"a group Go uses but componentArgs does not say", `"library-defaults"`, `["secp256r1"]`, `componentArgs: Invalid value: ["--tls-min-version=VersionTLS12" "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"] does not match the other fields`},
		{"componentArgs edited", `"--tls-min-version=VersionTLS12"`, `"--tls-min-version=VersionTLS10"`, `componentArgs: Invalid value`},
		{"missing componentArgs (a document from before it existed)", `"componentArgs":["--tls-min-version=VersionTLS12","--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"],`, ``, "lacks [componentArgs]"},
		{"curves instead of groups (a document from before the rename)", `"groups":[]`, `"curves":[]`, "lacks [groups]"},
		{"empty cipherSuites below TLS 1.3", `["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]`, `[]`, "cipherSuites: Invalid value: is empty but minTLSVersion VersionTLS12"},
		{"a TLS 1.3 suite in cipherSuites", `"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]`, `"TLS_AES_128_GCM_SHA256"]`, `cipherSuites[0]: Invalid value: is not a TLS 1.0–1.2 suite`},
		{"an OpenSSL name in cipherSuites", `"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]`, `"ECDHE-RSA-AES128-GCM-SHA256"]`, `cipherSuites[0]: Invalid value: is not a TLS 1.0–1.2 suite`},
		{"cipherSuites with a TLS 1.3 minimum", `"VersionTLS12"`, `"VersionTLS13"`, "must be empty when minTLSVersion is VersionTLS13"},
		{"unknown minimum", `"VersionTLS12"`, `"TLSv1.2"`, `minTLSVersion: Unsupported value: unknown TLS version "TLSv1.2"`},
		{"unknown type", `"Custom"`, `"Secure"`, `type: Unsupported value: unknown profile type "Secure"`},
		{"empty type", `"Custom"`, `""`, `type: Unsupported value: unknown profile type`},
		{"unknown source", `"static"`, `"helm"`, `source: Unsupported value: unknown profile source "helm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(valid, tt.from, tt.to, 1)
			if doc == valid {
				t.Fatalf("the edit %q → %q changed nothing", tt.from, tt.to)
			}
			_, err := ParseDocument([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.errHas)
			}
			if _, err := TLSConfigFromJSON([]byte(doc)); err == nil {
				t.Errorf("TLSConfigFromJSON accepted it")
			}
		})
	}
}

func TestTLSConfig(t *testing.T) {
	// Every predefined profile names X25519MLKEM768, X25519, secp256r1 and
	// secp384r1: in Go's preference order.
	prefs := []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256, tls.CurveP384}
	tests := []struct {
		spec   Spec
		min    uint16
		suites []uint16
		curves []tls.CurveID
	}{
		{Spec{Type: ProfileOld}, tls.VersionTLS10, []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
			tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_RSA_WITH_AES_128_CBC_SHA256, tls.TLS_RSA_WITH_AES_128_CBC_SHA,
			tls.TLS_RSA_WITH_AES_256_CBC_SHA, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
		}, prefs},
		{Spec{Type: ProfileIntermediate}, tls.VersionTLS12, []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		}, prefs},
		{Spec{Type: ProfileModern}, tls.VersionTLS13, nil, prefs},
		{Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS11, Ciphers: []string{"ECDHE-ECDSA-AES128-SHA"}, Groups: []string{"secp384r1"}},
			tls.VersionTLS11, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}, []tls.CurveID{tls.CurveP384}},
		{Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}},
			tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.spec.Type), func(t *testing.T) {
			r := mustResolve(t, tt.spec)
			fromDoc, err := r.Document.TLSConfig()
			if err != nil {
				t.Fatal(err)
			}
			fromJSON, err := TLSConfigFromJSON(r.JSON)
			if err != nil {
				t.Fatal(err)
			}
			for _, cfg := range []*tls.Config{fromDoc, fromJSON} {
				if cfg.MinVersion != tt.min {
					t.Errorf("MinVersion = %#x, want %#x", cfg.MinVersion, tt.min)
				}
				if !slices.Equal(cfg.CipherSuites, tt.suites) || (tt.suites == nil) != (cfg.CipherSuites == nil) {
					t.Errorf("CipherSuites = %#x, want %#x", cfg.CipherSuites, tt.suites)
				}
				if !slices.Equal(cfg.CurvePreferences, tt.curves) || (tt.curves == nil) != (cfg.CurvePreferences == nil) {
					t.Errorf("CurvePreferences = %v, want %v", cfg.CurvePreferences, tt.curves)
				}
				if cfg.MaxVersion != 0 || cfg.Certificates != nil {
					t.Errorf("TLSConfig set more than the profile: %+v", cfg)
				}
			}
		})
	}
}

func TestTLSConfigFromFile(t *testing.T) {
	r := mustResolve(t, Spec{Type: ProfileModern})
	path := filepath.Join(t.TempDir(), DocumentKey)
	if err := os.WriteFile(path, r.JSON, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := TLSConfigFromFile(path)
	if err != nil || cfg.MinVersion != tls.VersionTLS13 {
		t.Fatalf("TLSConfigFromFile = %v, %v", cfg, err)
	}
	if _, err := TLSConfigFromFile(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "read TLS profile") {
		t.Errorf("missing file: err = %v", err)
	}
}
