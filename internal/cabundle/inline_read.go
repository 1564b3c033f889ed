package cabundle

import (
	"context"
	"net/http"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// InlineReader reads inline ConfigMaps for one provider process: the
// first read in a namespace LISTs the inline ConfigMaps there (those
// labelled InlineLabel) once, reads running at the same time wait for that
// LIST, and later reads answer from it. So a refresh of n inline bundles in
// one namespace costs one LIST instead of n GETs (ARCHITECTURE.md, "Refresh
// of an inline bundle").
//
// It never answers less than a GET would:
//   - a ConfigMap that is not in the LIST (deleted, created since, or
//     written before InlineLabel existed) is read with a GET;
//   - a LIST that fails for any reason — Forbidden, for a user granted
//     only get on named ConfigMaps, included — is not an error: every read
//     of that namespace is a GET, which reports what is wrong;
//   - once this process writes a ConfigMap in a namespace (Wrote, or the
//     transport of WatchWrites), every later read there is a GET.
//
// The zero value is ready to use; a nil *InlineReader reads with a GET.
type InlineReader struct {
	mu      sync.Mutex
	lists   map[string]*inlineList // by namespace
	written map[string]bool        // namespaces this process wrote ConfigMaps in
}

type inlineList struct {
	once     sync.Once
	ok       bool                         // the LIST succeeded
	canceled bool                         // it failed because its caller's context ended
	items    map[string]map[string][]byte // name → data and binaryData
}

// Read returns the bytes under src's key, as ReadSource does.
func (r *InlineReader) Read(ctx context.Context, core clientset.Core, src Source) ([]byte, error) {
	if r == nil || src.Kind != KindConfigMap {
		return ReadSource(ctx, core, src)
	}
	l := r.list(src.Namespace)
	if l == nil {
		return ReadSource(ctx, core, src)
	}
	l.once.Do(func() { l.load(ctx, core, src.Namespace) })
	if l.canceled {
		// The Read that sent the LIST returned first (its object was gone,
		// say): the next read LISTs again.
		r.forget(src.Namespace, l)
	}
	data, found := l.items[src.Name]
	if !l.ok || !found || r.wrote(src.Namespace) {
		return ReadSource(ctx, core, src)
	}
	return keyOf(src, data)
}

// ReadAhead starts Read now, beside whatever the caller reads next, and
// returns a function that waits for its result (the same result on every
// call): a refresh that needs both the kept object and its inline
// ConfigMap then costs one round trip, not two.
func (r *InlineReader) ReadAhead(ctx context.Context, core clientset.Core, src Source) func() ([]byte, error) {
	return ahead(func() ([]byte, error) { return r.Read(ctx, core, src) })
}

// Wrote records that this process writes (or deletes) a ConfigMap in
// namespace: from now on reads there are GETs.
func (r *InlineReader) Wrote(namespace string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[string]bool{}
	}
	r.written[namespace] = true
}

// WatchWrites wraps a client transport so that every request of rt that
// may change a ConfigMap (any method but GET and HEAD under
// /api/v1/namespaces/<ns>/configmaps) calls Wrote(<ns>) before it is
// sent: no write path of the process can leave a stale LIST in use.
func (r *InlineReader) WatchWrites(rt http.RoundTripper) http.RoundTripper {
	return kube.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			if ns, ok := configMapNamespace(req.URL.Path); ok {
				r.Wrote(ns)
			}
		}
		return rt.RoundTrip(req)
	})
}

// configMapNamespace returns ns when path is /api/v1/namespaces/ns/configmaps
// or below it.
func configMapNamespace(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/api/v1/namespaces/")
	if !ok {
		return "", false
	}
	ns, rest, _ := strings.Cut(rest, "/")
	if ns == "" || (rest != "configmaps" && !strings.HasPrefix(rest, "configmaps/")) {
		return "", false
	}
	return ns, true
}

// list returns the namespace's LIST (made on first use), nil when this
// process wrote there.
func (r *InlineReader) list(namespace string) *inlineList {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written[namespace] {
		return nil
	}
	if r.lists == nil {
		r.lists = map[string]*inlineList{}
	}
	l := r.lists[namespace]
	if l == nil {
		l = &inlineList{}
		r.lists[namespace] = l
	}
	return l
}

// forget drops l, the namespace's LIST, if it is still the one in use.
func (r *InlineReader) forget(namespace string, l *inlineList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lists[namespace] == l {
		delete(r.lists, namespace)
	}
}

func (r *InlineReader) wrote(namespace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[namespace]
}

// load LISTs the inline ConfigMaps of namespace. A failure leaves ok false
// and is not reported: each read then GETs its own ConfigMap (and, when
// the failure was ctx ending, the next read LISTs again).
func (l *inlineList) load(ctx context.Context, core clientset.Core, namespace string) {
	list, err := core.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: InlineLabel + "=" + InlineLabelValue})
	if err != nil {
		l.canceled = ctx.Err() != nil
		return
	}
	l.items = make(map[string]map[string][]byte, len(list.Items))
	for i := range list.Items {
		l.items[list.Items[i].Name] = ConfigMapData(&list.Items[i])
	}
	l.ok = true
}
