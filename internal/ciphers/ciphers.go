// Package ciphers is the one catalog of TLS cipher suite names: the
// OpenSSL names OpenShift's TLS profiles use, their IANA names, and what
// Go's crypto/tls implements of them. The TLS profile pattern resolves
// profiles with it; the rbac proxy pattern checks kube-rbac-proxy's
// --tls-cipher-suites (Go's names) with it. A base package: it imports
// nothing of the module.
package ciphers

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

// Kind says what Go can do with a named cipher.
type Kind int

const (
	Unknown Kind = iota // no such name in the catalog
	NotInGo             // a real suite crypto/tls does not implement
	TLS13               // a TLS 1.3 suite: always on, never configurable
	Usable              // a TLS 1.0–1.2 suite Go can be told to use
)

// Cipher is one named cipher looked up for Go.
type Cipher struct {
	Kind  Kind
	IANA  string           // canonical IANA name, when known
	Suite *tls.CipherSuite // Go's description, when Go implements it
}

// Catalog answers lookups by OpenSSL, IANA or Go name.
type Catalog struct {
	ianaByName map[string]string           // upper-cased OpenSSL, IANA or alias name → IANA name
	goByIANA   map[string]*tls.CipherSuite // IANA name → Go suite (secure and insecure)
}

// NewCatalog builds the catalog from the name table and the running Go's
// crypto/tls.
func NewCatalog() Catalog {
	c := Catalog{
		ianaByName: map[string]string{},
		goByIANA:   map[string]*tls.CipherSuite{},
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
	}
	return c
}

// Lookup finds a cipher by OpenSSL or IANA name (or one of Go's older
// aliases), case-insensitive.
func (c Catalog) Lookup(name string) Cipher {
	iana, ok := c.ianaByName[strings.ToUpper(name)]
	if !ok {
		return Cipher{Kind: Unknown}
	}
	s, ok := c.goByIANA[iana]
	switch {
	case !ok:
		return Cipher{Kind: NotInGo, IANA: iana}
	case TLS13Only(s):
		return Cipher{Kind: TLS13, IANA: iana, Suite: s}
	default:
		return Cipher{Kind: Usable, IANA: iana, Suite: s}
	}
}

// Go is the suite crypto/tls implements under exactly this name (its IANA
// name; secure or insecure): the names Go's own configuration, and so
// kube-rbac-proxy's --tls-cipher-suites, take.
func (c Catalog) Go(name string) (*tls.CipherSuite, bool) {
	s, ok := c.goByIANA[name]
	return s, ok
}

// GoNames are the names Go takes (see Go), sorted.
func (c Catalog) GoNames() []string {
	names := make([]string, 0, len(c.goByIANA))
	for n := range c.goByIANA {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TLS13Only reports whether s is a TLS 1.3 suite, which Go always enables
// and never lets a configuration choose.
func TLS13Only(s *tls.CipherSuite) bool {
	return len(s.SupportedVersions) == 1 && s.SupportedVersions[0] == tls.VersionTLS13
}

// ValidNames lists every cipher name a profile may use, OpenSSL and IANA
// spellings and Go's aliases, sorted. Names crypto/tls does not implement
// (the DHE suites, the CBC-SHA384 suites, AES256-SHA256) are valid names
// all the same: what to do with them is the caller's decision.
func ValidNames() []string {
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

// fipsApproved are the suites a FIPS 140-3 TLS server may negotiate: AES-GCM
// with ECDHE key exchange in TLS 1.2, and the AES-GCM suites of TLS 1.3
// (NIST SP 800-52r2; the set Go's own FIPS 140-3 mode allows). CBC, 3DES,
// ChaCha20 and RSA key exchange are not in it.
func fipsApproved() []string {
	return []string{
		"TLS_AES_128_GCM_SHA256",
		"TLS_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	}
}

// FIPSApproved reports whether a suite, by IANA name, may be used in FIPS
// mode.
func FIPSApproved(iana string) bool { return slices.Contains(fipsApproved(), iana) }
