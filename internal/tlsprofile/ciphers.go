package tlsprofile

import (
	"crypto/tls"
	"slices"
	"strings"
)

// cipherName pairs an OpenSSL cipher name with its IANA name.
type cipherName struct {
	openssl, iana string
}

// cipherNames is the OpenSSL → IANA table for every name OpenShift's
// profiles have ever used (the DHE names of older API versions included, so
// data from older clusters is recognised and dropped with a reason rather
// than called unknown). Facts from the IANA TLS Cipher Suites registry and
// OpenSSL's ciphers(1) page. TLS 1.3 suites have one name in both worlds.
func cipherNames() []cipherName {
	return []cipherName{
		{"TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"},
		{"TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"},
		{"TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256"},
		{"ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{"ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		{"ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{"ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
		{"ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
		{"ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
		{"ECDHE-ECDSA-AES128-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"},
		{"ECDHE-RSA-AES128-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"},
		{"ECDHE-ECDSA-AES128-SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"},
		{"ECDHE-RSA-AES128-SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"},
		{"ECDHE-ECDSA-AES256-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384"},
		{"ECDHE-RSA-AES256-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"},
		{"ECDHE-ECDSA-AES256-SHA", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"},
		{"ECDHE-RSA-AES256-SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"},
		{"ECDHE-RSA-DES-CBC3-SHA", "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"},
		{"AES128-GCM-SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256"},
		{"AES256-GCM-SHA384", "TLS_RSA_WITH_AES_256_GCM_SHA384"},
		{"AES128-SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA256"},
		{"AES256-SHA256", "TLS_RSA_WITH_AES_256_CBC_SHA256"},
		{"AES128-SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"},
		{"AES256-SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"},
		{"DES-CBC3-SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"},
		{"DHE-RSA-AES128-GCM-SHA256", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"},
		{"DHE-RSA-AES256-GCM-SHA384", "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"},
		{"DHE-RSA-CHACHA20-POLY1305", "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256"},
		{"DHE-RSA-AES128-SHA256", "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256"},
		{"DHE-RSA-AES256-SHA256", "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256"},
	}
}

// goCipherAliases are the older spellings crypto/tls still exports as
// constants for two suites; they are accepted on input and written in the
// canonical form.
func goCipherAliases() map[string]string {
	return map[string]string{
		"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	}
}

// cipherKind says what Go can do with a named cipher.
type cipherKind int

const (
	cipherUnknown cipherKind = iota // no such name in our table
	cipherNotInGo                   // a real suite crypto/tls does not implement
	cipherTLS13                     // a TLS 1.3 suite: always on, never configurable
	cipherUsable                    // a TLS 1.0–1.2 suite Go can be told to use
)

// cipher is one named cipher looked up for Go.
type cipher struct {
	kind  cipherKind
	iana  string           // canonical IANA name, when known
	suite *tls.CipherSuite // Go's description, when Go implements it
}

// cipherCatalog answers lookups by OpenSSL or IANA name (case-insensitive).
type cipherCatalog struct {
	ianaByName map[string]string           // upper-cased OpenSSL, IANA or alias name → IANA name
	goByIANA   map[string]*tls.CipherSuite // IANA name → Go suite (secure and insecure)
	goByID     map[uint16]*tls.CipherSuite
}

func newCipherCatalog() cipherCatalog {
	c := cipherCatalog{
		ianaByName: map[string]string{},
		goByIANA:   map[string]*tls.CipherSuite{},
		goByID:     map[uint16]*tls.CipherSuite{},
	}
	for _, n := range cipherNames() {
		c.ianaByName[strings.ToUpper(n.openssl)] = n.iana
		c.ianaByName[strings.ToUpper(n.iana)] = n.iana
	}
	for alias, iana := range goCipherAliases() {
		c.ianaByName[alias] = iana
	}
	for _, s := range slices.Concat(tls.CipherSuites(), tls.InsecureCipherSuites()) {
		c.goByIANA[s.Name] = s
		c.goByID[s.ID] = s
	}
	return c
}

func (c cipherCatalog) lookup(name string) cipher {
	iana, ok := c.ianaByName[strings.ToUpper(name)]
	if !ok {
		return cipher{kind: cipherUnknown}
	}
	s, ok := c.goByIANA[iana]
	switch {
	case !ok:
		return cipher{kind: cipherNotInGo, iana: iana}
	case isTLS13Only(s):
		return cipher{kind: cipherTLS13, iana: iana, suite: s}
	default:
		return cipher{kind: cipherUsable, iana: iana, suite: s}
	}
}

func isTLS13Only(s *tls.CipherSuite) bool {
	return len(s.SupportedVersions) == 1 && s.SupportedVersions[0] == tls.VersionTLS13
}

// ValidCiphers lists every cipher name a profile may use, OpenSSL and IANA
// spellings, sorted. Names crypto/tls does not implement (the DHE suites,
// the CBC-SHA384 suites, AES256-SHA256) are valid names but are dropped, or
// refused under strict adherence, by [Resolve].
func ValidCiphers() []string {
	var names []string
	for _, n := range cipherNames() {
		names = append(names, n.openssl, n.iana)
	}
	for alias := range goCipherAliases() {
		names = append(names, alias)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ValidateCipher checks one cipher name (OpenSSL or IANA, case-insensitive).
func ValidateCipher(name string) error {
	if newCipherCatalog().lookup(name).kind == cipherUnknown {
		return fieldError("", name, "unknown cipher", "", ValidCiphers())
	}
	return nil
}
