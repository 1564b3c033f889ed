package tlsprofile

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/ciphers"
)

// Spec is what a user or the cluster asks for. Type defaults to
// Intermediate. MinTLSVersion, Ciphers (OpenSSL or IANA names) and Curves
// are used only with type Custom; OpenShift's `groups` field is read into
// Curves. Source defaults to static.
type Spec struct {
	Type          ProfileType `json:"type,omitempty"`
	MinTLSVersion TLSVersion  `json:"minTLSVersion,omitempty"`
	Ciphers       []string    `json:"ciphers,omitempty"`
	Curves        []string    `json:"curves,omitempty"`
	Source        Source      `json:"source,omitempty"`
}

func (s Spec) effectiveType() ProfileType {
	if s.Type == "" {
		return DefaultProfile
	}
	return s.Type
}

func (s Spec) hasCustom() bool {
	return s.MinTLSVersion != "" || len(s.Ciphers) > 0 || len(s.Curves) > 0
}

// Adherence is the cluster's APIServer spec.tlsAdherence.
type Adherence string

// The tlsAdherence values OpenShift defines. Unset (NoOpinion) behaves like
// LegacyAdheringComponentsOnly; any other value behaves like
// StrictAllComponents, as OpenShift asks of components meeting an unknown
// value.
const (
	AdherenceNoOpinion Adherence = ""
	AdherenceLegacy    Adherence = "LegacyAdheringComponentsOnly"
	AdherenceStrict    Adherence = "StrictAllComponents"
)

// ValidAdherences lists the values OpenShift accepts for tlsAdherence.
func ValidAdherences() []string {
	return []string{string(AdherenceLegacy), string(AdherenceStrict)}
}

// IsKnown reports an unset or a defined value.
func (a Adherence) IsKnown() bool {
	return a == AdherenceNoOpinion || a == AdherenceLegacy || a == AdherenceStrict
}

// IsStrict reports whether items Go cannot honour are refused rather than
// dropped with a warning: StrictAllComponents and unknown values.
func (a Adherence) IsStrict() bool {
	return a != AdherenceNoOpinion && a != AdherenceLegacy
}

// Resolved is a profile translated for Go: the document, its exact JSON
// bytes (the ConfigMap's profile.json) and the hex sha256 of those bytes
// (the rollout annotation).
type Resolved struct {
	Document Document
	JSON     []byte
	Hash     string
}

// Resolve translates spec into what Go's crypto/tls honours and builds the
// profile.json document.
//
//   - Ciphers: OpenSSL names become IANA names; TLS 1.3 suites are never
//     configured (Go always enables all three when TLS 1.3 is negotiated);
//     names Go does not implement, and unknown names, are dropped with a
//     warning listing them. With minTLSVersion VersionTLS13 no cipher is
//     configured at all.
//   - Curves: names become Go curve IDs; unknown names are dropped with a
//     warning. No curves named means the TLS library's defaults, which the
//     document says explicitly ([LibraryDefaults]).
//   - Adherence: under a strict adherence (StrictAllComponents, or an
//     unknown value) an item of a Custom profile that Go cannot honour is
//     refused with an error instead of dropped. The predefined profiles are
//     intent-based ("the list may be reduced", says OpenShift's API), so
//     their Go-less ciphers are dropped with a warning under any adherence.
//
// A profile that cannot be honoured is refused with a *field.Error saying
// why — a minimum below TLS 1.3 with no usable TLS 1.0–1.2 cipher left,
// curves named but none usable — never resolved to an empty list that would
// silently fall back to Go's defaults.
func Resolve(spec Spec, adherence Adherence) (Resolved, []string, error) {
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }

	if !adherence.IsKnown() {
		warn("unknown tlsAdherence %q: treated as %s, so whatever Go cannot honour is refused; OpenShift defines %s", adherence, AdherenceStrict, strings.Join(ValidAdherences(), ", "))
	}
	source := spec.Source
	if source == "" {
		source = SourceStatic
	}
	if source != SourceStatic && source != SourceCluster {
		return Resolved{}, warnings, fieldError("source", string(source), "unknown profile source", "", []string{string(SourceStatic), string(SourceCluster)})
	}
	p := fieldPrefix(source)

	t := spec.effectiveType()
	var prof Profile
	if t == ProfileCustom {
		prof = Profile{Type: t, MinTLSVersion: spec.MinTLSVersion, Ciphers: spec.Ciphers, Curves: spec.Curves}
	} else {
		pre, ok := Predefined(t)
		if !ok {
			return Resolved{}, warnings, at(p+"type", ValidateType(string(t)))
		}
		if spec.hasCustom() {
			return Resolved{}, warnings, fieldError(p+"custom", "", fmt.Sprintf("ciphers, minTLSVersion and curves are only used with type Custom, and type is %s", t), "remove them, or set type to Custom", nil)
		}
		prof = pre
	}
	// Strict adherence applies to what a person named in a Custom profile.
	refuse := adherence.IsStrict() && t == ProfileCustom
	const strictFix = "remove them; tlsAdherence " + string(AdherenceStrict) + " refuses what Go cannot honour instead of dropping it"

	// Minimum version.
	minName := prof.MinTLSVersion
	if minName == "" {
		if refuse {
			return Resolved{}, warnings, fieldError(p+"custom.minTLSVersion", "", "is empty", "set it; under tlsAdherence "+string(AdherenceStrict)+" an empty minimum is refused rather than defaulted", ValidTLSVersions())
		}
		warn("%scustom.minTLSVersion is empty: using %s, the TLS library default; set it explicitly", p, VersionTLS12)
		minName = VersionTLS12
	}
	minVersion, ok := minName.ID()
	if !ok {
		return Resolved{}, warnings, at(p+"custom.minTLSVersion", ValidateTLSVersion(string(minName)))
	}

	// Ciphers.
	cat := ciphers.NewCatalog()
	var (
		suites         []*tls.CipherSuite
		unusable       []string
		belowTLS13Only []string
		tls13          []string
	)
	for _, name := range prof.Ciphers {
		c := cat.Lookup(name)
		switch c.Kind {
		case ciphers.Unknown:
			unusable = append(unusable, fmt.Sprintf("%s (unknown name)", name))
		case ciphers.NotInGo:
			unusable = append(unusable, fmt.Sprintf("%s (%s: not implemented by Go crypto/tls)", name, c.IANA))
		case ciphers.TLS13:
			if !slices.Contains(tls13, c.IANA) {
				tls13 = append(tls13, c.IANA)
			}
		case ciphers.Usable:
			if minVersion >= tls.VersionTLS13 {
				belowTLS13Only = append(belowTLS13Only, name)
				continue
			}
			if !slices.ContainsFunc(suites, func(s *tls.CipherSuite) bool { return s.ID == c.Suite.ID }) {
				suites = append(suites, c.Suite)
			}
		}
	}
	if len(unusable) > 0 {
		if refuse {
			return Resolved{}, warnings, fieldError(p+"custom.ciphers", "", "Go cannot use "+strings.Join(unusable, ", "), strictFix, nil)
		}
		warn("%s profile: dropped ciphers Go cannot use: %s", t, strings.Join(unusable, ", "))
	}
	if len(belowTLS13Only) > 0 {
		warn("%scustom.ciphers: %s never apply, because minTLSVersion is %s and TLS 1.3 suites are not configurable", p, strings.Join(belowTLS13Only, ", "), minName)
	}
	if t == ProfileCustom && len(tls13) > 0 && len(tls13) < 3 {
		warn("%scustom.ciphers names only some TLS 1.3 suites (%s); Go always enables all three TLS 1.3 suites when TLS 1.3 is negotiated, as OpenShift's API documents", p, strings.Join(tls13, ", "))
	}
	if minVersion < tls.VersionTLS13 && len(suites) == 0 {
		field := p + "custom.ciphers"
		if t != ProfileCustom {
			field = p + "type"
		}
		problem := fmt.Sprintf("minTLSVersion %s allows TLS 1.2 and below, but no TLS 1.0–1.2 cipher Go can use is left", minName)
		if len(unusable) > 0 {
			problem += " (dropped: " + strings.Join(unusable, ", ") + ")"
		}
		return Resolved{}, warnings, fieldError(field, "", problem, "add a cipher such as ECDHE-RSA-AES128-GCM-SHA256 or ECDHE-ECDSA-AES128-GCM-SHA256, or set minTLSVersion to VersionTLS13", nil)
	}
	if minVersion < tls.VersionTLS12 && !slices.ContainsFunc(suites, func(s *tls.CipherSuite) bool { return slices.Contains(s.SupportedVersions, minVersion) }) {
		warn("%s profile: minTLSVersion %s, but every remaining cipher needs TLS 1.2, so older clients cannot connect", t, minName)
	}

	// Curves.
	var (
		curveIDs       []tls.CurveID
		unusableCurves []string
	)
	for _, name := range prof.Curves {
		id, err := ParseCurve(name)
		if err != nil {
			unusableCurves = append(unusableCurves, name)
			continue
		}
		if !slices.Contains(curveIDs, id) {
			curveIDs = append(curveIDs, id)
		}
	}
	if len(unusableCurves) > 0 {
		if refuse {
			return Resolved{}, warnings, fieldError(p+"custom.curves", "", "Go cannot use "+strings.Join(unusableCurves, ", ")+" (unknown names)", strictFix, ValidCurves())
		}
		warn("%s profile: dropped curves Go cannot use: %s (unknown names)", t, strings.Join(unusableCurves, ", "))
	}
	if len(prof.Curves) > 0 && len(curveIDs) == 0 {
		return Resolved{}, warnings, fieldError(p+"custom.curves", "", "names no curve Go can use ("+strings.Join(unusableCurves, ", ")+")", "name at least one valid curve, or remove curves to use the TLS library defaults", ValidCurves())
	}
	if len(curveIDs) > 0 && minVersion < tls.VersionTLS13 && !slices.ContainsFunc(curveIDs, func(id tls.CurveID) bool { return !isTLS13OnlyCurve(id) }) &&
		slices.ContainsFunc(suites, func(s *tls.CipherSuite) bool { return strings.HasPrefix(s.Name, "TLS_ECDHE_") }) {
		warn("%scustom.curves names only TLS 1.3 hybrid groups, so TLS 1.2 clients cannot use the ECDHE ciphers; add X25519 or secp256r1, or set minTLSVersion to VersionTLS13", p)
	}

	doc := Document{
		Type:          t,
		MinTLSVersion: minName,
		Ciphers:       nonNil(slices.Clone(prof.Ciphers)),
		CipherSuites:  []string{},
		Curves:        nonNil(slices.Clone(prof.Curves)),
		Source:        source,
	}
	for _, s := range suites {
		doc.CipherSuites = append(doc.CipherSuites, s.Name)
	}
	for _, id := range curveIDs {
		name, _ := CurveName(id)
		doc.CurvePreferences = append(doc.CurvePreferences, name)
	}
	b, hash, err := doc.Encode()
	if err != nil {
		return Resolved{}, warnings, err
	}
	return Resolved{Document: doc, JSON: b, Hash: hash}, warnings, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
