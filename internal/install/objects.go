package install

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// The labels that, with cabundle.ManagedByLabel and Owner.NamespaceLabel,
// mark every object of one installation.
const (
	NameLabel      = "app.kubernetes.io/name"      // Owner.App
	InstanceLabel  = "app.kubernetes.io/instance"  // Owner.Name
	ComponentLabel = "app.kubernetes.io/component" // which part of the installation
)

// ErrForeignObject is wrapped when an object at one of an installation's
// names exists and is not kmshealth's: it is never taken over or deleted.
var ErrForeignObject = errors.New("object exists and is not managed by kmshealth")

// Owner is one installation, namespace/name, of one in-cluster mode: its
// labels mark every object of the installation and recognize them again.
type Owner struct {
	App            string // the mode, NameLabel's value, e.g. "kmshealth-reporter"
	NamespaceLabel string // the label that holds Namespace, e.g. "kmshealth.io/reporter-namespace"
	Namespace      string
	Name           string
}

// Labels are on every object of the installation; component tells its
// parts apart.
func (o Owner) Labels(component string) map[string]string {
	return map[string]string{
		cabundle.ManagedByLabel: cabundle.ManagedByValue,
		NameLabel:               o.App,
		InstanceLabel:           o.Name,
		o.NamespaceLabel:        o.Namespace,
		ComponentLabel:          component,
	}
}

// SelectorLabels select the installation's pods.
func (o Owner) SelectorLabels() map[string]string {
	return map[string]string{NameLabel: o.App, InstanceLabel: o.Name}
}

// Selector is a label selector for the objects of the installation (any
// component).
func (o Owner) Selector() string {
	return strings.Join([]string{
		cabundle.ManagedByLabel + "=" + cabundle.ManagedByValue,
		NameLabel + "=" + o.App,
		InstanceLabel + "=" + o.Name,
		o.NamespaceLabel + "=" + o.Namespace,
	}, ",")
}

// Owns reports whether obj belongs to the installation: it carries its
// labels or, when someone removed the labels, FieldManager's apply entry
// in managedFields (and no other installation's labels).
func (o Owner) Owns(obj metav1.Object) bool {
	l := obj.GetLabels()
	if l[cabundle.ManagedByLabel] == cabundle.ManagedByValue && l[NameLabel] == o.App {
		return l[InstanceLabel] == o.Name && l[o.NamespaceLabel] == o.Namespace
	}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// Labelled is stricter than Owns: only the installation's labels count.
// It is the test for objects that others may also write as FieldManager
// (a namespace, a CRD), so that nobody else's is deleted on a guess.
func (o Owner) Labelled(obj metav1.Object) bool {
	l := obj.GetLabels()
	return l[cabundle.ManagedByLabel] == cabundle.ManagedByValue && l[NameLabel] == o.App &&
		l[InstanceLabel] == o.Name && l[o.NamespaceLabel] == o.Namespace
}

// CheckOwned refuses obj, the kind object at name (namespace/name when
// namespaced), when it exists and does not belong to the installation.
func (o Owner) CheckOwned(kind, name string, obj metav1.Object) error {
	if obj == nil || o.Owns(obj) {
		return nil
	}
	return fmt.Errorf("%w: %s %s (it lacks the labels %s=%s, %s=%s, %s=%s); kmshealth will not take it over or delete it: delete or rename it, or choose another name",
		ErrForeignObject, kind, name, cabundle.ManagedByLabel, cabundle.ManagedByValue, InstanceLabel, o.Name, o.NamespaceLabel, o.Namespace)
}

// refusal wraps an error found before the first write.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// Refuse marks err as found before anything was written.
func Refuse(err error) error { return refusal{err} }

// Refused reports whether err stopped an Apply before it wrote anything.
func Refused(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// ApplyOptions are those of every write: server-side apply as
// FieldManager, forced, so that an out-of-band change of one of
// kmshealth's fields is restored.
func ApplyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
}

// ApplyError says which object, what, a failed apply was about; nil stays
// nil.
func ApplyError(what string, err error) error {
	if err != nil {
		return fmt.Errorf("server-side apply of %s as %q: %w", what, FieldManager, err)
	}
	return nil
}

// Get returns the object name read by fn, nil when it does not exist.
// what names the kind (and "namespace/") for the error.
func Get[T any](ctx context.Context, what string, fn func(context.Context, string, metav1.GetOptions) (*T, error), name string) (*T, error) {
	obj, err := fn(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, name, err)
	}
	return obj, nil
}

// DeleteObject deletes name with fn if it still has uid, in the
// background; gone is fine. what names the object for the error.
func DeleteObject(ctx context.Context, what string, fn func(context.Context, string, metav1.DeleteOptions) error, name string, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	err := fn(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	return nil
}

// AsObject turns a typed nil pointer into a nil interface, so "missing"
// stays nil.
func AsObject[T any, P interface {
	*T
	metav1.Object
}](p P) metav1.Object {
	if p == nil {
		return nil
	}
	return p
}

// Qualified is namespace/name of a namespaced object, name otherwise.
func Qualified(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// Drift lists the objects of an installation that are not as kmshealth
// would write them; empty means an apply would change nothing.
type Drift []string

// Check adds the object what when it is missing, not kmshealth's, or when
// a field kmshealth applied was changed or taken over by another field
// manager: extract returns the fields FieldManager owns in the live
// object, want what it would apply. Fields other managers added are not
// drift: server-side apply leaves them alone.
func (d *Drift) Check(what string, exists, owned bool, extract func() (any, error), want any) {
	switch {
	case !exists:
		*d = append(*d, what+" is missing")
	case !owned:
		*d = append(*d, what+" is not managed by kmshealth")
	default:
		got, err := extract()
		if err != nil || !SameJSON(got, want) {
			*d = append(*d, what+" was changed")
		}
	}
}
