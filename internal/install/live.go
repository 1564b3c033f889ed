package install

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// Clients are what the installers talk to the API server with.
type Clients struct {
	Dynamic dynamic.Interface
	Core    clientset.Core
}

func (cl Clients) resource(id ID) dynamic.ResourceInterface {
	r := cl.Dynamic.Resource(id.Kind.GVR)
	if id.Kind.Namespaced {
		return r.Namespace(id.Namespace)
	}
	return r
}

// Live is what the cluster holds under an installation's names: every
// declared object read by name (whoever it belongs to), the installation's
// Namespace, and the labelled objects of the swept kinds.
type Live struct {
	owner     Owner
	ours      func(metav1.Object) bool // Declaration.Ours
	marks     string                   // Declaration.Marks
	namespace *unstructured.Unstructured
	objects   map[ID]*unstructured.Unstructured
	swept     []*unstructured.Unstructured // labelled objects of the swept kinds, declared or not
	sweptIDs  []ID
}

// Observe reads the installation: one GET per declared object and one
// label-selected LIST per swept kind; no discovery, no watch.
func Observe(ctx context.Context, cl Clients, d Declaration) (*Live, error) {
	l := newLive(d)
	if d.Namespace != "" {
		ns, err := get(ctx, cl, ID{Kind: Namespaces, Name: d.Namespace})
		if err != nil {
			return nil, err
		}
		l.namespace = ns
	}
	for _, id := range d.IDs() {
		if _, done := l.objects[id]; done {
			continue
		}
		obj, err := get(ctx, cl, id)
		if err != nil {
			return nil, err
		}
		l.objects[id] = obj
	}
	for _, k := range d.Sweep {
		list, err := cl.Dynamic.Resource(k.GVR).List(ctx, metav1.ListOptions{LabelSelector: d.Owner.Selector()})
		if apierrors.IsNotFound(err) {
			continue // the resource is not served here (e.g. admission policies before 1.30)
		}
		if err != nil {
			return nil, fmt.Errorf("list the installation's %ss: %w", k.Name, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			l.swept = append(l.swept, obj)
			l.sweptIDs = append(l.sweptIDs, ID{Kind: k, Namespace: obj.GetNamespace(), Name: obj.GetName()})
		}
	}
	return l, nil
}

func newLive(d Declaration) *Live {
	return &Live{owner: d.Owner, ours: d.Ours, marks: d.Marks, objects: map[ID]*unstructured.Unstructured{}}
}

// selector is what marks the installation's objects, for a refusal.
func (l *Live) selector() string {
	if l.ours != nil {
		return l.marks
	}
	return l.owner.Selector()
}

// get returns the object, nil when it does not exist.
func get(ctx context.Context, cl Clients, id ID) (*unstructured.Unstructured, error) {
	obj, err := cl.resource(id).Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &RequestError{Verb: "get", ID: id, Err: err}
	}
	return obj, nil
}

// Get returns the live object id names, nil when it does not exist.
func (l *Live) Get(id ID) *unstructured.Unstructured {
	if obj, ok := l.objects[id]; ok {
		return obj
	}
	for i, sid := range l.sweptIDs {
		if sid == id {
			return l.swept[i]
		}
	}
	return nil
}

// Namespace is the installation's namespace, nil when it does not exist.
func (l *Live) Namespace() *unstructured.Unstructured { return l.namespace }

// Owns reports whether obj is the installation's; a shared object only by
// its labels.
func (l *Live) Owns(obj *unstructured.Unstructured, shared bool) bool {
	if obj == nil {
		return false
	}
	if l.ours != nil {
		return l.ours(obj)
	}
	if shared {
		return l.owner.Labelled(obj)
	}
	return l.owner.Owns(obj)
}

// Swept are the labelled objects of kind k (declared or not), sorted by
// namespace and name.
func (l *Live) Swept(k Kind) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i, id := range l.sweptIDs {
		if id.Kind == k {
			out = append(out, l.swept[i])
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out
}

// Exists reports whether any object of the installation is left, so a
// partly deleted installation is repaired, not forgotten.
func (l *Live) Exists(d Declaration) bool {
	for _, o := range d.Objects {
		if o.Kind == Namespaces {
			continue // a namespace alone is not an installation
		}
		if l.Owns(l.Get(o.ID), o.Shared) {
			return true
		}
	}
	return len(l.leftovers(d)) > 0
}

// leftovers are the labelled objects of swept kinds that d does not
// declare.
func (l *Live) leftovers(d Declaration) []ID {
	var out []ID
	for _, id := range l.sweptIDs {
		if !d.declared(id) {
			out = append(out, id)
		}
	}
	return out
}

// Drift lists what an Apply of d would change: declared objects that are
// missing, not kmshealth's, or with a field kmshealth applied changed or
// taken over by another field manager (an edit, a `kubectl scale`),
// unwanted objects that are the installation's, and leftovers. Empty means
// an apply would change nothing. Fields other managers added are not
// drift: server-side apply leaves them alone.
func (l *Live) Drift(d Declaration) []string {
	var drift []string
	for _, o := range d.Objects {
		live := l.Get(o.ID)
		if o.Unwanted {
			if l.Owns(live, o.Shared) {
				drift = append(drift, o.String()+" exists, but no "+o.Kind.Name+" is wanted")
			}
			continue
		}
		if o.Body == nil {
			continue
		}
		switch {
		case live == nil:
			drift = append(drift, o.String()+" is missing")
		case !l.Owns(live, o.Shared):
			drift = append(drift, o.String()+" is not managed by kmshealth")
		case live.GetDeletionTimestamp() != nil:
			drift = append(drift, o.String()+" is being deleted")
		case o.Compare != nil:
			drift = append(drift, o.Compare(live)...)
		case !l.inSync(o, live):
			drift = append(drift, o.String()+" was changed")
		}
	}
	for _, r := range d.Released {
		if l.Owns(l.Get(r.ID), true) {
			drift = append(drift, r.String()+" is still labelled as the installation's")
		}
	}
	for _, id := range l.leftovers(d) {
		drift = append(drift, id.String()+" is left over")
	}
	return drift
}

// inSync compares the fields FieldManager owns in live with what o
// applies; kinds without a typed extraction by containment.
func (l *Live) inSync(o Object, live *unstructured.Unstructured) bool {
	if o.Kind.extract() == nil {
		want, err := toUnstructured(o.Body)
		return err == nil && contains(live.Object, want.Object)
	}
	got, err := o.Kind.extract()(live)
	return err == nil && SameJSON(got, o.Body)
}

// LiveOf is a Live holding objs, as Observe would have read them for d:
// for tests of drift and read-back that need no cluster.
func LiveOf(d Declaration, objs ...*unstructured.Unstructured) *Live {
	l := newLive(d)
	for _, id := range d.IDs() {
		l.objects[id] = nil
	}
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" && obj.GetName() == d.Namespace {
			l.namespace = obj
		}
		for _, id := range d.IDs() {
			if id.Kind.GVR.GroupVersion().String() == obj.GetAPIVersion() && id.Kind.Name == obj.GetKind() &&
				id.Namespace == obj.GetNamespace() && id.Name == obj.GetName() {
				l.objects[id] = obj
			}
		}
	}
	return l
}
