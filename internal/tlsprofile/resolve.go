package tlsprofile

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/ciphers"
)

// Spec is what a user or the cluster asks for. Type defaults to
// Intermediate. MinTLSVersion, Ciphers (OpenSSL or IANA names) and Groups
// are used only with type Custom. FIPS keeps only what FIPS approves, for
// any type. Source defaults to static.
type Spec struct {
	Type          ProfileType `json:"type,omitempty"`
	MinTLSVersion TLSVersion  `json:"minTLSVersion,omitempty"`
	Ciphers       []string    `json:"ciphers,omitempty"`
	Groups        []string    `json:"groups,omitempty"`
	FIPS          bool        `json:"fips,omitempty"`
	Source        Source      `json:"source,omitempty"`
	// Warnings are what reading the spec noticed (an older spelling in the
	// cluster's APIServer object); Resolve passes them on first.
	Warnings []string `json:"-"`
}

// UnmarshalJSON reads a recorded spec; a record written before groups were
// called groups says "curves", which is read as groups.
func (s *Spec) UnmarshalJSON(b []byte) error {
	type plain Spec
	var v struct {
		plain
		Curves []string `json:"curves"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Spec(v.plain)
	if len(s.Groups) == 0 {
		s.Groups = v.Curves
	}
	return nil
}

func (s Spec) effectiveType() ProfileType {
	if s.Type == "" {
		return DefaultProfile
	}
	return s.Type
}

func (s Spec) hasCustom() bool {
	return s.MinTLSVersion != "" || len(s.Ciphers) > 0 || len(s.Groups) > 0
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
//   - Groups: names become Go curve IDs, kept as a filter on what Go offers
//     and listed in Go's preference order (OpenShift's API says Go-based
//     components treat the list so); unknown names, and groups the running
//     Go does not implement, are dropped with a warning. No groups named
//     (a Custom profile only) means the TLS library's defaults, which the
//     document says explicitly ([LibraryDefaults]).
//   - FIPS: with spec.FIPS, every cipher and group FIPS does not approve is
//     dropped (only the NIST P-curves and the AES-GCM suites stay; see
//     [GroupIsFIPSApproved] and ciphers.FIPSApproved), a minimum below TLS
//     1.2 is raised to VersionTLS12, and the document lists what was dropped
//     (fipsDropped), with a warning.
//   - Adherence: under a strict adherence (StrictAllComponents, or an
//     unknown value) an item of a Custom profile that Go cannot honour is
//     refused with an error instead of dropped. The predefined profiles are
//     intent-based ("the list may be reduced", says OpenShift's API), so
//     their Go-less ciphers are dropped with a warning under any adherence.
//     The adherence is written into the document, so the hash — and the
//     rollout of the consumers — follows a change of the adherence alone.
//
// A profile that cannot be honoured is refused with a *field.Error saying
// why — a minimum below TLS 1.3 with no usable TLS 1.0–1.2 cipher left,
// groups named but none usable — never resolved to an empty list that would
// silently fall back to Go's defaults.
func Resolve(spec Spec, adherence Adherence) (Resolved, []string, error) {
	warnings := slices.Clone(spec.Warnings)
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
		prof = Profile{Type: t, MinTLSVersion: spec.MinTLSVersion, Ciphers: slices.Clone(spec.Ciphers), Groups: slices.Clone(spec.Groups)}
	} else {
		pre, ok := Predefined(t)
		if !ok {
			return Resolved{}, warnings, at(p+"type", ValidateType(string(t)))
		}
		if spec.hasCustom() {
			return Resolved{}, warnings, fieldError(p+"custom", "", fmt.Sprintf("ciphers, minTLSVersion and groups are only used with type Custom, and type is %s", t), "remove them, or set type to Custom", nil)
		}
		prof = pre
	}
	// Strict adherence applies to what a person named in a Custom profile.
	refuse := adherence.IsStrict() && t == ProfileCustom
	const strictFix = "remove them; tlsAdherence " + string(AdherenceStrict) + " refuses what Go cannot honour instead of dropping it"
	cat := ciphers.NewCatalog()

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

	// FIPS: what is not approved goes before anything else looks at it.
	var fipsDropped []string
	if spec.FIPS {
		var raised string
		if minVersion < tls.VersionTLS12 {
			raised = fmt.Sprintf("; minTLSVersion %s raised to %s, the lowest FIPS allows", minName, VersionTLS12)
			minName, minVersion = VersionTLS12, tls.VersionTLS12
		}
		prof.Ciphers = slices.DeleteFunc(prof.Ciphers, func(name string) bool {
			c := cat.Lookup(name)
			if c.Kind == ciphers.Unknown || ciphers.FIPSApproved(c.IANA) {
				return false
			}
			fipsDropped = append(fipsDropped, name)
			return true
		})
		named := len(prof.Groups) > 0
		prof.Groups = slices.DeleteFunc(prof.Groups, func(name string) bool {
			id, err := ParseGroup(name)
			if err != nil || GroupIsFIPSApproved(id) {
				return false
			}
			fipsDropped = append(fipsDropped, name)
			return true
		})
		if named && len(prof.Groups) == 0 {
			return Resolved{}, warnings, fieldError(p+"custom.groups", "", "names no FIPS-approved group (only secp256r1, secp384r1 and secp521r1 are)", "add one of them, or set fips to false", nil)
		}
		if len(fipsDropped) > 0 || raised != "" {
			warn("%s profile with fips: dropped what FIPS does not approve: %s%s", t, strings.Join(fipsDropped, ", "), raised)
		}
	}

	// Ciphers.
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
	if t == ProfileCustom && len(tls13) > 0 && len(tls13) < 3 && !spec.FIPS {
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
		if len(fipsDropped) > 0 {
			problem += " (not FIPS-approved: " + strings.Join(fipsDropped, ", ") + ")"
		}
		return Resolved{}, warnings, fieldError(field, "", problem, "add a cipher such as ECDHE-RSA-AES128-GCM-SHA256 or ECDHE-ECDSA-AES128-GCM-SHA256, or set minTLSVersion to VersionTLS13", nil)
	}
	if minVersion < tls.VersionTLS12 && !slices.ContainsFunc(suites, func(s *tls.CipherSuite) bool { return slices.Contains(s.SupportedVersions, minVersion) }) {
		warn("%s profile: minTLSVersion %s, but every remaining cipher needs TLS 1.2, so older clients cannot connect", t, minName)
	}

	// Groups: a filter on what Go offers, in Go's order.
	var (
		named          []tls.CurveID
		unusableGroups []string
	)
	for _, name := range prof.Groups {
		id, err := ParseGroup(name)
		switch {
		case err != nil:
			unusableGroups = append(unusableGroups, name+" (unknown name)")
		case !goKnows(id):
			unusableGroups = append(unusableGroups, name+" (not implemented by this Go's crypto/tls)")
		default:
			named = append(named, id)
		}
	}
	if len(unusableGroups) > 0 {
		if refuse {
			return Resolved{}, warnings, fieldError(p+"custom.groups", "", "Go cannot use "+strings.Join(unusableGroups, ", "), strictFix, ValidGroups())
		}
		warn("%s profile: dropped groups Go cannot use: %s", t, strings.Join(unusableGroups, ", "))
	}
	var groupIDs []tls.CurveID
	for _, g := range groupTable() {
		if slices.Contains(named, g.id) {
			groupIDs = append(groupIDs, g.id)
		}
	}
	if len(prof.Groups) > 0 && len(groupIDs) == 0 {
		return Resolved{}, warnings, fieldError(p+"custom.groups", "", "names no group Go can use ("+strings.Join(unusableGroups, ", ")+")", "name at least one valid group, or remove groups to use the TLS library defaults", ValidGroups())
	}
	if len(groupIDs) > 0 && minVersion < tls.VersionTLS13 && !slices.ContainsFunc(groupIDs, func(id tls.CurveID) bool { return !isTLS13OnlyGroup(id) }) &&
		slices.ContainsFunc(suites, func(s *tls.CipherSuite) bool { return strings.HasPrefix(s.Name, "TLS_ECDHE_") }) {
		warn("%scustom.groups names only TLS 1.3 hybrid groups, so TLS 1.2 clients cannot use the ECDHE ciphers; add X25519 or secp256r1, or set minTLSVersion to VersionTLS13", p)
	}

	doc := Document{
		Type:          t,
		MinTLSVersion: minName,
		Ciphers:       nonNil(prof.Ciphers),
		CipherSuites:  []string{},
		Groups:        nonNil(prof.Groups),
		FIPS:          spec.FIPS,
		FIPSDropped:   fipsDropped,
		TLSAdherence:  adherence,
		Source:        source,
	}
	for _, s := range suites {
		doc.CipherSuites = append(doc.CipherSuites, s.Name)
	}
	for _, id := range groupIDs {
		name, _ := GroupName(id)
		doc.CurvePreferences = append(doc.CurvePreferences, name)
	}
	args, err := doc.componentArgsFor()
	if err != nil {
		return Resolved{}, warnings, err
	}
	doc.ComponentArgs = args
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
