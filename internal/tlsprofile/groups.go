package tlsprofile

import (
	"crypto/tls"
	"strconv"
	"strings"
)

// MaxGroups is the most groups a profile may name, as OpenShift's API
// allows (`groups`: a set of at most 7).
const MaxGroups = 7

// group is one key-exchange group a profile may name: its name as
// OpenShift's config.openshift.io/v1 TLSGroup enum spells it, the Go curve
// ID it stands for, and whether it is FIPS-approved.
type group struct {
	name string
	id   tls.CurveID
	fips bool
}

// groupTable lists OpenShift's TLSGroup values in Go's own preference order
// (crypto/tls defaultCurvePreferences, Go 1.26: the post-quantum hybrids
// first, then X25519 and the NIST curves). Go treats a configured list as a
// filter and keeps its own order, so the resolved groups are listed in this
// order whatever order the profile names them in.
//
// FIPS: only the NIST P-curves are approved, as openshift/api#2983 states
// for OpenShift (RHEL's FIPS module drops X25519 and every ML-KEM hybrid).
// Go's own FIPS 140-3 mode is more permissive — it also allows the three
// ML-KEM hybrids — so following OpenShift leaves a list that both honour.
func groupTable() []group {
	return []group{
		{"X25519MLKEM768", tls.X25519MLKEM768, false},
		{"SecP256r1MLKEM768", tls.SecP256r1MLKEM768, false},
		{"SecP384r1MLKEM1024", tls.SecP384r1MLKEM1024, false},
		{"X25519", tls.X25519, false},
		{"secp256r1", tls.CurveP256, true},
		{"secp384r1", tls.CurveP384, true},
		{"secp521r1", tls.CurveP521, true},
	}
}

// groupAliases are other spellings people use for the groups (OpenSSL's and
// Go's). They are not accepted — OpenShift's enum is exact — but an error
// names the right spelling.
func groupAliases() map[string]string {
	return map[string]string{
		"p-256": "secp256r1", "prime256v1": "secp256r1", "curvep256": "secp256r1",
		"p-384": "secp384r1", "curvep384": "secp384r1",
		"p-521": "secp521r1", "curvep521": "secp521r1",
	}
}

// goKnows reports whether the running Go's crypto/tls implements a curve
// ID: it names the IDs it knows, and prints the others as "CurveID(n)" (the
// test k8s.io/component-base's TLSCurvePreferences applies to
// --tls-curve-preferences too).
func goKnows(id tls.CurveID) bool {
	return !strings.HasPrefix(id.String(), "CurveID(")
}

// ParseGroup returns the Go curve ID for a group name, spelled exactly as
// OpenShift's TLSGroup enum spells it (X25519MLKEM768, SecP256r1MLKEM768,
// SecP384r1MLKEM1024, X25519, secp256r1, secp384r1, secp521r1), or an error
// listing the valid names (and the right spelling of a known alias).
func ParseGroup(name string) (tls.CurveID, error) {
	for _, g := range groupTable() {
		if g.name == name {
			return g.id, nil
		}
	}
	fix := ""
	for _, g := range groupTable() {
		if strings.EqualFold(g.name, name) {
			fix = "write it " + g.name
		}
	}
	if canonical, ok := groupAliases()[strings.ToLower(name)]; ok {
		fix = "OpenShift spells it " + canonical
	}
	return 0, fieldError("", name, "unknown group", fix, ValidGroups())
}

// GroupName returns OpenShift's name of a Go curve ID, or false when it is
// not one of OpenShift's groups.
func GroupName(id tls.CurveID) (string, bool) {
	for _, g := range groupTable() {
		if g.id == id {
			return g.name, true
		}
	}
	return "", false
}

// ValidGroups lists every group name a profile may use, in Go's preference
// order.
func ValidGroups() []string {
	var names []string
	for _, g := range groupTable() {
		names = append(names, g.name)
	}
	return names
}

// ValidateGroup checks one group name.
func ValidateGroup(name string) error {
	_, err := ParseGroup(name)
	return err
}

// GroupIsFIPSApproved reports whether a group (by Go curve ID) may be used
// in FIPS mode: the NIST P-curves only (see groupTable).
func GroupIsFIPSApproved(id tls.CurveID) bool {
	for _, g := range groupTable() {
		if g.id == id {
			return g.fips
		}
	}
	return false
}

// isTLS13OnlyGroup reports the hybrid post-quantum groups, which TLS 1.2
// cannot use.
func isTLS13OnlyGroup(id tls.CurveID) bool {
	switch id {
	case tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024:
		return true
	}
	return false
}

// curveIDList is the value of --tls-curve-preferences: the numeric Go
// crypto/tls CurveIDs, comma-separated, as k8s.io/apiserver's
// SecureServingOptions reads it (an int32 slice flag) since Kubernetes 1.36
// (kubernetes/kubernetes#137115).
func curveIDList(ids []tls.CurveID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// CanonicalGroupName returns OpenShift's spelling of a group name given in
// any case or as one of the aliases earlier versions of this provider
// accepted (P-256, prime256v1, CurveP256, …); an unknown name comes back
// unchanged.
func CanonicalGroupName(name string) string {
	for _, g := range groupTable() {
		if strings.EqualFold(g.name, name) {
			return g.name
		}
	}
	if canonical, ok := groupAliases()[strings.ToLower(name)]; ok {
		return canonical
	}
	return name
}
