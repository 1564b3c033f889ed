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
	return &Kind{Resource: "configmaps", newLW: func(ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
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
	}}
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
