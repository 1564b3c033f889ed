package controller

import (
	"context"
	"testing"
)

// TestWhenSynced: the hook runs after a first list only once every
// controller's watches have listed, and stops with its context.
func TestWhenSynced(t *testing.T) {
	pending := &stream{}
	w := newWatches("test", nil, nil)
	w.running[Ref{Name: "pending"}] = pending
	c := &Controller{name: "test", watches: w}

	listed := make(chan struct{}) // unbuffered: a send returns once the loop is back waiting
	called := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		whenSynced(ctx, []*Controller{c}, listed, func() { called <- struct{}{} })
		close(done)
	}()

	listed <- struct{}{}
	listed <- struct{}{} // the first signal is handled
	if n := len(called); n != 0 {
		t.Fatalf("the hook ran %d times while a watch had not listed", n)
	}
	listed <- struct{}{} // the second is handled too
	pending.synced.Store(true)
	listed <- struct{}{}
	listed <- struct{}{} // the fourth, after every watch listed, is handled
	if len(called) == 0 {
		t.Fatal("the hook did not run once every watch had listed")
	}
	cancel()
	<-done
}
