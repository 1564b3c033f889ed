package tlsprofile

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fieldError is a problem with one field of a profile, as
// k8s.io/apimachinery's validation reports them (a *field.Error), so the
// provider maps every pattern's field paths to attributes the same way.
// fld is the path of the field in our API ("type", "custom.ciphers[2]",
// "custom.minTLSVersion", "custom.groups"), prefixed with
// "spec.tlsSecurityProfile." when the profile came from the cluster's
// APIServer object; empty from the single-value validators, whose caller
// sets the place (at). The Detail says what is wrong (problem), the
// offending value, what to do (fix) and the accepted names (valid).
func fieldError(fld, value, problem, fix string, valid []string) *field.Error {
	var b strings.Builder
	b.WriteString(problem)
	if value != "" {
		fmt.Fprintf(&b, " %q", value)
	}
	if fix != "" {
		b.WriteString("; " + fix)
	}
	if len(valid) > 0 {
		b.WriteString("; use one of: " + strings.Join(valid, ", "))
	}
	typ := field.ErrorTypeInvalid
	if len(valid) > 0 {
		typ = field.ErrorTypeNotSupported
	}
	return &field.Error{Type: typ, Field: fld, BadValue: field.OmitValueType{}, Detail: b.String()}
}

// at returns err with its field set, when it is a *field.Error.
func at(fld string, err error) error {
	var fe *field.Error
	if errors.As(err, &fe) {
		c := *fe
		c.Field = fld
		return &c
	}
	return fmt.Errorf("%s: %w", fld, err)
}

// fieldPrefix is where a spec's fields live: our own API for a static
// profile, the APIServer object's spec for a cluster profile.
func fieldPrefix(s Source) string {
	if s == SourceCluster {
		return "spec.tlsSecurityProfile."
	}
	return ""
}

// ValidateSpec is the plan-time check of a profile: an unknown type, TLS
// version, cipher or group name, a duplicated group, more than [MaxGroups]
// groups, custom settings on a
// predefined type, a Custom profile without minTLSVersion, and any profile
// [Resolve] would refuse even under the lenient adherence. Every problem is a
// *field.Error, joined with errors.Join. Names Go cannot use but that are
// real (DHE suites and the like) pass here; Resolve drops them with a
// warning, or refuses them under strict adherence.
func ValidateSpec(spec Spec) error {
	p := fieldPrefix(spec.Source)
	var errs []error
	if err := ValidateType(string(spec.Type)); err != nil {
		return at(p+"type", err)
	}
	if spec.effectiveType() != ProfileCustom {
		if spec.hasCustom() {
			errs = append(errs, fieldError(p+"custom", "", fmt.Sprintf("ciphers, minTLSVersion and groups are only used with type Custom, and type is %s", spec.effectiveType()), "remove them, or set type to Custom", nil))
		}
		return errors.Join(errs...)
	}
	if spec.MinTLSVersion == "" {
		errs = append(errs, fieldError(p+"custom.minTLSVersion", "", "is required with type Custom", "", ValidTLSVersions()))
	} else if err := ValidateTLSVersion(string(spec.MinTLSVersion)); err != nil {
		errs = append(errs, at(p+"custom.minTLSVersion", err))
	}
	for i, c := range spec.Ciphers {
		if err := ValidateCipher(c); err != nil {
			errs = append(errs, at(fmt.Sprintf("%scustom.ciphers[%d]", p, i), err))
		}
	}
	if spec.Groups != nil && len(spec.Groups) == 0 {
		errs = append(errs, fieldError(p+"custom.groups", "", "is empty", "name at least one group, or leave groups out for the TLS library defaults", ValidGroups()))
	}
	if len(spec.Groups) > MaxGroups {
		errs = append(errs, fieldError(p+"custom.groups", "", fmt.Sprintf("names %d groups, more than the %d OpenShift allows", len(spec.Groups), MaxGroups), "name each group once", nil))
	}
	seen := map[string]int{}
	for i, g := range spec.Groups {
		if err := ValidateGroup(g); err != nil {
			errs = append(errs, at(fmt.Sprintf("%scustom.groups[%d]", p, i), err))
			continue
		}
		if j, dup := seen[g]; dup {
			errs = append(errs, fieldError(fmt.Sprintf("%scustom.groups[%d]", p, i), g, "duplicate group", fmt.Sprintf("groups[%d] already names it; groups is a set, name each group once", j), nil))
			continue
		}
		seen[g] = i
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	_, _, err := Resolve(spec, AdherenceNoOpinion)
	return err
}
