package tlsprofile

import "github.com/kmshealth/terraform-provider-kmshealth/internal/ciphers"

// The cipher names, and what Go implements of them, are the one catalog in
// package ciphers, which the rbac proxy pattern uses too.

// ValidCiphers lists every cipher name a profile may use, OpenSSL and IANA
// spellings, sorted. Names crypto/tls does not implement (the DHE suites,
// the CBC-SHA384 suites, AES256-SHA256) are valid names but are dropped, or
// refused under strict adherence, by [Resolve].
func ValidCiphers() []string { return ciphers.ValidNames() }

// ValidateCipher checks one cipher name (OpenSSL or IANA, case-insensitive).
func ValidateCipher(name string) error {
	if ciphers.NewCatalog().Lookup(name).Kind == ciphers.Unknown {
		return fieldError("", name, "unknown cipher", "", ValidCiphers())
	}
	return nil
}
