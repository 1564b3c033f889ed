package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
)

// A stream's watch is one HTTP request whose body the stream's own
// goroutine reads and decodes, event by event: no StreamWatcher (and its
// goroutine and channel) between the response and the cache, and no
// buffer held while the stream is idle, which is nearly always. See
// ARCHITECTURE.md "What a watch costs".

// openWatchFunc opens a watch of a kind in namespace with opts (Watch set)
// and returns the response body: a stream of metav1.WatchEvents as JSON.
type openWatchFunc func(ctx context.Context, namespace string, opts metav1.ListOptions) (io.ReadCloser, error)

// decodeFunc turns one event's object (JSON) into the object the cache
// holds, before the Kind's transform.
type decodeFunc func(raw []byte) (runtime.Object, error)

// watchAccept asks for JSON: the frames are read here, not by the client's
// negotiated decoder.
const watchAccept = "application/json"

// typedWatch opens watches of resource through a typed REST client.
func typedWatch(client rest.Interface, resource string) openWatchFunc {
	return func(ctx context.Context, ns string, opts metav1.ListOptions) (io.ReadCloser, error) {
		opts.Watch = true
		return client.Get().Namespace(ns).Resource(resource).
			VersionedParams(&opts, metav1.ParameterCodec).
			SetHeader("Accept", watchAccept).Stream(ctx)
	}
}

// typedDecode decodes into a new object of obj's type, its type meta
// cleared as a typed client's decoder leaves it.
func typedDecode(obj runtime.Object) decodeFunc {
	t := reflect.TypeOf(obj).Elem()
	return func(raw []byte) (runtime.Object, error) {
		o, ok := reflect.New(t).Interface().(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("%s is not a runtime.Object", t)
		}
		if err := utiljson.Unmarshal(raw, o); err != nil {
			return nil, fmt.Errorf("decode a %s: %w", t.Name(), err)
		}
		o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return o, nil
	}
}

// absWatch opens watches of gvr through an unversioned REST client (the
// dynamic client's), accepting accept.
func absWatch(client rest.Interface, gvr schema.GroupVersionResource, accept string) openWatchFunc {
	return func(ctx context.Context, ns string, opts metav1.ListOptions) (io.ReadCloser, error) {
		opts.Watch = true
		return client.Get().AbsPath(resourcePath(gvr, ns)...).
			SpecificallyVersionedParams(&opts, metav1.ParameterCodec, schema.GroupVersion{Version: "v1"}).
			SetHeader("Accept", accept).Stream(ctx)
	}
}

// resourcePath is the URL path of gvr's collection in ns ("" for every
// namespace, and for cluster-scoped kinds).
func resourcePath(gvr schema.GroupVersionResource, ns string) []string {
	p := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		p = []string{"/api", gvr.Version}
	}
	if ns != "" {
		p = append(p, "namespaces", ns)
	}
	return append(p, gvr.Resource)
}

func unstructuredDecode(raw []byte) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode an object: %w", err)
	}
	return u, nil
}

func metadataDecode(raw []byte) (runtime.Object, error) {
	m := &metav1.PartialObjectMetadata{}
	if err := utiljson.Unmarshal(raw, m); err != nil {
		return nil, fmt.Errorf("decode an object's metadata: %w", err)
	}
	return m, nil
}

// maxFrame bounds one event, as client-go's streaming decoder does.
const maxFrame = 16 << 20

// framePool holds the buffers events are read into: taken when an event's
// first bytes arrive, given back once it is decoded, so an idle stream
// holds none.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

var errFrameTooLarge = errors.New("a watch event larger than 16 MiB")

// frames splits a watch response into its events: one JSON object each.
// It scans for the end of each object itself (strings and escapes
// respected), so it needs no decoder of its own to hold a buffer.
type frames struct {
	r     io.Reader
	first [64]byte // what a stream blocks on while idle
	buf   *[]byte  // pooled: the bytes of the next events; nil while idle
	done  int      // the length of the last event returned, dropped by the next call

	// The scan of (*buf)[:scanned]: the object's depth, and whether the
	// scan is in a string, after a backslash in it.
	scanned         int
	depth           int
	inString, escap bool
}

// next returns the next event's bytes, valid until the following call.
func (f *frames) next() ([]byte, error) {
	f.drop()
	for {
		if end, err := f.scan(); err != nil {
			return nil, err
		} else if end > 0 {
			f.done = end
			return (*f.buf)[:end], nil
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
}

// drop removes the event last returned; the buffer goes back to the pool
// when nothing is left (scan drops whitespace).
func (f *frames) drop() {
	if f.buf == nil {
		return
	}
	b := (*f.buf)[f.done:]
	f.done, f.scanned = 0, 0
	if len(b) == 0 {
		f.release()
		return
	}
	*f.buf = (*f.buf)[:copy(*f.buf, b)]
}

// release gives the buffer back (a huge one is left to the collector).
func (f *frames) release() {
	if f.buf == nil {
		return
	}
	if cap(*f.buf) <= 64<<10 {
		*f.buf = (*f.buf)[:0]
		framePool.Put(f.buf)
	}
	f.buf = nil
}

// fill reads more of the stream: into the small array while nothing is
// pending, else into the buffer, which grows as an event needs.
func (f *frames) fill() error {
	if f.buf == nil {
		n, err := f.r.Read(f.first[:])
		if n == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return err
		}
		bp, _ := framePool.Get().(*[]byte)
		if bp == nil {
			b := make([]byte, 0, 4<<10)
			bp = &b
		}
		f.buf = bp
		*f.buf = append((*f.buf)[:0], f.first[:n]...)
		return nil // a Read that returned data and an error returns the error again
	}
	b := *f.buf
	if len(b) == cap(b) {
		if len(b) >= maxFrame {
			return errFrameTooLarge
		}
		b = append(b, make([]byte, len(b))...)[:len(b)]
	}
	n, err := f.r.Read(b[len(b):cap(b)])
	*f.buf = b[:len(b)+n]
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// scan goes on scanning the pending bytes and returns the length of the
// first complete JSON object, 0 when it is not complete yet.
func (f *frames) scan() (int, error) {
	if f.buf == nil {
		return 0, nil
	}
	b := *f.buf
	if f.scanned == 0 { // an event starts at 0: drop the whitespace before it
		i := 0
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			f.release() // whitespace alone: idle again
			return 0, nil
		}
		b = b[:copy(b, b[i:])]
		*f.buf = b
	}
	for ; f.scanned < len(b); f.scanned++ {
		c := b[f.scanned]
		switch {
		case f.inString:
			switch {
			case f.escap:
				f.escap = false
			case c == '\\':
				f.escap = true
			case c == '"':
				f.inString = false
			}
		case f.depth == 0 && c != '{':
			return 0, fmt.Errorf("a watch event that is not a JSON object (starts with %q)", c)
		case c == '"':
			f.inString = true
		case c == '{' || c == '[':
			f.depth++
		case c == '}' || c == ']':
			f.depth--
			if f.depth == 0 {
				f.scanned++
				return f.scanned, nil
			}
		}
	}
	return 0, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }
