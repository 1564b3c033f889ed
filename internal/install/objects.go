package install

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// The labels that, with kube.ManagedByLabel and Owner.NamespaceLabel,
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
		kube.ManagedByLabel: kube.ManagedByValue,
		NameLabel:           o.App,
		InstanceLabel:       o.Name,
		o.NamespaceLabel:    o.Namespace,
		ComponentLabel:      component,
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
		kube.ManagedByLabel + "=" + kube.ManagedByValue,
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
	if l[kube.ManagedByLabel] == kube.ManagedByValue && l[NameLabel] == o.App {
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
	return l[kube.ManagedByLabel] == kube.ManagedByValue && l[NameLabel] == o.App &&
		l[InstanceLabel] == o.Name && l[o.NamespaceLabel] == o.Namespace
}

// CheckOwned refuses obj, the kind object at name (namespace/name when
// namespaced), when it exists and does not belong to the installation.
func (o Owner) CheckOwned(kind, name string, obj metav1.Object) error {
	if obj == nil || o.Owns(obj) {
		return nil
	}
	return fmt.Errorf("%w: %s %s (it lacks the labels %s=%s, %s=%s, %s=%s); kmshealth will not take it over or delete it: delete or rename it, or choose another name",
		ErrForeignObject, kind, name, kube.ManagedByLabel, kube.ManagedByValue, InstanceLabel, o.Name, o.NamespaceLabel, o.Namespace)
}
