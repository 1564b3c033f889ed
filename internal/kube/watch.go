package kube

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ListWatch lists and watches with any client's List and Watch (typed,
// dynamic, metadata), each request's options first passed to tweak (e.g.
// to set a field or label selector).
func ListWatch[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), tweak func(*metav1.ListOptions)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return watchFn(ctx, o)
		},
	}
}

// ByName selects the one object name: a field-selected (metadata.name)
// list and watch, which RBAC authorizes as a request for that name.
func ByName(name string) func(*metav1.ListOptions) {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	return func(o *metav1.ListOptions) { o.FieldSelector = sel }
}

// NameListWatch lists and watches the one object name of ri.
func NameListWatch(ri dynamic.ResourceInterface, name string) *cache.ListWatch {
	return ListWatch(ri.List, ri.Watch, ByName(name))
}

// WaitFor watches the object name of ri until done holds for it (checked
// on the current state first, then on every change) or ctx ends. done may
// return an error that makes waiting pointless; a deleted object does
// not end the wait (it may come back).
func WaitFor(ctx context.Context, ri dynamic.ResourceInterface, name string, done func(*unstructured.Unstructured) (bool, error)) error {
	check := func(obj any) (bool, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		return done(u)
	}
	_, err := watchtools.UntilWithSync(ctx, NameListWatch(ri, name), &unstructured.Unstructured{}, func(s cache.Store) (bool, error) {
		for _, o := range s.List() {
			if ok, err := check(o); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}, func(e watch.Event) (bool, error) {
		if e.Type == watch.Deleted {
			return false, nil
		}
		return check(e.Object)
	})
	return err
}

// WaitGone watches until the object name of ri does not exist, or ctx
// ends.
func WaitGone(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	_, err := watchtools.UntilWithSync(ctx, NameListWatch(ri, name), &unstructured.Unstructured{}, func(s cache.Store) (bool, error) {
		return len(s.List()) == 0, nil
	}, func(e watch.Event) (bool, error) {
		return e.Type == watch.Deleted, nil
	})
	if err != nil {
		return fmt.Errorf("wait until %s is gone: %w", name, err)
	}
	return nil
}

// RecordedListWatch wraps a ListerWatcher and records the outcome of its
// lists and watches: a reflector only logs and retries a failed list (e.g.
// Forbidden), so whoever waits on it can tell why nothing arrives.
type RecordedListWatch struct {
	cache.ListerWatcherWithContext
	// OnListError, when set, is called after each failed list.
	OnListError func(error)

	mu        sync.Mutex
	succeeded bool  // a list or watch ever succeeded
	listErr   error // the last list's error, nil once a list succeeds
	lastErr   error // the last error of either
}

// NewRecordedListWatch wraps lw.
func NewRecordedListWatch(lw cache.ListerWatcher) *RecordedListWatch {
	return &RecordedListWatch{ListerWatcherWithContext: cache.ToListerWatcherWithContext(lw)}
}

// ListWithContext lists and records the outcome.
func (r *RecordedListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := r.ListerWatcherWithContext.ListWithContext(ctx, o)
	r.mu.Lock()
	r.listErr = err
	r.record(ctx, err)
	r.mu.Unlock()
	if err != nil && ctx.Err() == nil && r.OnListError != nil {
		r.OnListError(err)
	}
	return obj, err
}

// WatchWithContext watches and records the outcome.
func (r *RecordedListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := r.ListerWatcherWithContext.WatchWithContext(ctx, o)
	r.mu.Lock()
	r.record(ctx, err)
	r.mu.Unlock()
	return w, err
}

// List and Watch satisfy cache.ListerWatcher; reflectors call the context
// variants.
func (r *RecordedListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

// Watch: see List.
func (r *RecordedListWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

// record notes the outcome of a list or watch. An error that only says
// the caller's context ended (the wait is over) does not replace the last
// error: it would hide why nothing arrived, e.g. a Forbidden list.
func (r *RecordedListWatch) record(ctx context.Context, err error) {
	r.succeeded = r.succeeded || err == nil
	if err != nil && ctx.Err() == nil {
		r.lastErr = err
	}
}

// Succeeded reports whether a list or watch ever succeeded.
func (r *RecordedListWatch) Succeeded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.succeeded
}

// ListErr is the error of the last list, nil once a list succeeds.
func (r *RecordedListWatch) ListErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listErr
}

// LastErr is the last error of any list or watch.
func (r *RecordedListWatch) LastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}
