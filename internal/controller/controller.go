// Package controller is the one controller shape of reconcile mode. A
// pattern says what it watches and what each key depends on, how to read
// the live state from the watches, what the desired state is (computed by
// the pattern's own internal/<pattern> package, the function the Terraform
// resource calls too), how the two compare and how to apply the
// difference; one reconcile loop does fetch → desired → compare → apply
// only on difference → Event + metrics, for every pattern alike.
//
// Watches are never of a whole kind of someone else's secrets: a key
// depends on named objects (one field-selected watch each; for the few,
// non-secret kinds marked ClusterWide — APIServices, webhook
// configurations — one watch of the whole kind, shared by every named
// object of it) or on kinds small enough to follow whole (Nodes). They run for the life of the
// process, on every replica, so a replica that starts leading — again, or
// for the first time — starts warm.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Pattern is what one controller keeps true. O is what Observe reads for a
// key, D the desired state computed from it.
type Pattern[O, D any] interface {
	// Name names the controller in logs, metrics and Events ("cabundle").
	Name() string
	// Roots are watched from the start to the end of the process; they
	// tell Deps what else to watch (e.g. the record of what to keep).
	Roots() []Ref
	// Deps says, from what the watches hold, which keys exist and which
	// objects each depends on: an event on any of them enqueues the key.
	// It runs after every event of a root, and of an object whose Kind
	// Reshapes (a dependency that names further dependencies). It may read
	// the cache (Get, List) but must not call Synced or Err.
	Deps(c Cache) map[string][]Ref
	// Observe reads, from the watches, everything Desired and InSync need
	// for key. ok is false when there is nothing to do now: the key is no
	// longer kept, or its watches have not listed yet (the first list
	// enqueues it again).
	Observe(c Cache, key string) (obs O, ok bool, err error)
	// Desired computes the desired state. An error wrapping a *Problem is
	// an input the controller cannot act on: it is reported (Warning
	// Event, metric) and not retried — the next event of an input will.
	Desired(obs O) (D, error)
	// InSync reports whether the live state already is the desired one:
	// then nothing is written.
	InSync(obs O, want D) bool
	// Apply writes the difference and says what it did, for the Event.
	Apply(ctx context.Context, obs O, want D) (Change, error)
	// Subject is the object Events are about; nil for none.
	Subject(obs O) runtime.Object
}

// Requeuer is implemented by patterns whose state changes with time alone
// (a report turning stale): key is looked at again after the duration,
// with or without an event. Zero means not.
type Requeuer[O, D any] interface {
	RequeueAfter(obs O, want D) time.Duration
}

// Expirer is implemented by patterns whose desired state is a set of
// certificates (a caBundle): the controller exports the earliest NotAfter
// per key as kmshealth_cabundle_not_after_timestamp_seconds, so an expiry
// between two applies is an alert, not an outage. Zero exports nothing.
type Expirer[D any] interface {
	NotAfter(want D) time.Time
}

// Change is what an Apply did: the reason and note of its Normal Event.
type Change struct {
	Reason string // e.g. CABundleRestored
	Action string // e.g. Restore
	Note   string
}

// ErrGone is wrapped by an Apply whose subject disappeared before the
// write (deleted, or replaced by an object with another UID): nothing was
// written, and nothing is reported — the deletion is an event of its own.
var ErrGone = errors.New("the object is gone")

// Problem is an input a pattern cannot act on (a missing or invalid
// source, an object that cannot take the desired state): the controller
// records a Warning Event with Reason and counts Metric, and leaves the
// live state alone.
type Problem struct {
	Reason string // Event reason, e.g. CABundleSourceMissing
	Metric string // kmshealth_reconcile_errors_total reason, e.g. source_missing
	Err    error
}

func (p *Problem) Error() string { return p.Err.Error() }
func (p *Problem) Unwrap() error { return p.Err }

// Controller is one pattern's controller: its watches, kept for the life
// of the process, and the reconcile loop the leader runs over them.
type Controller struct {
	name      string
	watches   *watches
	reconcile func(ctx context.Context, key string, rec events.EventRecorder) (reconcile.Result, error)
}

// New wraps a pattern into its controller.
func New[O, D any](p Pattern[O, D]) *Controller {
	c := &Controller{name: p.Name(), watches: newWatches(p.Name(), p.Roots(), p.Deps)}
	m := metricsFor(p.Name(), c.watches.count)
	opt := optional[O, D]{}
	opt.requeuer, _ = any(p).(Requeuer[O, D])
	opt.expirer, _ = any(p).(Expirer[D])
	c.reconcile = func(ctx context.Context, key string, rec events.EventRecorder) (reconcile.Result, error) {
		return reconcileOne(ctx, p, opt, c.watches, key, rec, m)
	}
	return c
}

// Name is the pattern's name.
func (c *Controller) Name() string { return c.name }

// Synced reports whether every watch has listed: readiness.
func (c *Controller) Synced() bool { return c.watches.Synced() }

// start starts the watches for the life of the process; listed, if set,
// is called after each watch's first list.
func (c *Controller) start(ctx context.Context, listed func()) {
	c.watches.listed = listed
	c.watches.start(ctx)
	c.watches.refresh()
}

// optional are the interfaces a pattern may implement besides Pattern.
type optional[O, D any] struct {
	requeuer Requeuer[O, D]
	expirer  Expirer[D]
}

// reconcileOne is the one reconcile loop: fetch → desired → compare →
// apply only on difference → Event + metrics.
func reconcileOne[O, D any](ctx context.Context, p Pattern[O, D], opt optional[O, D], c Cache, key string, rec events.EventRecorder, m *metrics) (reconcile.Result, error) {
	log := klog.FromContext(ctx).WithValues("controller", p.Name(), "key", key)
	obs, ok, err := p.Observe(c, key)
	if err != nil {
		m.result("error")
		return reconcile.Result{}, err
	}
	if !ok {
		m.forget(key)
		return reconcile.Result{}, nil
	}
	want, err := p.Desired(obs)
	var problem *Problem
	if errors.As(err, &problem) {
		m.problem(problem.Metric)
		if ctx.Err() == nil {
			event(rec, p.Subject(obs), corev1.EventTypeWarning, problem.Reason, "Reconcile", problem.Error())
		}
		log.Info("not reconciled", "reason", problem.Reason, "err", problem.Err.Error())
		return reconcile.Result{}, nil
	}
	if err != nil {
		m.result("error")
		return reconcile.Result{}, err
	}
	if opt.expirer != nil {
		m.expires(key, opt.expirer.NotAfter(want))
	}
	var after time.Duration
	if opt.requeuer != nil {
		after = opt.requeuer.RequeueAfter(obs, want)
	}
	if p.InSync(obs, want) {
		m.result("in_sync")
		m.synced()
		return reconcile.Result{RequeueAfter: after}, nil
	}
	if ctx.Err() != nil {
		return reconcile.Result{}, nil //nolint:nilerr // leadership ended: a non-leader writes nothing
	}
	change, err := p.Apply(ctx, obs, want)
	if errors.Is(err, ErrGone) {
		return reconcile.Result{}, nil // its deletion is an event of its own
	}
	if err != nil {
		if ctx.Err() != nil {
			return reconcile.Result{}, nil //nolint:nilerr // cut short by the end of leadership, not a failure
		}
		if errors.As(err, &problem) {
			m.problem(problem.Metric)
			event(rec, p.Subject(obs), corev1.EventTypeWarning, problem.Reason, "Reconcile", problem.Error())
			return reconcile.Result{}, nil
		}
		m.problem("apply")
		event(rec, p.Subject(obs), corev1.EventTypeWarning, "ApplyFailed", "Apply", err.Error())
		return reconcile.Result{}, fmt.Errorf("%s %s: %w", p.Name(), key, err)
	}
	m.result("written")
	m.written(key)
	m.synced()
	event(rec, p.Subject(obs), corev1.EventTypeNormal, change.Reason, change.Action, change.Note)
	log.Info("reconciled", "reason", change.Reason, "note", change.Note)
	return reconcile.Result{RequeueAfter: after}, nil
}

func event(rec events.EventRecorder, subject runtime.Object, eventType, reason, action, note string) {
	if rec == nil || subject == nil || reason == "" {
		return
	}
	rec.Eventf(subject, nil, eventType, reason, action, "%s", note)
}
