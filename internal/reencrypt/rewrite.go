package reencrypt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// The rewrite path: page through the resource and write every object back
// exactly as read. The API server re-encrypts what it writes with its
// current key; an object already stored under that key is not written at
// all (etcd3's GuaranteedUpdate skips a write whose bytes are unchanged
// unless the stored value is stale, and a value under another key is
// stale), so writing a whole resource costs a storage write only for the
// objects that need it.

// rewrite pages through one resource from the recorded continue token,
// recording progress after each page.
func (r *run) rewrite(ctx context.Context, res Resolved, rp *ResourceProgress) error {
	ri := r.dyn.Resource(res.GVR)
	if rp.Continue != "" {
		r.o.Log("re-encryption %s: %s resumes after %d objects, at the recorded page", r.o.Name, res.Name, rp.Done)
	}
	for !rp.Complete {
		list, err := ri.List(ctx, metav1.ListOptions{Limit: r.o.PageSize, Continue: rp.Continue})
		if rp.Continue != "" && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
			// A continue token lives as long as etcd keeps the revision it
			// was taken at (compaction, every 5 min by default): an
			// interrupted run resumed later lists again. Objects it
			// already rewrote are cheap the second time (see above).
			r.o.Log("re-encryption %s: the recorded continue token of %s has expired (%v); listing %s again from the start",
				r.o.Name, res.Name, err, res.Name)
			r.done.Add(-rp.Done)
			rp.Continue, rp.Done = "", 0
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", res.Name, err)
		}
		n, err := r.rewritePage(ctx, res, ri, list.Items)
		if err != nil {
			// This page's progress is not recorded: the next run does it
			// again, from its first object.
			return err
		}
		rp.Done += n
		if rem := list.GetRemainingItemCount(); rem != nil {
			rp.Total = rp.Done + *rem
		}
		rp.Continue = list.GetContinue()
		rp.Complete = rp.Continue == ""
		if err := r.store.save(ctx, r.rec); err != nil {
			return err
		}
		if r.o.AfterPage != nil {
			r.o.AfterPage(res.Name, *rp)
		}
	}
	return nil
}

// rewritePage writes back every object of one page, at most Concurrency
// at a time, and returns how many are done. The first error stops the
// page.
func (r *run) rewritePage(ctx context.Context, res Resolved, ri dynamic.NamespaceableResourceInterface, items []unstructured.Unstructured) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, r.o.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(obj *unstructured.Unstructured) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.rewriteOne(ctx, res, ri, obj); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				cancel()
			}
		}(&items[i])
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("rewrite %s: %w", res.Name, err)
	}
	return int64(len(items)), nil
}

// rewriteOne updates one object exactly as the LIST returned it: its
// resourceVersion makes the update conditional, so nothing written since
// is overwritten.
//
// A conflict means the object was written after the LIST, which came after
// the gate found the plugins on the run's key: that write stored it under
// the API server's current key, exactly as ours would have. It counts as
// done without re-reading and writing it once more: a second write would
// only re-encrypt it again, and would race with the writer that is
// evidently active on it. NotFound means it was deleted: nothing is left
// to re-encrypt.
func (r *run) rewriteOne(ctx context.Context, res Resolved, ri dynamic.NamespaceableResourceInterface, obj *unstructured.Unstructured) error {
	var c dynamic.ResourceInterface = ri
	if res.Namespaced {
		c = ri.Namespace(obj.GetNamespace())
	}
	_, err := c.Update(ctx, obj, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	switch {
	case err == nil:
		r.written.Add(1)
	case apierrors.IsConflict(err):
		r.conflicts.Add(1)
	case apierrors.IsNotFound(err):
		r.gone.Add(1)
	default:
		what := obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			what = ns + "/" + what
		}
		return fmt.Errorf("rewrite %s %s: %w", res.Name, what, err)
	}
	r.done.Add(1)
	return nil
}
