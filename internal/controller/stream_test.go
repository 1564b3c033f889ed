package controller

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// streamServer serves one ConfigMap's lists and watches and records what
// the stream asked for. The API server's part (410 Gone, a watch it ends,
// bookmarks) is what the stream must handle; the reconciler's tests run
// the stream against the real API server.
type streamServer struct {
	mu      sync.Mutex
	rv      string // what the next list returns
	lists   int
	watches chan watchOpened
}

type watchOpened struct {
	rv string
	w  *watch.FakeWatcher
}

func (f *streamServer) kind() *Kind {
	return streamed(&Kind{Resource: "configmaps", newLW: func(string, func(*metav1.ListOptions)) cache.ListerWatcher {
		return &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.lists++
				return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: f.rv},
					Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: f.rv}}}}, nil
			},
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				w := watch.NewFakeWithChanSize(10, false)
				f.watches <- watchOpened{rv: o.ResourceVersion, w: w}
				return w, nil
			},
		}
	}})
}

// streamed gives a fake Kind, whose newLW's watches are watch.Interfaces,
// the stream's watch path: each watch's events are written to a pipe as
// the API server writes them, one metav1.WatchEvent of JSON per line, and
// ending the watch ends the body.
func streamed(k *Kind) *Kind {
	k.decode = typedDecode(&corev1.ConfigMap{})
	k.openWatch = func(ctx context.Context, ns string, opts metav1.ListOptions) (io.ReadCloser, error) {
		lw := cache.ToListerWatcherWithContext(k.newLW(ns, func(o *metav1.ListOptions) { o.FieldSelector = opts.FieldSelector }))
		w, err := lw.WatchWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		go func() {
			for ev := range w.ResultChan() {
				line, err := eventLine(ev)
				if err == nil {
					_, err = pw.Write(line)
				}
				if err != nil {
					w.Stop()
					break
				}
			}
			_ = pw.Close()
		}()
		return stopOnClose{pr, w}, nil
	}
	return k
}

// eventLine is ev as the API server writes it in a JSON watch.
func eventLine(ev watch.Event) ([]byte, error) {
	obj, err := json.Marshal(ev.Object)
	if err != nil {
		return nil, err
	}
	line, err := json.Marshal(metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: obj}})
	return append(line, '\n'), err
}

// stopOnClose stops the watch when the stream closes the body.
type stopOnClose struct {
	*io.PipeReader
	w watch.Interface
}

func (s stopOnClose) Close() error {
	s.w.Stop()
	return s.PipeReader.Close()
}

// TestStreamResumesAndRelists: a watch the server ends is opened again
// from the last resourceVersion seen, bookmarks included, with no list; a
// 410 Gone lists again, and what changed meanwhile reaches the users.
func TestStreamResumesAndRelists(t *testing.T) {
	srv := &streamServer{rv: "1", watches: make(chan watchOpened, 1)}
	k := srv.kind()
	st := &stream{ref: Named(k, "ns", "a"), tweak: func(*metav1.ListOptions) {}}
	st.lw = kube.NewRecordedListWatch(k.newLW("ns", func(*metav1.ListOptions) {}))
	notified := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go st.run(ctx, func([]string) { notified <- struct{}{} })

	next := func(what string) watchOpened {
		t.Helper()
		select {
		case o := <-srv.watches:
			return o
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no watch opened", what)
		}
		return watchOpened{}
	}
	heard := func(what string) {
		t.Helper()
		select {
		case <-notified:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: users not notified", what)
		}
	}
	got := func() string {
		o, ok := st.first()
		if !ok {
			return ""
		}
		return o.(*corev1.ConfigMap).ResourceVersion
	}

	w := next("first watch")
	heard("first list")
	if w.rv != "1" || !st.synced.Load() || got() != "1" {
		t.Fatalf("after the first list: watch from %q, synced %v, cache at %q; want 1, true, 1", w.rv, st.synced.Load(), got())
	}
	w.w.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "2"}})
	heard("modified")
	if got() != "2" {
		t.Errorf("cache at %q after a change to 2", got())
	}

	// The server ends the watch after a bookmark: resume from it, no list.
	w.w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}})
	w.w.Stop()
	w = next("resumed watch")
	srv.mu.Lock()
	lists := srv.lists
	srv.rv = "9" // changed while the version was gone
	srv.mu.Unlock()
	if w.rv != "7" || lists != 1 {
		t.Errorf("resumed from %q after %d lists; want from the bookmark's 7, after 1", w.rv, lists)
	}

	// 410 Gone: list again (at once), hear of the change, watch from there.
	w.w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 7"})
	w = next("watch after the relist")
	heard("relist")
	srv.mu.Lock()
	lists = srv.lists
	srv.mu.Unlock()
	if w.rv != "9" || lists != 2 || got() != "9" {
		t.Errorf("after 410: watch from %q, %d lists, cache at %q; want 9, 2, 9", w.rv, lists, got())
	}
}
