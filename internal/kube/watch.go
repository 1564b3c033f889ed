package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// NameListWatch lists and watches the one object name of ri: a
// field-selected (metadata.name) list and watch, which RBAC authorizes as
// a request for that name.
func NameListWatch(ri dynamic.ResourceInterface, name string) *cache.ListWatch {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return ri.Watch(ctx, o)
		},
	}
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
