package ciphers

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

// Every name ValidNames lists is one Lookup understands, and the table
// agrees with the Go toolchain: when a Go release adds or drops a suite,
// this test says which names changed meaning.
func TestCipherTableAgainstGo(t *testing.T) {
	cat := NewCatalog()
	notInGo := []string{
		"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
		"TLS_RSA_WITH_AES_256_CBC_SHA256",
		"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
		"TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
		"TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
	}
	for _, name := range ValidNames() {
		c := cat.Lookup(name)
		switch {
		case c.Kind == Unknown:
			t.Errorf("%s is listed as valid but unknown to Resolve", name)
		case c.Kind == NotInGo && !slices.Contains(notInGo, c.IANA):
			t.Errorf("%s (%s): Go no longer implements it", name, c.IANA)
		case c.Kind != NotInGo && slices.Contains(notInGo, c.IANA):
			t.Errorf("%s (%s): Go implements it now; update notInGo and the docs", name, c.IANA)
		case c.Kind == TLS13 && !strings.HasPrefix(c.IANA, "TLS_") || c.Kind == Usable && c.Suite.Name != c.IANA:
			t.Errorf("%s: IANA name %s, Go name %v", name, c.IANA, c.Suite)
		}
	}
	// Every secure Go suite has a name in the table.
	for _, s := range tls.CipherSuites() {
		if cat.Lookup(s.Name).Kind == Unknown {
			t.Errorf("Go suite %s has no entry in the table", s.Name)
		}
	}
	if len(cipherNames()) != 30 {
		t.Errorf("%d OpenSSL names, want 30", len(cipherNames()))
	}
}

// TestGo: Go takes exactly Go's own suite names, the TLS 1.3 ones and the
// insecure ones included, and no OpenSSL name.
func TestGo(t *testing.T) {
	cat := NewCatalog()
	for _, tc := range []struct {
		name  string
		ok    bool
		tls13 bool
	}{
		{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", true, false},
		{"TLS_AES_128_GCM_SHA256", true, true},
		{"TLS_RSA_WITH_RC4_128_SHA", true, false},
		{"ECDHE-RSA-AES128-GCM-SHA256", false, false},
		{"tls_ecdhe_rsa_with_aes_128_gcm_sha256", false, false},
		{"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", false, false},
	} {
		s, ok := cat.Go(tc.name)
		if ok != tc.ok || ok && TLS13Only(s) != tc.tls13 {
			t.Errorf("Go(%q) = %v, %v; want found %v, TLS 1.3 only %v", tc.name, s, ok, tc.ok, tc.tls13)
		}
	}
	if names := cat.GoNames(); !slices.IsSorted(names) || len(names) != len(tls.CipherSuites())+len(tls.InsecureCipherSuites()) {
		t.Errorf("GoNames() = %v, want every Go suite, sorted", names)
	}
}

// FIPS keeps AES-GCM: with ECDHE in TLS 1.2, and TLS 1.3's two AES-GCM
// suites; every approved suite is one Go implements as secure.
func TestFIPSApproved(t *testing.T) {
	cat := NewCatalog()
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"ECDHE-ECDSA-AES128-GCM-SHA256", true},
		{"ECDHE-RSA-AES256-GCM-SHA384", true},
		{"TLS_AES_128_GCM_SHA256", true},
		{"TLS_AES_256_GCM_SHA384", true},
		{"TLS_CHACHA20_POLY1305_SHA256", false},
		{"ECDHE-RSA-CHACHA20-POLY1305", false},
		{"ECDHE-RSA-AES128-SHA256", false},
		{"AES128-GCM-SHA256", false},
		{"DES-CBC3-SHA", false},
		{"DHE-RSA-AES128-GCM-SHA256", false},
	} {
		if got := FIPSApproved(cat.Lookup(tt.name).IANA); got != tt.want {
			t.Errorf("FIPSApproved(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	secure := map[string]bool{}
	for _, s := range tls.CipherSuites() {
		secure[s.Name] = true
	}
	for _, name := range fipsApproved() {
		if !secure[name] {
			t.Errorf("%s is approved but not among Go's secure suites", name)
		}
	}
}
