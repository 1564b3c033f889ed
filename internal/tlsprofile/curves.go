package tlsprofile

import (
	"crypto/tls"
	"slices"
	"strings"
)

// curve is one key-exchange group Go implements, with every name we accept
// for it. The first name is the canonical one, spelled as OpenShift's
// TLSGroup enum spells it; it is what profile.json's curvePreferences lists.
type curve struct {
	id    tls.CurveID
	names []string
}

// curveTable lists the groups crypto/tls implements (Go 1.26). The order is
// OpenShift's TLSGroup enum order with the post-quantum hybrids first, which
// is only cosmetic: Go treats CurvePreferences as a filter and applies its
// own preference order.
func curveTable() []curve {
	return []curve{
		{tls.X25519MLKEM768, []string{"X25519MLKEM768"}},
		{tls.SecP256r1MLKEM768, []string{"SecP256r1MLKEM768"}},
		{tls.SecP384r1MLKEM1024, []string{"SecP384r1MLKEM1024"}},
		{tls.X25519, []string{"X25519"}},
		{tls.CurveP256, []string{"secp256r1", "P-256", "prime256v1", "CurveP256"}},
		{tls.CurveP384, []string{"secp384r1", "P-384", "CurveP384"}},
		{tls.CurveP521, []string{"secp521r1", "P-521", "CurveP521"}},
	}
}

// ParseCurve returns the Go curve ID for a group name (case-insensitive:
// X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, X25519,
// secp256r1/P-256, secp384r1/P-384, secp521r1/P-521, and Go's CurveP256…
// spellings), or an error listing the valid names.
func ParseCurve(name string) (tls.CurveID, error) {
	for _, c := range curveTable() {
		for _, n := range c.names {
			if strings.EqualFold(n, name) {
				return c.id, nil
			}
		}
	}
	return 0, fieldError("", name, "unknown curve", "", ValidCurves())
}

// CurveName returns the canonical name of a Go curve ID (as OpenShift spells
// the group), or false when this package does not know it.
func CurveName(id tls.CurveID) (string, bool) {
	for _, c := range curveTable() {
		if c.id == id {
			return c.names[0], true
		}
	}
	return "", false
}

// ValidCurves lists every curve name a profile may use, canonical names
// first, then the aliases.
func ValidCurves() []string {
	var canonical, aliases []string
	for _, c := range curveTable() {
		canonical = append(canonical, c.names[0])
		aliases = append(aliases, c.names[1:]...)
	}
	return slices.Concat(canonical, aliases)
}

// ValidateCurve checks one curve name.
func ValidateCurve(name string) error {
	_, err := ParseCurve(name)
	return err
}

// isTLS13OnlyCurve reports the hybrid post-quantum groups, which TLS 1.2
// cannot use.
func isTLS13OnlyCurve(id tls.CurveID) bool {
	switch id {
	case tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024:
		return true
	}
	return false
}
