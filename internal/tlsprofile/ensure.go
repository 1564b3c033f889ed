package tlsprofile

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// ProfileConfigMap is one profile ConfigMap and the workloads it rolls: what
// Ensure writes.
type ProfileConfigMap struct {
	Namespace, Name string
	// Spec is what Resolved was resolved from (recorded for the
	// reconciler; a cluster profile records only its source).
	Spec     Spec
	Resolved Resolved
	Targets  []Target
}

// Step is where Ensure stopped.
type Step int

const (
	// StepTargets: a rollout target is missing or cannot be read (field
	// errors at "rolloutTargets[i]"). Nothing was written.
	StepTargets Step = iota
	// StepConfigMap: the ConfigMap could not be written (ErrNotOurs, or
	// the API server's error). No target was touched.
	StepConfigMap
	// StepAnnotate: the ConfigMap is written, but some targets could not
	// be given the hash (field errors at "rolloutTargets[i]").
	StepAnnotate
)

// StepError is Ensure failing at Step.
type StepError struct {
	Step Step
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// targetPath is where a rollout target's problem is reported.
func targetPath(i int) *field.Path { return field.NewPath("rolloutTargets").Index(i) }

// Ensure writes p: it checks that every rollout target exists before the
// first write, applies the ConfigMap (never taking over one kmshealth did
// not create), sets the profile's hash on every target's pod template
// (which rolls it), and releases the targets of prior that p no longer
// has. A target that cannot be released is a warning, not an error: the
// profile is written, and a stale hash annotation rolls nothing. Any
// error is a *StepError.
func Ensure(ctx context.Context, cms corev1client.ConfigMapsGetter, dyn dynamic.Interface, p ProfileConfigMap, prior []Target) (warnings []error, err error) {
	var missing field.ErrorList
	for i, t := range p.Targets {
		_, found, err := TargetHash(ctx, dyn, t)
		switch {
		case err != nil:
			missing = append(missing, field.Invalid(targetPath(i), field.OmitValueType{}, err.Error()))
		case !found:
			missing = append(missing, &field.Error{Type: field.ErrorTypeNotFound, Field: targetPath(i).String(), BadValue: field.OmitValueType{},
				Detail: fmt.Sprintf("%s not found: create it first (or add a depends_on on the resource that does), or remove it from the rollout targets.", t)})
		}
	}
	if len(missing) > 0 {
		return nil, &StepError{Step: StepTargets, Err: missing.ToAggregate()}
	}
	ac, err := ConfigMap(p.Namespace, p.Name, p.Spec, p.Resolved, p.Targets)
	if err != nil {
		return nil, &StepError{Step: StepConfigMap, Err: fmt.Errorf("build the TLS profile ConfigMap %s/%s: %w", p.Namespace, p.Name, err)}
	}
	if err := ApplyConfigMap(ctx, cms, ac); err != nil {
		return nil, &StepError{Step: StepConfigMap, Err: err}
	}
	var unannotated field.ErrorList
	for i, t := range p.Targets {
		if err := AnnotateTarget(ctx, dyn, t, p.Resolved.Hash); err != nil {
			unannotated = append(unannotated, field.Invalid(targetPath(i), field.OmitValueType{}, err.Error()))
		}
	}
	for _, t := range prior {
		if !slices.Contains(p.Targets, t) {
			if err := ReleaseTarget(ctx, dyn, t); err != nil {
				warnings = append(warnings, err)
			}
		}
	}
	if len(unannotated) > 0 {
		return warnings, &StepError{Step: StepAnnotate, Err: unannotated.ToAggregate()}
	}
	return warnings, nil
}
