package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// fakeKind serves ConfigMaps from in-memory watchers, one per named
// object, that the test feeds.
type fakeKind struct {
	mu       sync.Mutex
	watchers map[string]*watch.FakeWatcher
}

func (f *fakeKind) kind() *Kind {
	return streamed(&Kind{Resource: "configmaps", newLW: func(ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
		var o metav1.ListOptions
		tweak(&o)
		return &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
			},
			WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				w := watch.NewFakeWithChanSize(1000, false)
				if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
					// A watch-list: the initial events (none) end with a bookmark.
					w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1",
						Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
				}
				f.mu.Lock()
				f.watchers[o.FieldSelector] = w
				f.mu.Unlock()
				return w, nil
			},
		}
	}})
}

func (f *fakeKind) feed(sel string, rv int) {
	f.mu.Lock()
	w := f.watchers[sel]
	f.mu.Unlock()
	if w != nil {
		w.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: sel, Namespace: "ns", ResourceVersion: fmt.Sprint(rv)}})
	}
}

// TestWatchesNoDeadlockUnderEvents: an informer calls its handlers while
// holding its queue's lock, and readiness asks every informer whether it
// has synced. Readiness and scrapes must go on while events pour in: the
// watches' own lock is never held while an informer is asked. With
// Reshapes, every event also runs Deps (under the refresh lock).
func TestWatchesNoDeadlockUnderEvents(t *testing.T) {
	for _, reshapes := range []bool{false, true} {
		t.Run(fmt.Sprintf("reshapes=%v", reshapes), func(t *testing.T) { testWatchesNoDeadlock(t, reshapes) })
	}
}

func testWatchesNoDeadlock(t *testing.T, reshapes bool) {
	f := &fakeKind{watchers: map[string]*watch.FakeWatcher{}}
	k := f.kind()
	k.Reshapes = reshapes
	const n = 50
	root := Named(k, "ns", "root")
	w := newWatches("test", []Ref{root}, func(Cache) map[string][]Ref {
		deps := map[string][]Ref{}
		for i := range n {
			deps[fmt.Sprint(i)] = []Ref{Named(k, "ns", fmt.Sprint("obj-", i))}
		}
		return deps
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.start(ctx)
	w.refresh()
	var enqueued sync.Map
	detach := w.attach(func(key string) { enqueued.Store(key, true) })
	defer detach()

	stop := time.Now().Add(2 * time.Second)
	done := make(chan struct{})
	go func() { // events on every object, and the root (which refreshes)
		defer close(done)
		for rv := 2; time.Now().Before(stop); rv++ {
			f.feed("metadata.name=root", rv)
			for i := range n {
				f.feed(fmt.Sprint("metadata.name=obj-", i), rv)
			}
		}
	}()
	checks := 0
	checked := make(chan struct{})
	go func() { // readiness probes and scrapes meanwhile
		defer close(checked)
		for {
			select {
			case <-done:
				return
			default:
				_ = w.Synced()
				_ = w.count()
				checks++
			}
		}
	}()
	select {
	case <-checked:
	case <-time.After(30 * time.Second):
		t.Fatal("Synced or count blocked: the watches deadlocked with an informer")
	}
	if !w.Synced() || w.count() != n+1 {
		t.Errorf("synced %v, %d watches; want every one of %d synced", w.Synced(), w.count(), n+1)
	}
	if _, ok := enqueued.Load("0"); !ok || checks == 0 {
		t.Errorf("no key enqueued (%d readiness checks)", checks)
	}
}

// clusterKind serves every ConfigMap of a namespace from one list and one
// watch, and counts the requests.
type clusterKind struct {
	mu       sync.Mutex
	requests []string // the field selector of each list and watch
	watchers chan *watch.FakeWatcher
}

func (f *clusterKind) kind() *Kind {
	return streamed(&Kind{Resource: "configmaps", ClusterWide: true, newLW: func(_ string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
		var o metav1.ListOptions
		tweak(&o)
		return &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				f.mu.Lock()
				f.requests = append(f.requests, "list "+o.FieldSelector)
				f.mu.Unlock()
				l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
				for _, name := range []string{"a", "b", "unkept"} {
					l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1",
						ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}})
				}
				return l, nil
			},
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				f.mu.Lock()
				f.requests = append(f.requests, "watch "+o.FieldSelector)
				f.mu.Unlock()
				w := watch.NewFakeWithChanSize(10, false)
				f.watchers <- w
				return w, nil
			},
		}
	}})
}

// TestWatchesClusterWideKind: the named objects of a ClusterWide kind are
// one list and one watch of the whole kind, not one each; an event
// reaches the keys of its object alone (none for an object nobody keeps);
// the cache holds each object as Trim leaves it; the watch stops with its
// last user.
func TestWatchesClusterWideKind(t *testing.T) {
	f := &clusterKind{watchers: make(chan *watch.FakeWatcher, 1)}
	k := f.kind()
	k.Trim = func(obj any) any {
		cm := obj.(*corev1.ConfigMap)
		cm.Labels = map[string]string{"trimmed": "yes"}
		return cm
	}
	var mu sync.Mutex
	deps := map[string][]Ref{"A": {Named(k, "ns", "a")}, "B": {Named(k, "ns", "b")}, "C": {Named(k, "ns", "c")}}
	w := newWatches("test", nil, func(Cache) map[string][]Ref {
		mu.Lock()
		defer mu.Unlock()
		return deps
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	enqueued := make(chan string, 100)
	detach := w.attach(func(key string) { enqueued <- key })
	defer detach()
	w.start(ctx)
	w.refresh()

	var fw *watch.FakeWatcher
	select {
	case fw = <-f.watchers:
	case <-time.After(10 * time.Second):
		t.Fatal("no watch opened")
	}
	f.mu.Lock()
	requests := fmt.Sprint(f.requests)
	f.mu.Unlock()
	if requests != "[list  watch ]" || w.count() != 1 {
		t.Errorf("requests %s, %d watches; want one list and one watch of the whole kind, 1 watch", requests, w.count())
	}
	drain := func() map[string]bool {
		got := map[string]bool{}
		for {
			select {
			case key := <-enqueued:
				got[key] = true
			default:
				return got
			}
		}
	}
	// The refresh and the first list enqueue every key.
	deadline := time.After(10 * time.Second)
	for seen := map[string]bool{}; !seen["A"] || !seen["B"] || !seen["C"] || !w.Synced(); {
		select {
		case key := <-enqueued:
			seen[key] = true
		case <-deadline:
			t.Fatalf("after the first list: enqueued %v, synced %v", seen, w.Synced())
		}
	}
	if o, ok := w.Get(Named(k, "ns", "a")); !ok || o.(*corev1.ConfigMap).Labels["trimmed"] != "yes" || o.(*corev1.ConfigMap).ManagedFields != nil {
		t.Errorf("Get(a) = %+v, %v; want a, trimmed, without managedFields", o, ok)
	}
	if _, ok := w.Get(Named(k, "ns", "c")); ok || len(w.List(Named(k, "ns", "b"))) != 1 {
		t.Errorf("Get(c) found an object that does not exist, or List(b) is not b alone")
	}
	drain()

	// An object nobody keeps, then a kept one: only the kept one's key.
	fw.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unkept", Namespace: "ns", ResourceVersion: "2"}})
	fw.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "3"}})
	// c is created: its key hears of it.
	fw.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "4"}})
	var got []string
	for len(got) < 2 {
		select {
		case key := <-enqueued:
			got = append(got, key)
		case <-time.After(10 * time.Second):
			t.Fatalf("enqueued %v after events on unkept, a and c; want A then C", got)
		}
	}
	if fmt.Sprint(got) != "[A C]" {
		t.Errorf("enqueued %v after events on unkept, a and c; want [A C]", got)
	}
	if _, ok := w.Get(Named(k, "ns", "c")); !ok {
		t.Error("c not in the cache after its creation")
	}

	// No key left: the one watch stops.
	mu.Lock()
	deps = map[string][]Ref{}
	mu.Unlock()
	w.refresh()
	if w.count() != 0 || len(w.running) != 0 {
		t.Errorf("%d watches, %d streams after the last user left; want none", w.count(), len(w.running))
	}
}
