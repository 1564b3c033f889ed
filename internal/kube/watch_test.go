package kube

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestRecordedListWatchKeepsTheCause: the error of a watch cut short by
// the end of the wait (its context) must not hide the Forbidden list that
// explains why nothing arrived.
func TestRecordedListWatchKeepsTheCause(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "bob" cannot list resource "configmaps"`))
	lw := NewRecordedListWatch(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, forbidden },
		WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			return nil, ctx.Err()
		},
	})
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list error = %v, want Forbidden", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the wait is over
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("watch error = %v, want context.Canceled", err)
	}
	if !apierrors.IsForbidden(lw.LastErr()) || lw.Succeeded() {
		t.Errorf("LastErr, Succeeded = %v, %v; want the Forbidden list and false", lw.LastErr(), lw.Succeeded())
	}
}
