package rbacproxy

import (
	"context"
	"fmt"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
)

// Step is where Ensure stopped.
type Step int

const (
	// StepRead: the cluster could not be read (an *ObjectError). Nothing
	// was written.
	StepRead Step = iota
	// StepCheck: the cluster holds something that keeps the Config from
	// working (field errors, see FieldErrors), or the workload's pods run
	// as another ServiceAccount than planned (a *TargetChangedError).
	// Nothing was written.
	StepCheck
	// StepValidate: the Config is invalid (field errors). Nothing was
	// written.
	StepValidate
	// StepApply: a write failed part-way; some objects may be written.
	StepApply
	// StepRelease: everything was applied, but the port could not be
	// removed from the Service the previous apply used.
	StepRelease
)

// StepError is Ensure failing at Step.
type StepError struct {
	Step Step
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Written reports whether anything may have been written before the
// failure, i.e. whether the caller must remember the objects (destroy
// removes them).
func (e *StepError) Written() bool { return e.Step >= StepApply }

// TargetChangedError is a workload whose pods run as another ServiceAccount
// than the one the caller planned for.
type TargetChangedError struct {
	Target          Target
	Now, WasPlanned string
}

func (e *TargetChangedError) Error() string {
	return fmt.Sprintf("The pods of %s now run as ServiceAccount %q, the plan was made for %q: plan and apply again.", e.Target, e.Now, e.WasPlanned)
}

// EnsureOptions is what the caller knew when it planned the write.
type EnsureOptions struct {
	// PlannedServiceAccount is the ServiceAccount of the workload's pods
	// the plan was made for; empty when it was not known then.
	PlannedServiceAccount string
	// PriorServiceName is the Service the previous write added the proxy
	// port to; its port is removed when c names another Service (or none).
	PriorServiceName string
}

// Ensure makes the cluster hold what c describes, in the order that never
// leaves a half-made sidecar behind when it can be avoided: it reads the
// workload and kmshealth's objects (Observe), takes the ServiceAccount
// from the live pod template, checks the cluster (Check) and the Config
// (Validate) before the first write, applies (Apply), and removes the
// proxy port from the Service of the previous write when c names another.
// It returns c as applied (ServiceAccountName set to the live one); any
// error is a *StepError saying where it stopped.
func Ensure(ctx context.Context, cl install.Clients, c Config, opts EnsureOptions) (Config, error) {
	t := c.Target
	live, err := Observe(ctx, cl, c)
	if err != nil {
		return c, &StepError{Step: StepRead, Err: err}
	}
	if live.Workload != nil {
		sa := live.Workload.ServiceAccount()
		if opts.PlannedServiceAccount != "" && opts.PlannedServiceAccount != sa {
			return c, &StepError{Step: StepCheck, Err: &TargetChangedError{Target: t, Now: sa, WasPlanned: opts.PlannedServiceAccount}}
		}
		c.ServiceAccountName = sa
	}
	if err := c.Check(live); err != nil {
		return c, &StepError{Step: StepCheck, Err: err}
	}
	if err := c.Validate(); err != nil {
		return c, &StepError{Step: StepValidate, Err: err}
	}
	if err := c.Apply(ctx, cl, live); err != nil {
		return c, &StepError{Step: StepApply, Err: err}
	}
	if prior := opts.PriorServiceName; prior != "" && prior != c.ServiceName {
		if err := ReleaseServicePort(ctx, cl, t.Namespace, prior); err != nil {
			return c, &StepError{Step: StepRelease, Err: err}
		}
	}
	return c, nil
}
