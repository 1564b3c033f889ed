package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Apply brings the cluster to d by server-side apply (field manager
// kmshealth, forced, so an out-of-band change of one of kmshealth's fields
// is restored), in declaration order, then hands over what d releases and
// deletes leftovers. Everything that can be refused is checked before the
// first write: a *Refusal then wraps ErrRefused. A failure after the first
// write is a *PartialError.
func Apply(ctx context.Context, cl Clients, d Declaration) error {
	live, err := Observe(ctx, cl, d)
	if err != nil {
		return &Refusal{Reasons: []error{err}}
	}
	if reasons := live.check(ctx, cl, d); len(reasons) > 0 {
		return &Refusal{Reasons: reasons}
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	for _, o := range d.Objects {
		if o.Unwanted {
			if obj := live.Get(o.ID); live.Owns(obj, o.Shared) && obj.GetDeletionTimestamp() == nil {
				if err := deleteObject(ctx, cl, o.ID, obj); err != nil {
					return &PartialError{Failed: o.ID, Err: err}
				}
			}
			continue
		}
		if o.Body == nil {
			continue
		}
		body, err := toUnstructured(o.Body)
		if err != nil {
			return &PartialError{Failed: o.ID, Err: err}
		}
		applied, err := applyObject(ctx, cl, o, body, opts)
		if err != nil {
			return &PartialError{Failed: o.ID, Err: &RequestError{Verb: "patch", ID: o.ID, Err: err}}
		}
		if o.Ready != nil {
			if err := waitReady(ctx, cl, o, applied); err != nil {
				return &PartialError{Failed: o.ID, Err: err}
			}
		}
	}
	var errs []error
	for _, r := range d.Released {
		if !live.Owns(live.objects[r.ID], true) {
			continue
		}
		body, err := toUnstructured(r.Body)
		if err == nil {
			_, err = cl.resource(r.ID).Apply(ctx, r.Name, body, opts)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("hand over %s: %w", r.ID, err))
		}
	}
	for _, id := range live.leftovers(d) {
		if err := deleteObject(ctx, cl, id, live.Get(id)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &PartialError{Failed: d.Objects[len(d.Objects)-1].ID, Err: err}
	}
	return nil
}

// ApplyFields writes body, kmshealth's fields of an object the
// installation does not own (a sidecar in someone's workload, a port in
// their Service), by server-side apply as FieldManager, forced. Body should
// carry the object's UID as read, so an object deleted since is never
// re-created holding nothing but kmshealth's fields. A failure is a
// *RequestError.
func ApplyFields(ctx context.Context, cl Clients, id ID, body any) error {
	u, err := toUnstructured(body)
	if err == nil {
		_, err = cl.resource(id).Apply(ctx, id.Name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	}
	if err != nil {
		return &RequestError{Verb: "patch", ID: id, Err: err}
	}
	return nil
}

// check finds every reason not to write: a missing or terminating
// namespace, namespaces of declared objects that do not exist, objects at
// declared names that are someone else's, and the installer's own.
func (l *Live) check(ctx context.Context, cl Clients, d Declaration) []error {
	var errs []error
	// An installation without a namespace of its own (Declaration.Ours)
	// writes into namespaces it neither creates nor reads.
	own := d.Namespace != ""
	creates := d.declared(ID{Kind: Namespaces, Name: d.Namespace})
	switch ns := l.namespace; {
	case !own:
	case ns == nil && !creates:
		errs = append(errs, fmt.Errorf("namespace %q not found: %s", d.Namespace, d.NamespaceHint))
	case ns != nil && ns.GetDeletionTimestamp() != nil:
		errs = append(errs, fmt.Errorf("namespace %q is being deleted: wait until it is gone, or choose another namespace", d.Namespace))
	}
	seen := map[string]bool{d.Namespace: true}
	for _, o := range d.Objects {
		if o.Body == nil {
			continue
		}
		if own && o.Kind.Namespaced && !seen[o.Namespace] {
			seen[o.Namespace] = true
			ns, err := get(ctx, cl, ID{Kind: Namespaces, Name: o.Namespace})
			switch {
			case err != nil:
				errs = append(errs, err)
			case ns == nil:
				errs = append(errs, fmt.Errorf("namespace %q not found: it would hold %s; create it first", o.Namespace, o.ID))
			}
		}
		obj := l.objects[o.ID]
		if obj == nil || l.Owns(obj, o.Shared) {
			continue
		}
		hint := o.ForeignHint
		if hint == "" {
			hint = "kmshealth will not take it over or delete it: delete or rename it, or choose another name"
		}
		errs = append(errs, &ForeignError{ID: o.ID, Selector: l.selector(), Hint: hint})
	}
	if d.Precheck != nil {
		errs = append(errs, d.Precheck(l)...)
	}
	return errs
}

func applyObject(ctx context.Context, cl Clients, o Object, body *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	if !o.RetryNotFound {
		return cl.resource(o.ID).Apply(ctx, o.Name, body, opts)
	}
	// Right after its CRD is established a resource may take a moment to
	// be served: NotFound is retried, with backoff, until ctx ends.
	var out *unstructured.Unstructured
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: 1 << 30},
		func(ctx context.Context) (bool, error) {
			out, last = cl.resource(o.ID).Apply(ctx, o.Name, body, opts)
			if apierrors.IsNotFound(last) {
				return false, nil
			}
			return true, last
		})
	if last != nil {
		return nil, last
	}
	return out, err
}

// waitReady watches the object until o.Ready holds.
func waitReady(ctx context.Context, cl Clients, o Object, applied *unstructured.Unstructured) error {
	if ok, err := o.Ready(applied); ok || err != nil {
		return err
	}
	err := kube.WaitFor(ctx, cl.resource(o.ID), o.Name, o.Ready)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s not ready in time: check the API server's log, or raise the timeout", o.ID)
	}
	return err
}

// Deleted is what a Delete left in place on purpose, and why.
type Deleted struct {
	Kept []string
}

// Delete removes every object of d that is the installation's, in reverse
// declaration order, then the leftovers of the swept kinds, and waits for
// those declared WaitGone. Objects of someone else at the same names are
// left alone; an object whose Keep gives a reason is kept.
func Delete(ctx context.Context, cl Clients, d Declaration) (Deleted, error) {
	var out Deleted
	live, err := Observe(ctx, cl, d)
	if err != nil {
		return out, err
	}
	var gone []Object
	for i := len(d.Objects) - 1; i >= 0; i-- {
		o := d.Objects[i]
		if err := deleteDeclared(ctx, cl, live, o, &out, &gone); err != nil {
			return out, err
		}
		if o.AfterDelete != nil {
			if err := o.AfterDelete(ctx, cl); err != nil {
				return out, err
			}
		}
	}
	var errs []error
	for _, id := range live.leftovers(d) {
		errs = append(errs, deleteObject(ctx, cl, id, live.Get(id)))
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	for _, o := range gone {
		if err := WaitGone(ctx, cl, o.ID); err != nil {
			return out, err
		}
	}
	return out, nil
}

// deleteDeclared deletes o if it is the installation's and not kept,
// adding it to gone when Delete must wait for it.
func deleteDeclared(ctx context.Context, cl Clients, live *Live, o Object, out *Deleted, gone *[]Object) error {
	obj := live.Get(o.ID)
	if !live.Owns(obj, o.Shared) || obj.GetDeletionTimestamp() != nil && !o.WaitGone {
		return nil
	}
	if o.Keep != nil {
		reason, err := o.Keep(ctx, cl)
		if err != nil {
			return err
		}
		if reason != "" {
			out.Kept = append(out.Kept, reason)
			return nil
		}
	}
	if obj.GetDeletionTimestamp() == nil {
		if err := deleteObject(ctx, cl, o.ID, obj); err != nil {
			return err
		}
	}
	if o.WaitGone {
		*gone = append(*gone, o)
	}
	return nil
}

// deleteObject deletes obj if it still has its UID, in the background;
// gone is fine.
func deleteObject(ctx context.Context, cl Clients, id ID, obj *unstructured.Unstructured) error {
	uid := obj.GetUID()
	background := metav1.DeletePropagationBackground
	err := cl.resource(id).Delete(ctx, id.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return &RequestError{Verb: "delete", ID: id, Err: err}
	}
	return nil
}

// WaitGone watches until the object id names is deleted. When time runs
// out it says what holds the object: its finalizers and the conditions its
// controller reports (a namespace names the resources it could not delete,
// or an aggregated API that is unavailable and so blocks its deletion).
func WaitGone(ctx context.Context, cl Clients, id ID) error {
	err := kube.WaitGone(ctx, cl.resource(id), id.Name)
	if err == nil || ctx.Err() == nil {
		return err
	}
	why := "the API server deletes what it holds first; check for finalizers, or raise the delete timeout"
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if obj, gerr := cl.resource(id).Get(rctx, id.Name, metav1.GetOptions{}); gerr == nil {
		why = "it is held by " + holders(obj) + "; fix that, or raise the delete timeout"
	}
	return fmt.Errorf("%s was not deleted in time: %s", id, why)
}

// holders describes what keeps a deleted object: its finalizers and the
// True conditions of its status (e.g. NamespaceDeletionDiscoveryFailure).
func holders(obj *unstructured.Unstructured) string {
	var parts []string
	if f := obj.GetFinalizers(); len(f) > 0 {
		parts = append(parts, "finalizers "+strings.Join(f, ", "))
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["status"] != "True" {
			continue
		}
		parts = append(parts, fmt.Sprintf("condition %v: %v", m["type"], m["message"]))
	}
	if len(parts) == 0 {
		return "nothing it reports (no finalizers, no conditions)"
	}
	return strings.Join(parts, "; ")
}
