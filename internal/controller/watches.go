package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Kind is one resource the watches can follow: how to list and watch it,
// and which updates matter.
type Kind struct {
	// Resource names the kind in logs and metrics, e.g. "secrets".
	Resource string
	newLW    func(namespace string, tweak func(*metav1.ListOptions)) cache.ListerWatcher // lists
	// openWatch and decode watch the kind: the stream reads the response
	// (rawwatch.go).
	openWatch openWatchFunc
	decode    decodeFunc
	// Relevant, when set, says whether an update of an object matters
	// (e.g. only label changes of Nodes); nil means every update does.
	Relevant func(old, new any) bool
	// ManagedFields keeps metadata.managedFields in the cache, for kinds
	// whose field ownership a pattern checks; other kinds drop them.
	ManagedFields bool
	// Trim, when set, shrinks each object before the cache keeps it, to
	// what the pattern reads (after managedFields are kept or dropped). It
	// may modify the object: it is the decoder's own.
	Trim func(obj any) any
	// Reshapes says that an object of this kind can change what keys
	// depend on, as a root does: Deps runs again after each of its events.
	// It makes dependencies two levels deep — the record (a root) names a
	// ConfigMap, and that ConfigMap names the workloads to keep — without
	// watching every ConfigMap as a root.
	Reshapes bool
	// ClusterWide follows the named objects of the kind with one watch of
	// every object of the kind (in the Ref's namespace), shared by every
	// Ref of the controller that names one, instead of one field-selected
	// watch each; an event reaches the users of the object it is about
	// only. It is for kinds that are few and not secret (APIServices,
	// webhook configurations): the cache holds every object of the kind,
	// as Trim leaves it, and RBAC must allow list and watch of the whole
	// kind.
	ClusterWide bool
}

// TypedKind follows resource through a typed REST client (a clientset's
// CoreV1().RESTClient(), ApiregistrationV1().RESTClient()). The client's
// scheme decodes the lists; the watches decode into obj's type, which the
// cache then holds.
func TypedKind(client rest.Interface, resource string, obj runtime.Object) *Kind {
	return &Kind{Resource: resource, newLW: func(ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
		return cache.NewFilteredListWatchFromClient(client, resource, ns, tweak)
	}, openWatch: typedWatch(client, resource), decode: typedDecode(obj)}
}

// DynamicKind follows gvr as unstructured objects, through raw: an
// unversioned REST client of the API server that decodes unstructured
// objects (NewRawClient).
func DynamicKind(raw rest.Interface, gvr schema.GroupVersionResource) *Kind {
	dyn := dynamic.New(raw)
	return &Kind{Resource: gvr.Resource, newLW: func(ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
		ri := dyn.Resource(gvr).Namespace(ns)
		return kube.ListWatch(ri.List, ri.Watch, tweak)
	}, openWatch: absWatch(raw, gvr, watchAccept), decode: unstructuredDecode}
}

// MetadataKind follows gvr as metadata only (PartialObjectMetadata), for
// kinds whose bodies are large or none of our business (Nodes, CRDs):
// lists through meta, watches through raw (NewRawClient).
func MetadataKind(meta metadata.Interface, raw rest.Interface, gvr schema.GroupVersionResource) *Kind {
	return &Kind{Resource: gvr.Resource, newLW: func(ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
		ri := meta.Resource(gvr).Namespace(ns)
		return kube.ListWatch(ri.List, ri.Watch, tweak)
	}, openWatch: absWatch(raw, gvr, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"), decode: metadataDecode}
}

// NewRawClient is the REST client DynamicKind and MetadataKind watch
// through: unversioned (absolute paths), decoding unstructured objects, as
// the dynamic client's is (dynamic.New takes it too).
func NewRawClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := dynamic.ConfigFor(cfg)
	c.GroupVersion = nil
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("REST client for watches: %w", err)
	}
	return rc, nil
}

// Ref is what a key depends on: one object (Name set), or every object of
// the kind in Namespace ("" for all namespaces, and for cluster-scoped
// kinds).
type Ref struct {
	Kind      *Kind
	Namespace string
	Name      string
}

// Named is the Ref of one object.
func Named(k *Kind, namespace, name string) Ref {
	return Ref{Kind: k, Namespace: namespace, Name: name}
}

// All is the Ref of every object of k in namespace.
func All(k *Kind, namespace string) Ref { return Ref{Kind: k, Namespace: namespace} }

func (r Ref) String() string {
	switch {
	case r.Name == "" && r.Namespace == "":
		return r.Kind.Resource
	case r.Name == "":
		return r.Kind.Resource + " in " + r.Namespace
	case r.Namespace == "":
		return r.Kind.Resource + "/" + r.Name
	}
	return r.Kind.Resource + "/" + r.Namespace + "/" + r.Name
}

// Cache reads what the watches hold. Objects are shared with the cache:
// never modify them.
type Cache interface {
	// Get returns the object r names (r.Name set); exists is false when it
	// does not exist or its watch has not listed yet (see Synced).
	Get(r Ref) (obj any, exists bool)
	// List returns the objects of a Ref without a name.
	List(r Ref) []any
	// Synced reports whether every ref is watched and listed.
	Synced(refs ...Ref) bool
	// Err is the error of r's last failed list (e.g. Forbidden), nil once
	// a list succeeds: a watch that cannot list never syncs.
	Err(r Ref) error
}

// watches is the process-lifetime set of watches of one controller. Its
// mutex guards the maps only: nothing that can wait is called while it is
// held. It starts one stream per Ref in use — a field-selected one
// (metadata.name) for a named object, so it carries that object alone and
// RBAC can be limited to it by resourceNames; for a ClusterWide kind, a
// view of the kind's one cluster-wide stream — and stops it when no key
// depends on it any longer. The watches survive a lost lease: a replica
// that leads again starts warm.
type watches struct {
	name  string
	roots []Ref
	deps  func(Cache) map[string][]Ref

	// refreshing serialises refresh: Deps computed from an older cache
	// must not be applied after one computed from a newer. Deps only reads
	// the stores (Get, List), never Synced, so holding it while a stream
	// waits for it cannot deadlock.
	refreshing sync.Mutex

	mu      sync.Mutex
	ctx     context.Context
	running map[Ref]*stream
	uses    map[string][]Ref // key -> the refs it depends on
	sink    func(key string) // the current leader's queue, nil while not leading

	// listed, if set (before start), is called after each stream's first
	// list.
	listed func()
}

func newWatches(name string, roots []Ref, deps func(Cache) map[string][]Ref) *watches {
	return &watches{name: name, roots: roots, deps: deps, running: map[Ref]*stream{}, uses: map[string][]Ref{}}
}

// start starts the root watches; they run until ctx ends.
func (w *watches) start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx = ctx
	for _, r := range w.roots {
		w.startLocked(r, true)
	}
}

// attach makes enqueue receive the keys of every event from now on, and
// hands it every key in use: a replica that starts leading looks at
// everything, which may have drifted while another led. It returns the
// function that detaches it.
func (w *watches) attach(enqueue func(string)) (detach func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sink = enqueue
	for key := range w.uses {
		enqueue(key)
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.sink = nil
	}
}

// count is the number of running watches: requests, not the views of a
// cluster-wide one.
func (w *watches) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, st := range w.running {
		if st.parent == nil {
			n++
		}
	}
	return n
}

// Get implements Cache.
func (w *watches) Get(r Ref) (any, bool) {
	w.mu.Lock()
	st := w.running[r]
	w.mu.Unlock()
	if st == nil || r.Name == "" {
		return nil, false
	}
	return st.first()
}

// List implements Cache.
func (w *watches) List(r Ref) []any {
	w.mu.Lock()
	st := w.running[r]
	w.mu.Unlock()
	if st == nil {
		return nil
	}
	return st.list()
}

// Synced implements Cache; with no refs it reports whether every running
// watch has listed (the readiness of the controller).
func (w *watches) Synced(refs ...Ref) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(refs) == 0 {
		for _, st := range w.running {
			if !st.isSynced() {
				return false
			}
		}
		return true
	}
	for _, r := range refs {
		st := w.running[r]
		if st == nil || !st.isSynced() {
			return false
		}
	}
	return true
}

// refresh recomputes what every key depends on, starts and stops watches
// accordingly, and enqueues the keys that are new or whose dependencies
// changed.
func (w *watches) refresh() {
	w.refreshing.Lock()
	defer w.refreshing.Unlock()
	want := w.deps(w)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil {
		return
	}
	var changed []string
	for key, refs := range want {
		old, had := w.uses[key]
		if had && slices.Equal(old, refs) {
			continue
		}
		for _, r := range refs {
			st := w.running[r]
			if st == nil {
				st = w.startLocked(r, false)
			}
			st.users[key] = struct{}{}
		}
		w.uses[key] = refs
		w.releaseLocked(key, old, refs)
		changed = append(changed, key)
	}
	for key, old := range w.uses {
		if _, ok := want[key]; !ok {
			w.releaseLocked(key, old, nil)
			delete(w.uses, key)
			changed = append(changed, key) // let the pattern see it is gone
		}
	}
	if w.sink != nil {
		for _, key := range changed {
			w.sink(key)
		}
	}
}

// releaseLocked drops key's use of the refs in old that keep is without,
// stopping watches nobody uses.
func (w *watches) releaseLocked(key string, old, keep []Ref) {
	for _, r := range old {
		if slices.Contains(keep, r) {
			continue
		}
		st := w.running[r]
		if st == nil {
			continue
		}
		delete(st.users, key)
		w.stopIfUnusedLocked(st)
	}
}

// stopIfUnusedLocked stops st when no key, root or view uses it any
// longer; a view's parent then loses a view, and may stop in turn.
func (w *watches) stopIfUnusedLocked(st *stream) {
	if len(st.users) > 0 || st.root || len(st.views) > 0 {
		return
	}
	delete(w.running, st.ref)
	if p := st.parent; p != nil {
		delete(p.views, objectKey(st.ref))
		w.stopIfUnusedLocked(p)
		return
	}
	st.cancel()
	klog.V(4).InfoS("stopped watch", "controller", w.name, "ref", st.ref.String())
}

func (w *watches) startLocked(r Ref, root bool) *stream {
	if r.Name != "" && r.Kind.ClusterWide {
		all := All(r.Kind, r.Namespace)
		parent := w.running[all]
		if parent == nil {
			parent = w.startLocked(all, false)
		}
		view := &stream{ref: r, users: map[string]struct{}{}, root: root, parent: parent}
		parent.views[objectKey(r)] = view
		w.running[r] = view
		return view
	}
	tweak := func(*metav1.ListOptions) {}
	if r.Name != "" {
		tweak = kube.ByName(r.Name)
	}
	st := &stream{ref: r, users: map[string]struct{}{}, root: root, tweak: tweak, listed: w.listed}
	if r.Kind.ClusterWide {
		st.views = map[string]*stream{}
	}
	st.lw = kube.NewRecordedListWatch(r.Kind.newLW(r.Namespace, tweak))
	// A list that fails is reported to the users: a key whose input
	// cannot be read is reported, not silently left unsynced.
	st.lw.OnListError = func(error) { w.notify(r, st, nil) }
	ctx, cancel := context.WithCancel(w.ctx)
	st.cancel = cancel
	go st.run(ctx, func(keys []string) { w.notify(r, st, keys) })
	w.running[r] = st
	klog.V(4).InfoS("started watch", "controller", w.name, "ref", r.String())
	return st
}

// Err implements Cache.
func (w *watches) Err(r Ref) error {
	w.mu.Lock()
	st := w.running[r]
	w.mu.Unlock()
	if st == nil {
		return nil
	}
	return st.listErr()
}

// notify handles an event of the watch of r about the objects of keys (nil:
// every object): a root, or an object of a kind that Reshapes, may change
// what keys depend on; every user of r is enqueued, and every user of the
// views of those objects.
func (w *watches) notify(r Ref, st *stream, keys []string) {
	watchEvents.WithLabelValues(w.name, r.Kind.Resource).Inc()
	if st.root || r.Kind.Reshapes || w.rootView(st, keys) {
		w.refresh()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sink == nil {
		return
	}
	for key := range st.users {
		w.sink(key)
	}
	if keys == nil {
		for _, v := range st.views {
			for key := range v.users {
				w.sink(key)
			}
		}
		return
	}
	for _, k := range keys {
		if v := st.views[k]; v != nil {
			for key := range v.users {
				w.sink(key)
			}
		}
	}
}

// rootView reports whether a root is among the views of st that keys
// (nil: every object) name.
func (w *watches) rootView(st *stream, keys []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range st.views {
		if v.root && (keys == nil || slices.Contains(keys, k)) {
			return true
		}
	}
	return false
}

// transform keeps the cache to what the pattern compares: managedFields
// only for kinds whose ownership a pattern checks.
func (k *Kind) transform(obj any) (any, error) {
	if !k.ManagedFields {
		var err error
		if obj, err = dropManagedFields(obj); err != nil {
			return nil, err
		}
	}
	if k.Trim != nil {
		obj = k.Trim(obj)
	}
	return obj, nil
}

// dropManagedFields drops what no comparison needs.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(interface {
		SetManagedFields([]metav1.ManagedFieldsEntry)
	}); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// String describes the watches, for errors.
func (w *watches) String() string { return fmt.Sprintf("watches of %s", w.name) }
