package cabundle

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// inlineNamespace creates a namespace of the test's own, so that a LIST
// there sees only the test's ConfigMaps.
func inlineNamespace(t *testing.T, name string) string {
	t.Helper()
	core := env.Clientset()
	ns, err := core.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s-: %v", name, err)
	}
	t.Cleanup(func() { _ = core.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// countingCoreFor is a clientset of cfg whose transport logs each
// request, inside whatever wrap adds (nil: nothing).
func countingCoreFor(t *testing.T, cfg *rest.Config, wrap func(http.RoundTripper) http.RoundTripper) (kubernetes.Interface, *requestLog) {
	t.Helper()
	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		logged := kube.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			log.add(r)
			return rt.RoundTrip(r)
		})
		if wrap == nil {
			return logged
		}
		return wrap(logged)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, log
}

// readAll reads srcs at the same time through r, as the refreshes of one
// plan do, and returns each one's bytes and error in order.
func readAll(ctx context.Context, r *InlineReader, core kubernetes.Interface, srcs []Source) ([]string, []error) {
	got, errs := make([]string, len(srcs)), make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Go(func() {
			b, err := r.Read(ctx, core, src)
			got[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	return got, errs
}

func inlineSource(ns, apiservice string) Source {
	return Source{Kind: KindConfigMap, Namespace: ns, Name: InlineConfigMapName(apiservice), Key: InlineKey}
}

// TestInlineReader: reads at the same time share one LIST of the
// namespace's inline ConfigMaps and answer what a GET would — an edited
// ConfigMap's new bytes, a deleted one's ErrSourceMissing, one written
// before InlineLabel existed by its own GET — later reads send nothing,
// and after the process writes a ConfigMap there every read is a GET.
func TestInlineReader(t *testing.T) {
	ns := inlineNamespace(t, "inline-reader")
	ctx := t.Context()
	admin := env.Clientset()
	bundles := map[string][]byte{}
	for _, svc := range []string{"v1.kept", "v1.edited", "v1.deleted"} {
		bundles[svc] = testBundle(t, svc)
		if _, err := EnsureInlineConfigMap(ctx, admin, ns, svc, bundles[svc], DefaultFieldManager); err != nil {
			t.Fatal(err)
		}
	}
	edited := testBundle(t, "someone else's")
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, InlineConfigMapName("v1.edited"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[InlineKey] = string(edited)
	if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().ConfigMaps(ns).Delete(ctx, InlineConfigMapName("v1.deleted"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// An inline ConfigMap as versions before InlineLabel wrote it.
	older := testBundle(t, "older")
	createConfigMap(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: InlineConfigMapName("v1.older"),
			Labels: map[string]string{ManagedByLabel: ManagedByValue}, Annotations: map[string]string{BundleForAnnotation: "v1.older"}},
		Data: map[string]string{InlineKey: string(older)},
	})

	reader := &InlineReader{}
	core, log := countingCoreFor(t, env.RESTConfig(), reader.WatchWrites)
	srcs := []Source{inlineSource(ns, "v1.kept"), inlineSource(ns, "v1.edited"), inlineSource(ns, "v1.deleted"), inlineSource(ns, "v1.older")}
	want := []string{string(bundles["v1.kept"]), string(edited), "", string(older)}
	wantErrs := []error{nil, nil, ErrSourceMissing, nil}
	got, errs := readAll(ctx, reader, core, srcs)
	for i := range srcs {
		if got[i] != want[i] || !errors.Is(errs[i], wantErrs[i]) {
			t.Errorf("read %s: %d bytes, %v; want %d bytes, %v", srcs[i].Name, len(got[i]), errs[i], len(want[i]), wantErrs[i])
		}
	}
	list := inlineListRequest(ns)
	wantReqs := map[string]bool{
		list: true,
		"GET /api/v1/namespaces/" + ns + "/configmaps/" + srcs[2].Name: true, // not in the LIST: GET
		"GET /api/v1/namespaces/" + ns + "/configmaps/" + srcs[3].Name: true,
	}
	checkRequests(t, "four reads at once", log.all(), wantReqs)

	log.reset()
	if b, err := reader.Read(ctx, core, srcs[0]); string(b) != want[0] || err != nil {
		t.Errorf("read %s again: %d bytes, %v; want the bundle", srcs[0].Name, len(b), err)
	}
	checkRequests(t, "a later read", log.all(), nil)

	// This process writes: from now on the namespace is read with GETs.
	rewritten := testBundle(t, "rewritten")
	if _, err := EnsureInlineConfigMap(ctx, core, ns, "v1.kept", rewritten, DefaultFieldManager); err != nil {
		t.Fatal(err)
	}
	log.reset()
	if b, err := reader.Read(ctx, core, srcs[0]); string(b) != string(rewritten) || err != nil {
		t.Errorf("read %s after this process wrote it: %d bytes, %v; want the new bundle", srcs[0].Name, len(b), err)
	}
	checkRequests(t, "a read after a write", log.all(), map[string]bool{"GET /api/v1/namespaces/" + ns + "/configmaps/" + srcs[0].Name: true})
}

// TestInlineReaderListForbidden: a user granted only get on the named
// ConfigMaps — the API server denies its LIST — reads each with its own
// GET and sees no error, and the LIST is not tried again.
func TestInlineReaderListForbidden(t *testing.T) {
	ns := inlineNamespace(t, "inline-reader-get-only")
	ctx := t.Context()
	admin := env.Clientset()
	svcs := []string{"v1.one", "v1.two"}
	var names []string
	for _, svc := range svcs {
		if _, err := EnsureInlineConfigMap(ctx, admin, ns, svc, testBundle(t, svc), DefaultFieldManager); err != nil {
			t.Fatal(err)
		}
		names = append(names, InlineConfigMapName(svc))
	}
	const sa = "named-gets"
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: names, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := testenv.AsToken(env.RESTConfig(), testenv.ServiceAccountToken(t, admin, ns, sa))
	core, log := countingCoreFor(t, cfg, nil)
	_, err := core.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: InlineLabel + "=" + InlineLabelValue})
	testenv.Denied(t, "LIST of the inline ConfigMaps with only named gets", err, "cannot list resource")

	log.reset()
	reader := &InlineReader{}
	srcs := []Source{inlineSource(ns, svcs[0]), inlineSource(ns, svcs[1])}
	for round := range 2 {
		got, errs := readAll(ctx, reader, core, srcs)
		for i := range srcs {
			b, err := ReadSource(ctx, admin, srcs[i])
			if err != nil || got[i] != string(b) || errs[i] != nil {
				t.Errorf("round %d, read %s: %d bytes, %v; want the bundle (%d bytes), no error", round+1, srcs[i].Name, len(got[i]), errs[i], len(b))
			}
		}
	}
	list := inlineListRequest(ns)
	var lists, gets int
	for _, r := range log.all() {
		switch {
		case r == list:
			lists++
		case strings.HasPrefix(r, "GET /api/v1/namespaces/"+ns+"/configmaps/"):
			gets++
		default:
			t.Errorf("unexpected request %s", r)
		}
	}
	if lists != 1 || gets != 4 {
		t.Errorf("two rounds of two reads: %d LISTs, %d GETs; want the one denied LIST, then a GET per read (4)", lists, gets)
	}
}

// TestInlineReaderCanceledList: a LIST that failed because the Read that
// sent it had returned (its context ended) is not kept: the next read
// LISTs again and answers from it.
func TestInlineReaderCanceledList(t *testing.T) {
	ns := inlineNamespace(t, "inline-reader-canceled")
	bundle := testBundle(t, "v1.canceled")
	if _, err := EnsureInlineConfigMap(t.Context(), env.Clientset(), ns, "v1.canceled", bundle, DefaultFieldManager); err != nil {
		t.Fatal(err)
	}
	reader := &InlineReader{}
	core, log := countingCoreFor(t, env.RESTConfig(), reader.WatchWrites)
	src := inlineSource(ns, "v1.canceled")
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := reader.Read(gone, core, src); !errors.Is(err, context.Canceled) {
		t.Errorf("read with an ended context: %v; want context.Canceled", err)
	}
	for i := range 2 {
		if b, err := reader.Read(t.Context(), core, src); string(b) != string(bundle) || err != nil {
			t.Errorf("read %d after it: %d bytes, %v; want the bundle", i+1, len(b), err)
		}
	}
	checkRequests(t, "two reads after the canceled one", log.all(), map[string]bool{inlineListRequest(ns): true})
}

// TestConfigMapNamespace: which request paths WatchWrites takes for a
// ConfigMap write, and in which namespace.
func TestConfigMapNamespace(t *testing.T) {
	tests := []struct {
		path   string
		wantNS string
		wantOK bool
	}{
		{"/api/v1/namespaces/kube-system/configmaps/kmshealth-cabundle-x", "kube-system", true},
		{"/api/v1/namespaces/kube-system/configmaps", "kube-system", true},
		{"/api/v1/namespaces/kube-system/secrets/x", "", false},
		{"/api/v1/namespaces/kube-system/configmapsx", "", false},
		{"/api/v1/namespaces/kube-system", "", false},
		{"/apis/apiregistration.k8s.io/v1/apiservices/v1.x", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			ns, ok := configMapNamespace(tt.path)
			if ns != tt.wantNS || ok != tt.wantOK {
				t.Errorf("configMapNamespace(%q) = %q, %v; want %q, %v", tt.path, ns, ok, tt.wantNS, tt.wantOK)
			}
		})
	}
}

// inlineListRequest is the request line of InlineReader's LIST in ns.
func inlineListRequest(ns string) string {
	return "GET /api/v1/namespaces/" + ns + "/configmaps?" + url.Values{"labelSelector": {InlineLabel + "=" + InlineLabelValue}}.Encode()
}

// checkRequests: the requests sent are exactly want, each once.
func checkRequests(t *testing.T, what string, got []string, want map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range got {
		seen[r]++
	}
	ok := len(seen) == len(want)
	for r, n := range seen {
		ok = ok && want[r] && n == 1
	}
	if !ok {
		t.Errorf("%s sent %q; want each of %v once and nothing else", what, got, want)
	}
}
