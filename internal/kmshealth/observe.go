package kmshealth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Query says which conditions to judge, how, and how long to wait for
// rotation readiness.
type Query struct {
	Target        Target
	MaxStaleness  time.Duration
	ExpectedNodes []string // nil: every node that has reported
	// Wait bounds how long Observe watches a target that is not rotation
	// ready (or does not exist yet); zero judges it once.
	Wait time.Duration
	Now  func() time.Time
	// Progress, when set, hears what the wait is doing (a message and
	// key/value pairs).
	Progress func(msg string, kv map[string]any)
}

// Observation is the judged health and how it was reached.
type Observation struct {
	Health   Health
	TimedOut bool // Wait ran out before rotation readiness
	// Format is the report format the target carried when last judged.
	Format ReportFormat
}

// TargetMissingError says the target object, or its resource, does not
// exist.
type TargetMissingError struct {
	Target         Target
	ResourceServed bool          // the resource exists, the object does not
	Waited         time.Duration // how long Observe waited for it
}

func (e *TargetMissingError) Error() string {
	t := e.Target
	if !e.ResourceServed {
		return fmt.Sprintf("the API server serves no resource %q in %s (target %s)", t.Resource, t.GVR().GroupVersion(), t)
	}
	what := fmt.Sprintf("%s %q (target %s) does not exist", t.Resource, t.Name, t)
	if e.Waited > 0 {
		what += fmt.Sprintf(", also after waiting %s", e.Waited)
	}
	return what
}

// Observe reads and judges the target; when it is not rotation ready and
// q.Wait allows, it watches the target and judges every change until it
// is ready or the time is up. Time alone never makes a cluster ready (a
// report only turns stale), so only watch events can end the wait early;
// when it runs out, the last object seen is judged once more at that time.
func Observe(ctx context.Context, dyn dynamic.Interface, q Query) (Observation, error) {
	now := q.Now
	if now == nil {
		now = time.Now
	}
	progress := q.Progress
	if progress == nil {
		progress = func(string, map[string]any) {}
	}
	judge := func(obj *unstructured.Unstructured) Health {
		reports, _ := Reports(obj)
		return EvaluateReports(reports, EvalOptions{Now: now(), MaxStaleness: q.MaxStaleness, ExpectedNodes: q.ExpectedNodes})
	}
	format := func(obj *unstructured.Unstructured) ReportFormat {
		_, f := Reports(obj)
		return f
	}
	ri := dyn.Resource(q.Target.GVR())
	obj, err := GetTarget(ctx, dyn, q.Target)
	switch {
	case apierrors.IsNotFound(err):
		served, lerr := resourceServed(ctx, ri, q.Target)
		if lerr != nil {
			return Observation{}, lerr
		}
		if !served || q.Wait == 0 {
			return Observation{}, &TargetMissingError{Target: q.Target, ResourceServed: served}
		}
		obj = nil
	case err != nil:
		return Observation{}, err
	default:
		if h := judge(obj); h.RotationReady || q.Wait == 0 {
			return Observation{Health: h, Format: format(obj)}, nil
		}
	}

	start := now()
	progress("KMS plugins not ready for key rotation; watching the target", map[string]any{"target": q.Target.String(), "wait": q.Wait.String()})
	wctx, cancel := context.WithTimeout(ctx, q.Wait)
	defer cancel()
	last := obj
	var lastProblems []string
	ready := func(ev watch.Event) (bool, error) {
		o, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted {
			last = nil
			progress("KMS health target deleted; waiting for it to appear", map[string]any{"target": q.Target.String()})
			return false, nil
		}
		last = o
		h := judge(o)
		if h.RotationReady {
			return true, nil
		}
		if !slices.Equal(h.Problems, lastProblems) {
			lastProblems = h.Problems
			progress("KMS plugins not ready for key rotation yet", map[string]any{
				"target": q.Target.String(), "problems": strings.Join(h.Problems, "; "),
				"waited": now().Sub(start).Truncate(time.Millisecond).String(),
			})
		}
		return false, nil
	}
	lw := kube.NewRecordedListWatch(kube.NameListWatch(ri, q.Target.Name))
	_, err = watchtools.UntilWithSync(wctx, lw, &unstructured.Unstructured{}, nil, ready)
	if ctx.Err() != nil {
		return Observation{}, ctx.Err()
	}
	if err != nil && !lw.Succeeded() {
		// The informer only logs and retries a failed list or watch (e.g.
		// no RBAC for them): report why nothing could be watched.
		cause := lw.LastErr()
		if cause == nil {
			cause = errors.New("no list or watch completed in time")
		}
		return Observation{}, fmt.Errorf("watch target %s for %s: %w", q.Target, q.Wait, cause)
	}
	timedOut := err != nil
	if timedOut {
		progress("KMS plugins not ready when the wait ran out", map[string]any{"target": q.Target.String(), "wait": q.Wait.String()})
	} else {
		progress("KMS plugins ready for key rotation", map[string]any{"target": q.Target.String(), "waited": now().Sub(start).Truncate(time.Millisecond).String()})
	}
	if last == nil {
		return Observation{}, &TargetMissingError{Target: q.Target, ResourceServed: true, Waited: q.Wait}
	}
	return Observation{Health: judge(last), TimedOut: timedOut, Format: format(last)}, nil
}

// resourceServed tells a missing object from a missing resource (e.g. the
// CRD is not installed): both make a get NotFound, only the latter a list.
func resourceServed(ctx context.Context, ri dynamic.ResourceInterface, t Target) (bool, error) {
	_, err := ri.List(ctx, metav1.ListOptions{Limit: 1, FieldSelector: "metadata.name=" + t.Name})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("list %s for target %s: %w", t.GVR().GroupResource(), t, err)
	}
	return true, nil
}
