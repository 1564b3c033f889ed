package provider

import (
	"errors"
	"strconv"
	"strings"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pattern packages report a problem with their input as a field.Error
// (k8s.io/apimachinery/pkg/util/validation/field) at the field's path in
// the package's own JSON names: "tls.cipherSuites[2]",
// "resources.requests[cpu]". fieldAttributes is the one way from such a
// path to the attribute a resource sets it with, so a diagnostic points at
// the line of configuration to change.

// fieldAttributes maps one pattern package's field paths to one
// resource's attributes: under root, each name in snake_case, except the
// renamed prefixes.
type fieldAttributes struct {
	// root is the attribute the fields live under; empty for the top level.
	root path.Path
	// renames maps a prefix of field names (dotted, without indexes, e.g.
	// "tls.minVersion") to the attribute names it stands for (dotted, e.g.
	// "tls_profile.min_tls_version"), where those are not simply the
	// snake_case of the field names. The longest prefix wins.
	renames map[string]string
	// words renames field names inside messages (a message may say "set
	// tls.minVersion to …"); nil keeps messages as they are.
	words *strings.Replacer
}

// fieldSegment is one name of a field path with the indexes or keys that
// follow it: "cipherSuites[2]" is {"cipherSuites", ["2"]}.
type fieldSegment struct {
	name string
	keys []string
}

func splitFieldPath(fieldPath string) []fieldSegment {
	var out []fieldSegment
	for _, part := range strings.Split(fieldPath, ".") {
		name, rest, _ := strings.Cut(part, "[")
		seg := fieldSegment{name: name}
		for rest != "" {
			key, after, _ := strings.Cut(rest, "]")
			seg.keys = append(seg.keys, key)
			rest = strings.TrimPrefix(after, "[")
		}
		if seg.name != "" || len(seg.keys) > 0 {
			out = append(out, seg)
		}
	}
	return out
}

// path is the attribute a field path is set by.
func (f fieldAttributes) path(fieldPath string) path.Path {
	segs := splitFieldPath(fieldPath)
	var names []string
	// The longest renamed prefix, if any; indexes may only follow its
	// last name.
	for n := len(segs); n > 0 && names == nil; n-- {
		var prefix []string
		for i, s := range segs[:n] {
			if len(s.keys) > 0 && i < n-1 {
				break
			}
			prefix = append(prefix, s.name)
		}
		if len(prefix) < n {
			continue
		}
		if to, ok := f.renames[strings.Join(prefix, ".")]; ok {
			names = strings.Split(to, ".")
			last := names[len(names)-1]
			names = names[:len(names)-1]
			segs = append([]fieldSegment{{name: last, keys: segs[n-1].keys}}, segs[n:]...)
		}
	}
	p := f.root
	atRoot := len(p.Steps()) == 0
	step := func(name string) {
		if atRoot {
			p, atRoot = path.Root(name), false
		} else {
			p = p.AtName(name)
		}
	}
	for _, n := range names {
		step(n)
	}
	for i, s := range segs {
		if s.name != "" {
			name := s.name
			if i > 0 || names == nil {
				name = snakeCase(name)
			}
			step(name)
		}
		for _, k := range s.keys {
			if n, err := strconv.Atoi(k); err == nil {
				p = p.AtListIndex(n)
			} else {
				p = p.AtMapKey(k)
			}
		}
	}
	return p
}

// text is the attribute a field path is set by, as a user reads it:
// "authorization.resource_attributes.api_group", "ignore_paths[1]".
func (f fieldAttributes) text(fieldPath string) string {
	return strings.TrimPrefix(f.path(fieldPath).String(), ".")
}

// message is a field error in the resource's words: the attribute, then
// the error's detail with the field names it mentions renamed.
func (f fieldAttributes) message(e *field.Error) string {
	detail := e.Detail
	if f.words != nil {
		detail = f.words.Replace(detail)
	}
	return f.text(e.Field) + ": " + detail
}

// addErrors adds each field error in err at its attribute, except those
// whose field skip reports (values not known yet: judged once they are);
// an err without field errors is added as it is.
func (f fieldAttributes) addErrors(diags *diag.Diagnostics, summary string, err error, skip func(fieldPath string) bool) {
	es := fieldErrorsOf(err)
	if len(es) == 0 {
		if err != nil {
			diags.AddError(summary, err.Error())
		}
		return
	}
	for _, e := range es {
		if skip == nil || !skip(e.Field) {
			diags.AddAttributeError(f.path(e.Field), summary, f.message(e))
		}
	}
}

// addWarnings adds each field error of ws as a warning at its attribute,
// with the summary summary gives for its field, except those skip reports.
func (f fieldAttributes) addWarnings(diags *diag.Diagnostics, ws field.ErrorList, summary func(fieldPath string) string, skip func(fieldPath string) bool) {
	for _, w := range ws {
		if skip == nil || !skip(w.Field) {
			diags.AddAttributeWarning(f.path(w.Field), summary(w.Field), f.message(w))
		}
	}
}

// fieldErrorsOf collects the field errors in err: one *field.Error, a
// field.ErrorList's ToAggregate(), or errors.Join of them, wrapped or not.
func fieldErrorsOf(err error) field.ErrorList {
	var (
		agg  utilerrors.Aggregate
		join interface{ Unwrap() []error }
		fe   *field.Error
		out  field.ErrorList
	)
	switch {
	case errors.As(err, &agg):
		for _, e := range agg.Errors() {
			out = append(out, fieldErrorsOf(e)...)
		}
	case errors.As(err, &join):
		for _, e := range join.Unwrap() {
			out = append(out, fieldErrorsOf(e)...)
		}
	case errors.As(err, &fe):
		out = field.ErrorList{fe}
	}
	return out
}

// fieldErrorText is err as a user reads it where there is no attribute
// to attach it to (a function argument): each field error as
// "<field>: <detail>", the field in the pattern's own names, joined by
// "; "; an err without field errors as it is.
func fieldErrorText(err error) string {
	es := fieldErrorsOf(err)
	if len(es) == 0 {
		return err.Error()
	}
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Field + ": " + e.Detail
		if e.Field == "" {
			msgs[i] = e.Detail
		}
	}
	return strings.Join(msgs, "; ")
}

// snakeCase is a Go/JSON name in Terraform's spelling: byHTTPHeader →
// by_http_header, minTLSVersion → min_tls_version.
func snakeCase(s string) string {
	var b strings.Builder
	runes := []rune(s)
	for i, r := range runes {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1]))
			nextLower := i > 0 && i+1 < len(runes) && unicode.IsLower(runes[i+1]) && unicode.IsUpper(runes[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
