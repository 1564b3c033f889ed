package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilnet "k8s.io/apimachinery/pkg/util/net"
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
// is gone. One goroutine runs it and reads the watch's response itself
// (rawwatch.go), beside the HTTP/2 transport's one per open request: no
// reflector, DeltaFIFO, indexer or informer controller (six goroutines and
// about a hundred KiB of heap per watched object), and no client-go
// StreamWatcher (a goroutine, a channel and a decoder's buffers more).
//
// A named Ref of a ClusterWide kind has no request of its own: its stream
// is a view of the kind's one cluster-wide stream (parent), which holds
// the objects and hands each event to the view of the object it is about.
type stream struct {
	ref    Ref
	lw     *kube.RecordedListWatch   // its lists; nil for a view
	tweak  func(*metav1.ListOptions) // selects the named object; a no-op for every object
	cancel context.CancelFunc
	users  map[string]struct{} // guarded by watches.mu
	root   bool
	synced atomic.Bool // listed at least once

	parent *stream // a view's cluster-wide stream
	// listed, if set, is called after the stream's first list, once its
	// objects are in the cache and its users notified.
	listed func()
	views  map[string]*stream // a cluster-wide stream's views, by object key; guarded by watches.mu

	mu   sync.RWMutex
	objs map[string]any // by namespace/name, as transformed
}

// first returns one object the stream holds: the named one.
func (s *stream) first() (any, bool) {
	if s.parent != nil {
		return s.parent.object(objectKey(s.ref))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, o := range s.objs {
		return o, true
	}
	return nil, false
}

// object returns the object of key, if the stream holds it.
func (s *stream) object(key string) (any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.objs[key]
	return o, ok
}

// isSynced reports whether the stream (a view: its parent) has listed.
func (s *stream) isSynced() bool {
	if s.parent != nil {
		return s.parent.synced.Load()
	}
	return s.synced.Load()
}

// listErr is the error of the stream's (a view: its parent's) last failed
// list.
func (s *stream) listErr() error {
	if s.parent != nil {
		return s.parent.listErr()
	}
	return s.lw.ListErr()
}

// objectKey is the cache key of the object r names.
func objectKey(r Ref) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// list returns every object the stream holds.
func (s *stream) list() []any {
	if s.parent != nil {
		if o, ok := s.first(); ok {
			return []any{o}
		}
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]any, 0, len(s.objs))
	for _, o := range s.objs {
		out = append(out, o)
	}
	return out
}

// run lists and watches until ctx ends, calling notify after the first
// list (an object that does not exist sends no event) with no keys (every
// object), after each relevant change with the object's key, and after a
// relist that found changes with the keys of the objects that changed.
func (s *stream) run(ctx context.Context, notify func(keys []string)) {
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
func (s *stream) relist(ctx context.Context, consistent bool, notify func(keys []string)) (string, error) {
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
	if first := !s.synced.Swap(true); first {
		notify(nil)
		if s.listed != nil {
			s.listed()
		}
	} else if keys := s.differ(old, objs); len(keys) > 0 {
		notify(keys)
	}
	return lm.GetResourceVersion(), nil
}

// differ returns the keys of the objects a relist changed in a way that
// matters: added, removed, or relevantly updated.
func (s *stream) differ(old, cur map[string]any) []string {
	var keys []string
	for key, n := range cur {
		o, ok := old[key]
		if !ok || resourceVersion(o) != resourceVersion(n) && (s.ref.Kind.Relevant == nil || s.ref.Kind.Relevant(o, n)) {
			keys = append(keys, key)
		}
	}
	for key := range old {
		if _, ok := cur[key]; !ok {
			keys = append(keys, key)
		}
	}
	return keys
}

// watch follows the stream from rv until the server ends it (nil error,
// with the last resourceVersion seen, bookmarks included) or it fails. It
// reads the response itself (frames): the stream's goroutine is the only
// one of ours per watch, and an idle watch holds no buffer.
func (s *stream) watch(ctx context.Context, rv string, notify func(keys []string)) (string, error) {
	body, err := s.open(ctx, rv)
	if err != nil {
		return rv, err
	}
	f := &frames{r: body}
	defer func() {
		_ = body.Close()
		f.release()
	}()
	for {
		frame, err := f.next()
		if err != nil {
			if ctx.Err() != nil {
				return rv, ctx.Err()
			}
			// The server ended the watch (its timeout, a restart): open it
			// again from rv, as client-go's StreamWatcher ends quietly on
			// these.
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsProbableEOF(err) {
				return rv, nil
			}
			return rv, fmt.Errorf("watch %s: read an event: %w", s.ref, err)
		}
		if rv, err = s.event(frame, rv, notify); err != nil {
			return rv, err
		}
	}
}

// open opens the watch from rv, with bookmarks, asking the server to end
// it after minWatchTimeout to twice that.
func (s *stream) open(ctx context.Context, rv string) (io.ReadCloser, error) {
	timeout := int64(minWatchTimeout.Seconds() * (1 + rand.Float64()))
	opts := metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout}
	s.tweak(&opts)
	body, err := s.ref.Kind.openWatch(ctx, s.ref.Namespace, opts)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", s.ref, err)
	}
	return body, nil
}

// event applies one watch event to what the stream holds and notifies,
// returning the resourceVersion it brings (rv for an event that brings
// none). It is a function of its own so that its locals are not on the
// stack of a stream waiting for the next event: a goroutine's stack
// shrinks only to what it uses while it waits.
func (s *stream) event(frame []byte, rv string, notify func(keys []string)) (string, error) {
	var ev metav1.WatchEvent
	if err := utiljson.Unmarshal(frame, &ev); err != nil {
		return rv, fmt.Errorf("watch %s: decode an event: %w", s.ref, err)
	}
	typ := watch.EventType(ev.Type)
	switch typ {
	case watch.Error:
		status := &metav1.Status{}
		if err := utiljson.Unmarshal(ev.Object.Raw, status); err != nil {
			return rv, fmt.Errorf("watch %s: decode an error event: %w", s.ref, err)
		}
		return rv, fmt.Errorf("watch %s: %w", s.ref, apierrors.FromObject(status))
	case watch.Bookmark:
		var m metav1.PartialObjectMetadata
		if err := utiljson.Unmarshal(ev.Object.Raw, &m); err == nil && m.ResourceVersion != "" {
			rv = m.ResourceVersion
		}
		return rv, nil
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return rv, fmt.Errorf("watch %s: unexpected event %q", s.ref, ev.Type)
	}
	obj, err := s.ref.Kind.decode(ev.Object.Raw)
	if err != nil {
		return rv, fmt.Errorf("watch %s: %w", s.ref, err)
	}
	o, key, err := s.ref.Kind.keep(obj)
	if err != nil {
		return rv, fmt.Errorf("watch %s: %w", s.ref, err)
	}
	rv = resourceVersion(o)
	s.mu.Lock()
	old, had := s.objs[key]
	if typ == watch.Deleted {
		delete(s.objs, key)
	} else {
		if s.objs == nil {
			s.objs = map[string]any{}
		}
		s.objs[key] = o
	}
	s.mu.Unlock()
	if typ == watch.Modified && had && s.ref.Kind.Relevant != nil && !s.ref.Kind.Relevant(old, o) {
		return rv, nil
	}
	notify([]string{key})
	return rv, nil
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
