package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ID names one object: its kind, namespace ("" when cluster-scoped) and
// name.
type ID struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (id ID) String() string {
	if id.Namespace == "" {
		return id.Kind.Name + " " + id.Name
	}
	return id.Kind.Name + " " + id.Namespace + "/" + id.Name
}

// Object is one object of an installation.
type Object struct {
	ID
	// Body is the apply configuration holding only kmshealth's fields
	// (a typed apply configuration or *unstructured.Unstructured). Nil
	// declares an object the installation knows by name only: it is read
	// and deleted, never applied (a Delete that has no configuration).
	Body any
	// Shared objects (a Namespace, a CRD, a custom resource) may also be
	// written as FieldManager by someone else: only the installation's
	// labels make them its own.
	Shared bool
	// ForeignHint is added to the refusal when the object exists and is
	// not the installation's: what the user can do instead.
	ForeignHint string
	// Ready, when set, is waited for by watch after the apply (a CRD
	// Established); it reports an error that makes waiting pointless.
	Ready func(*unstructured.Unstructured) (bool, error)
	// RetryNotFound retries an apply that fails with NotFound, for a
	// custom resource whose just-established CRD is not served yet.
	RetryNotFound bool
	// WaitGone makes Delete wait, by watch, until the object is gone (a
	// Namespace, a CRD: the API server first deletes what they hold).
	WaitGone bool
	// Keep, when set, is asked before Delete deletes the object; a
	// non-empty reason keeps it and is reported.
	Keep func(ctx context.Context, cl Clients) (reason string, err error)
	// AfterDelete runs once Delete has deleted the object, or found it
	// gone (the reporter removes its conditions once its ServiceAccount is
	// gone).
	AfterDelete func(ctx context.Context, cl Clients) error
	// Unwanted declares an object that must not exist as the
	// installation's (a part turned off, such as the rbac proxy's
	// NetworkPolicy): Apply deletes it in its turn, Drift reports it, Delete
	// deletes it. Body is nil.
	Unwanted bool
	// Compare, when set, replaces Drift's comparison of the fields
	// FieldManager owns: it says, in the installer's words, how the live
	// object differs from what it wants, nothing when in sync.
	Compare func(live *unstructured.Unstructured) []string
}

// Released is an object the installation once held but no longer owns
// (create_namespace or install_crd turned off): Apply hands it over by
// applying Body — the object without the installation's labels — so it is
// never deleted with the installation.
type Released struct {
	ID
	Body any
}

// Declaration is one installation: its objects in apply order (Delete
// goes in reverse), the kinds swept for leftovers, and the rules that are
// the installer's own.
type Declaration struct {
	Owner Owner
	// Namespace is where the installation runs; Objects include it when
	// the installation creates it.
	Namespace string
	// NamespaceHint says what to do when Namespace is missing and the
	// installation does not create it.
	NamespaceHint string
	Objects       []Object
	Released      []Released
	// Sweep are the kinds whose objects carrying the installation's labels
	// but no longer declared are leftovers: Drift reports them, Apply and
	// Delete delete them.
	Sweep []Kind
	// Precheck adds the installer's own refusals, found before any write.
	Precheck func(l *Live) []error
	// Ours, when set, tells the installation's objects instead of Owner:
	// objects a pattern owns outright for one target, marked by labels and
	// an annotation of its own (the rbac proxy's, rbacproxy.Declare). Such
	// an installation has no namespace of its own: leave Namespace empty,
	// and none is read or checked. Marks says what Ours looks for, for the
	// refusal of an object that lacks it.
	Ours  func(obj metav1.Object) bool
	Marks string
}

// IDs are the declared objects' IDs, in order.
func (d Declaration) IDs() []ID {
	ids := make([]ID, 0, len(d.Objects)+len(d.Released))
	for _, o := range d.Objects {
		ids = append(ids, o.ID)
	}
	for _, r := range d.Released {
		ids = append(ids, r.ID)
	}
	return ids
}

func (d Declaration) declared(id ID) bool {
	return slices.ContainsFunc(d.Objects, func(o Object) bool { return o.ID == id })
}

// ErrRefused is wrapped by an Apply that wrote nothing because something
// was found wrong before the first write; errors.As finds *Refusal.
var ErrRefused = errors.New("refused before any write")

// Refusal lists every reason an Apply wrote nothing.
type Refusal struct{ Reasons []error }

func (r *Refusal) Error() string {
	msgs := make([]string, len(r.Reasons))
	for i, e := range r.Reasons {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

func (r *Refusal) Unwrap() []error { return append([]error{ErrRefused}, r.Reasons...) }

// ForeignError is an object at one of the installation's names that is
// someone else's: it is never taken over or deleted. It wraps
// ErrForeignObject.
type ForeignError struct {
	ID       ID
	Selector string // the installation's labels it lacks
	Hint     string // what to do instead
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s: %s exists and was not created by this installation (it lacks the labels %s): %s", ErrForeignObject, e.ID, e.Selector, e.Hint)
}

func (e *ForeignError) Unwrap() error { return ErrForeignObject }

// RequestError is a failed request for one object: get, patch (a
// server-side apply) or delete. It keeps the object and the verb apart,
// so a caller can say which access was missing.
type RequestError struct {
	Verb string
	ID   ID
	Err  error
}

func (e *RequestError) Error() string {
	switch e.Verb {
	case "get":
		return fmt.Sprintf("read %s: %v", e.ID, e.Err)
	case "patch":
		return fmt.Sprintf("server-side apply as %q: %v", FieldManager, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Verb, e.ID, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// PartialError is an Apply or Delete that failed after it had written
// something: the objects before Failed are written (or deleted).
type PartialError struct {
	Failed ID
	Err    error
}

func (e *PartialError) Error() string { return fmt.Sprintf("%s: %v", e.Failed, e.Err) }
func (e *PartialError) Unwrap() error { return e.Err }
