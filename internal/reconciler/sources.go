package reconciler

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// objectRef is one Secret or ConfigMap.
type objectRef struct{ kind, namespace, name string }

func refOf(s cabundle.Source) objectRef { return objectRef{s.Kind, s.Namespace, s.Name} }

// sourceWatches keeps one watch per source object that some APIService
// names: a field-selected (metadata.name) informer, so the cache holds just
// that object and RBAC can be limited to it by resourceNames. Nothing else
// in the cluster is cached, however many Secrets and ConfigMaps exist.
type sourceWatches struct {
	core    kubernetes.Interface
	changed func(apiservice string) // enqueue

	mu      sync.Mutex
	watches map[objectRef]*sourceWatch
	uses    map[string]objectRef // APIService -> the source it names
}

// sourceWatch is a plain informer (store + controller, no shared-informer
// fan-out): three goroutines per watched object instead of about nine.
type sourceWatch struct {
	store      cache.Store
	controller cache.Controller
	cancel     context.CancelFunc
	users      map[string]struct{}
}

// synced reports whether the watch's first list is in.
func (w *sourceWatch) synced() bool { return w.controller.HasSynced() }

func newSourceWatches(core kubernetes.Interface, changed func(string)) *sourceWatches {
	return &sourceWatches{core: core, changed: changed, watches: map[objectRef]*sourceWatch{}, uses: map[string]objectRef{}}
}

// use records that apiservice takes its bundle from src, starting a watch
// on src if none runs yet, and returns the watch.
func (s *sourceWatches) use(ctx context.Context, apiservice string, src cabundle.Source) *sourceWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := refOf(src)
	if old, ok := s.uses[apiservice]; ok && old != ref {
		s.dropLocked(apiservice, old)
	}
	s.uses[apiservice] = ref
	w, ok := s.watches[ref]
	if !ok {
		w = s.start(ctx, ref)
		s.watches[ref] = w
	}
	w.users[apiservice] = struct{}{}
	return w
}

// forget drops apiservice's use of its source; a watch nobody uses stops.
func (s *sourceWatches) forget(apiservice string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref, ok := s.uses[apiservice]; ok {
		s.dropLocked(apiservice, ref)
		delete(s.uses, apiservice)
	}
}

func (s *sourceWatches) dropLocked(apiservice string, ref objectRef) {
	w, ok := s.watches[ref]
	if !ok {
		return
	}
	delete(w.users, apiservice)
	if len(w.users) == 0 {
		w.cancel()
		delete(s.watches, ref)
	}
}

// count is the number of running source watches.
func (s *sourceWatches) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}

func (s *sourceWatches) start(ctx context.Context, ref objectRef) *sourceWatch {
	var (
		client   cache.Getter
		resource string
		obj      runtime.Object
	)
	if ref.kind == cabundle.KindSecret {
		client, resource, obj = s.core.CoreV1().RESTClient(), "secrets", &corev1.Secret{}
	} else {
		client, resource, obj = s.core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{}
	}
	lw := cache.NewListWatchFromClient(client, resource, ref.namespace, fields.OneTermEqualSelector("metadata.name", ref.name))
	w := &sourceWatch{users: map[string]struct{}{}}
	notify := func(any) {
		s.mu.Lock()
		users := make([]string, 0, len(w.users))
		for u := range w.users {
			users = append(users, u)
		}
		s.mu.Unlock()
		for _, u := range users {
			s.changed(u)
		}
	}
	w.store, w.controller = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    notify,
			UpdateFunc: func(_, n any) { notify(n) },
			DeleteFunc: notify,
		},
		Transform: dropManagedFields,
	})
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go w.controller.RunWithContext(wctx)
	go func() {
		// A source that does not exist never sends an event: tell its
		// users once the (empty) list is in.
		if cache.WaitForCacheSync(wctx.Done(), w.controller.HasSynced) {
			notify(nil)
		}
	}()
	return w
}

// read returns the bytes under src's key from the watch cache: exists is
// false when the object or key is missing.
func read(w *sourceWatch, src cabundle.Source) (bundle []byte, exists bool) {
	items := w.store.List()
	if len(items) == 0 {
		return nil, false
	}
	var data map[string][]byte
	switch o := items[0].(type) {
	case *corev1.Secret:
		data = o.Data
	case *corev1.ConfigMap:
		data = cabundle.ConfigMapData(o)
	}
	bundle, exists = data[src.Key]
	return bundle, exists
}

// dropManagedFields keeps the cache to what a comparison needs.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(interface {
		SetManagedFields([]metav1.ManagedFieldsEntry)
	}); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
