package tlsprofile

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is a problem with one field of a profile: where it is, what is
// wrong, and what to do. The provider maps Field to an attribute path.
type FieldError struct {
	// Field is the path of the field in our API ("type",
	// "custom.ciphers[2]", "custom.minTLSVersion", "custom.curves"), prefixed
	// with "spec.tlsSecurityProfile." when the profile came from the
	// cluster's APIServer object. Empty from the single-value validators,
	// whose caller knows the place.
	Field string
	// Value is the offending value, when there is one.
	Value string
	// Problem says what is wrong.
	Problem string
	// Fix says what to do, when Valid alone does not.
	Fix string
	// Valid lists the accepted names, when a list applies.
	Valid []string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Problem)
	if e.Value != "" {
		fmt.Fprintf(&b, " %q", e.Value)
	}
	if e.Fix != "" {
		b.WriteString("; " + e.Fix)
	}
	if len(e.Valid) > 0 {
		b.WriteString("; use one of: " + strings.Join(e.Valid, ", "))
	}
	return b.String()
}

// at returns err with its field set, when it is a *FieldError.
func at(field string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		c := *fe
		c.Field = field
		return &c
	}
	return fmt.Errorf("%s: %w", field, err)
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
// version, cipher or curve name, a duplicated curve, custom settings on a
// predefined type, a Custom profile without minTLSVersion, and any profile
// [Resolve] would refuse even under the lenient adherence. Every problem is a
// *FieldError, joined with errors.Join. Names Go cannot use but that are
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
			errs = append(errs, &FieldError{Field: p + "custom", Problem: fmt.Sprintf("ciphers, minTLSVersion and curves are only used with type Custom, and type is %s", spec.effectiveType()), Fix: "remove them, or set type to Custom"})
		}
		return errors.Join(errs...)
	}
	if spec.MinTLSVersion == "" {
		errs = append(errs, &FieldError{Field: p + "custom.minTLSVersion", Problem: "is required with type Custom", Valid: ValidTLSVersions()})
	} else if err := ValidateTLSVersion(string(spec.MinTLSVersion)); err != nil {
		errs = append(errs, at(p+"custom.minTLSVersion", err))
	}
	for i, c := range spec.Ciphers {
		if err := ValidateCipher(c); err != nil {
			errs = append(errs, at(fmt.Sprintf("%scustom.ciphers[%d]", p, i), err))
		}
	}
	seen := map[string]int{}
	for i, c := range spec.Curves {
		id, err := ParseCurve(c)
		if err != nil {
			errs = append(errs, at(fmt.Sprintf("%scustom.curves[%d]", p, i), err))
			continue
		}
		name, _ := CurveName(id)
		if j, dup := seen[name]; dup {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("%scustom.curves[%d]", p, i), Value: c, Problem: "duplicate curve", Fix: fmt.Sprintf("curves[%d] already names %s; name each curve once", j, name)})
			continue
		}
		seen[name] = i
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	_, _, err := Resolve(spec, AdherenceNoOpinion)
	return err
}
