package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// The stream's timings: a failed list or watch is retried after a delay
// that doubles from minRetry to maxRetry (as client-go's reflector does);
// a watch asks the server to end it after minWatchTimeout to twice that,
// spread so that many streams do not re-open together.
const (
	minRetry        = 800 * time.Millisecond
	maxRetry        = 30 * time.Second
	minWatchTimeout = 5 * time.Minute
)

// stream follows one Ref with one raw watch: a list (of the one named
// object, or of the Ref's namespace), then a watch from the list's
// resourceVersion with bookmarks, re-opened from the last resourceVersion
// seen when the server ends it (no request but the watch while idle), and
// listed again only when the watch fails or the server says that version
// is gone. One goroutine runs it, beside the client's own for the stream:
// no reflector, DeltaFIFO, indexer or informer controller, which cost
// about six goroutines and a hundred KiB of heap per watched object.
type stream struct {
	ref    Ref
	lw     *kube.RecordedListWatch
	cancel context.CancelFunc
	users  map[string]struct{} // guarded by watches.mu
	root   bool
	synced atomic.Bool // listed at least once

	mu   sync.RWMutex
	objs map[string]any // by namespace/name, as transformed
}

// first returns one object the stream holds: the named one.
func (s *stream) first() (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, o := range s.objs {
		return o, true
	}
	return nil, false
}

// list returns every object the stream holds.
func (s *stream) list() []any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]any, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o)
	}
	return out
}

// run lists and watches until ctx ends, calling notify after the first
// list (an object that does not exist sends no event), after each relevant
// change, and after a relist that found one.
func (s *stream) run(ctx context.Context, notify func()) {
	var delay time.Duration
	consistent := false // the first list may come from the server's watch cache, as a reflector's does
	for {
		if !pause(ctx, delay) {
			return
		}
		rv, err := s.relist(ctx, consistent, notify)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			delay = nextRetry(delay)
			klog.V(2).InfoS("list failed; retrying", "ref", s.ref.String(), "retry", delay, "err", err)
			continue
		}
		for {
			rv, err = s.watch(ctx, rv, notify)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				break
			}
			delay = 0 // the server ended a watch that ran: open it again from rv
		}
		// The watch failed: list again, at once if only the version is
		// gone, else after a pause that grows until a watch runs (a list
		// that succeeds does not reset it: a watch that is refused while
		// the list is allowed must not become a list every 800 ms).
		consistent = true
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			delay = 0
		} else {
			delay = nextRetry(delay)
			klog.V(2).InfoS("watch failed; listing again", "ref", s.ref.String(), "retry", delay, "err", err)
		}
	}
}

// relist replaces what the stream holds with a list and returns the list's
// resourceVersion; it notifies on the first list and on any difference.
func (s *stream) relist(ctx context.Context, consistent bool, notify func()) (string, error) {
	opts := metav1.ListOptions{ResourceVersion: "0"}
	if consistent {
		opts.ResourceVersion = ""
	}
	obj, err := s.lw.ListWithContext(ctx, opts)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", s.ref, err)
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", s.ref, err)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", s.ref, err)
	}
	objs := make(map[string]any, len(items))
	for _, it := range items {
		o, key, err := s.ref.Kind.keep(it)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", s.ref, err)
		}
		objs[key] = o
	}
	s.mu.Lock()
	old := s.objs
	s.objs = objs
	s.mu.Unlock()
	if first := !s.synced.Swap(true); first || s.differ(old, objs) {
		notify()
	}
	return lm.GetResourceVersion(), nil
}

// differ reports whether a relist changed anything that matters.
func (s *stream) differ(old, cur map[string]any) bool {
	if len(old) != len(cur) {
		return true
	}
	for key, n := range cur {
		o, ok := old[key]
		if !ok {
			return true
		}
		if resourceVersion(o) != resourceVersion(n) && (s.ref.Kind.Relevant == nil || s.ref.Kind.Relevant(o, n)) {
			return true
		}
	}
	return false
}

// watch follows the stream from rv until the server ends it (nil error,
// with the last resourceVersion seen, bookmarks included) or it fails.
func (s *stream) watch(ctx context.Context, rv string, notify func()) (string, error) {
	timeout := int64(minWatchTimeout.Seconds() * (1 + rand.Float64()))
	w, err := s.lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		return rv, fmt.Errorf("watch %s: %w", s.ref, err)
	}
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, ctx.Err()
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return rv, nil
		}
		switch ev.Type {
		case watch.Error:
			return rv, fmt.Errorf("watch %s: %w", s.ref, apierrors.FromObject(ev.Object))
		case watch.Bookmark:
			if v := resourceVersion(ev.Object); v != "" {
				rv = v
			}
			continue
		case watch.Added, watch.Modified, watch.Deleted:
		default:
			return rv, fmt.Errorf("watch %s: unexpected event %q", s.ref, ev.Type)
		}
		o, key, err := s.ref.Kind.keep(ev.Object)
		if err != nil {
			return rv, fmt.Errorf("watch %s: %w", s.ref, err)
		}
		rv = resourceVersion(o)
		s.mu.Lock()
		old, had := s.objs[key]
		if ev.Type == watch.Deleted {
			delete(s.objs, key)
		} else {
			if s.objs == nil {
				s.objs = map[string]any{}
			}
			s.objs[key] = o
		}
		s.mu.Unlock()
		if ev.Type == watch.Modified && had && s.ref.Kind.Relevant != nil && !s.ref.Kind.Relevant(old, o) {
			continue
		}
		notify()
	}
}

// keep transforms obj for the cache and returns its key.
func (k *Kind) keep(obj any) (any, string, error) {
	o, err := k.transform(obj)
	if err != nil {
		return nil, "", err
	}
	key, err := cache.MetaNamespaceKeyFunc(o)
	if err != nil {
		return nil, "", fmt.Errorf("key of a %s: %w", k.Resource, err)
	}
	return o, key, nil
}

// resourceVersion is obj's metadata.resourceVersion, "" when it has none.
func resourceVersion(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// nextRetry doubles d within [minRetry, maxRetry], with jitter.
func nextRetry(d time.Duration) time.Duration {
	d = min(max(2*d, minRetry), maxRetry)
	return d + rand.N(d/4+1)
}

// pause waits d (none for 0) and reports false if ctx ended first: the
// retry delay of a stream, not synchronisation.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
