package cabundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	apiregclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// installer stands for whoever installed the aggregated API (Helm,
// kubectl): it creates the APIService and may own spec.caBundle itself.
const installer = "installer"

// requestLog records every request a client sends, so a test can prove
// that something was not written.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "METHOD /path?query"
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.RequestURI())
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// writes are the requests that are not GETs.
func (l *requestLog) writes() []string {
	var out []string
	for _, r := range l.all() {
		if !strings.HasPrefix(r, http.MethodGet+" ") {
			out = append(out, r)
		}
	}
	return out
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = nil
}

// countingConfig is an admin rest.Config whose transport logs each request.
func countingConfig() (*rest.Config, *requestLog) {
	cfg := env.RESTConfig()
	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return kube.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			log.add(r)
			return rt.RoundTrip(r)
		})
	}
	return cfg, log
}

func countingAggregator(t *testing.T) (apiregclient.ApiregistrationV1Interface, *requestLog) {
	t.Helper()
	cfg, log := countingConfig()
	c, err := aggregator.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.ApiregistrationV1(), log
}

func countingCore(t *testing.T) (kubernetes.Interface, *requestLog) {
	t.Helper()
	cfg, log := countingConfig()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, log
}

func aggregatorClient(t *testing.T) apiregclient.ApiregistrationV1Interface {
	t.Helper()
	c, err := aggregator.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c.ApiregistrationV1()
}

// uniqueName is a DNS label derived from the (sub)test name, unique in the
// package because it ends in a hash of the full name.
func uniqueName(t *testing.T) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimPrefix(t.Name(), "Test")) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	base := b.String()
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	sum := sha256.Sum256([]byte(t.Name()))
	return strings.Trim(base, "-") + "-" + hex.EncodeToString(sum[:4])
}

// testBundle is a fresh self-signed CA valid for a year.
func testBundle(t *testing.T, cn string) []byte {
	t.Helper()
	return newCertPEM(t, certSpec{cn: cn, notAfter: time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)})
}

func secretSource(name string) Source {
	return Source{Kind: KindSecret, Namespace: "default", Name: name, Key: "ca.crt"}
}

type apiServiceOpts struct {
	local       bool // no spec.service: served by kube-apiserver itself
	insecure    bool
	caBundle    []byte
	annotations map[string]string
}

// createAPIService creates v1.<unique>.cabundle.test as the installer and
// deletes it when the test ends. The Service it points at need not exist.
func createAPIService(t *testing.T, o apiServiceOpts) *apiregv1.APIService {
	t.Helper()
	u := uniqueName(t)
	svc := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + u + ".cabundle.test", Annotations: o.annotations},
		Spec: apiregv1.APIServiceSpec{
			Group: u + ".cabundle.test", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			InsecureSkipTLSVerify: o.insecure, CABundle: o.caBundle,
		},
	}
	if !o.local {
		port := int32(8443)
		svc.Spec.Service = &apiregv1.ServiceReference{Namespace: "default", Name: "api-" + u, Port: &port}
	}
	c := aggregatorClient(t).APIServices()
	created, err := c.Create(t.Context(), svc, metav1.CreateOptions{FieldManager: installer})
	if err != nil {
		t.Fatalf("create APIService %s: %v", svc.Name, err)
	}
	t.Cleanup(func() {
		err := c.Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete APIService %s: %v", svc.Name, err)
		}
	})
	return created
}

func getAPIService(t *testing.T, name string) *apiregv1.APIService {
	t.Helper()
	svc, err := aggregatorClient(t).APIServices().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get APIService %s: %v", name, err)
	}
	return svc
}

// installerApply makes the installer own spec.caBundle through its own
// server-side apply.
func installerApply(t *testing.T, name string, bundle []byte) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"caBundle": bundle},
	})
	if err != nil {
		t.Fatal(err)
	}
	force := true
	_, err = aggregatorClient(t).APIServices().Patch(t.Context(), name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: installer, Force: &force})
	if err != nil {
		t.Fatalf("installer apply on %s: %v", name, err)
	}
}

// managedLeaves lists the fields manager owns (any operation) as
// ">"-joined paths without the "f:" prefixes, sorted.
func managedLeaves(t *testing.T, obj metav1.Object, manager string) []string {
	t.Helper()
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if k == "." {
				continue
			}
			p := prefix + ">" + strings.TrimPrefix(k, "f:")
			child, _ := v.(map[string]any)
			if len(child) == 0 || (len(child) == 1 && child["."] != nil) {
				out = append(out, strings.TrimPrefix(p, ">"))
				continue
			}
			walk(p, child)
		}
	}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != manager || mf.FieldsV1 == nil || mf.Subresource != "" {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatalf("managedFields of %s: %v", manager, err)
		}
		walk("", fields)
	}
	slices.Sort(out)
	return out
}

const (
	bundleLeaf     = "spec>caBundle"
	annotationLeaf = "metadata>annotations>" + SourceAnnotation
)

// assertSpecKept checks the fields kmshealth must never touch.
func assertSpecKept(t *testing.T, before, after *apiregv1.APIService) {
	t.Helper()
	b, a := before.Spec, after.Spec
	if a.Group != b.Group || a.Version != b.Version || a.GroupPriorityMinimum != b.GroupPriorityMinimum ||
		a.VersionPriority != b.VersionPriority || a.InsecureSkipTLSVerify != b.InsecureSkipTLSVerify {
		t.Errorf("spec changed:\nbefore %+v\n after %+v", b, a)
	}
	if (a.Service == nil) != (b.Service == nil) ||
		(a.Service != nil && (a.Service.Namespace != b.Service.Namespace || a.Service.Name != b.Service.Name || *a.Service.Port != *b.Service.Port)) {
		t.Errorf("spec.service changed: before %+v, after %+v", b.Service, a.Service)
	}
}

func wantOwned(t *testing.T, svc *apiregv1.APIService, manager string, wantBundle, wantAnnotation bool) {
	t.Helper()
	if b, a := Owned(svc, manager); b != wantBundle || a != wantAnnotation {
		t.Errorf("Owned(%s, %q) = (bundle %v, annotation %v), want (%v, %v)", svc.Name, manager, b, a, wantBundle, wantAnnotation)
	}
}

func wantWrites(t *testing.T, log *requestLog, want int) []string {
	t.Helper()
	w := log.writes()
	if len(w) != want {
		t.Errorf("sent %d non-GET requests %q, want %d", len(w), w, want)
	}
	return w
}

func TestGet(t *testing.T) {
	svc := createAPIService(t, apiServiceOpts{})
	tests := []struct {
		name     string
		apiSvc   string
		wantErr  string
		notFound bool
	}{
		{name: "present", apiSvc: svc.Name},
		{name: "missing", apiSvc: "v1.missing.cabundle.test", wantErr: `APIService "v1.missing.cabundle.test" not found: create it`, notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Get(t.Context(), aggregatorClient(t), tt.apiSvc)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.UID != svc.UID {
					t.Errorf("UID %s, want %s", got.UID, svc.UID)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			if apierrors.IsNotFound(err) != tt.notFound {
				t.Errorf("IsNotFound = %v, want %v", apierrors.IsNotFound(err), tt.notFound)
			}
		})
	}
}

func TestEnsureWritesFreshAPIService(t *testing.T) {
	before := createAPIService(t, apiServiceOpts{annotations: map[string]string{"installer.example/keep": "yes"}})
	c, log := countingAggregator(t)
	bundle := testBundle(t, "fresh")
	src := secretSource("fresh-ca")

	out, wrote, err := Ensure(t.Context(), c, before, bundle, src, ApplyOptions{FieldManager: DefaultFieldManager})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if !wrote {
		t.Error("wrote = false on a fresh APIService, want true")
	}
	if !bytes.Equal(out.Spec.CABundle, bundle) {
		t.Errorf("returned caBundle %q, want the bundle", out.Spec.CABundle)
	}
	w := wantWrites(t, log, 1)
	wantPrefix := "PATCH /apis/apiregistration.k8s.io/v1/apiservices/" + before.Name + "?"
	if len(w) == 1 && (!strings.HasPrefix(w[0], wantPrefix) || !strings.Contains(w[0], "fieldManager=kmshealth")) {
		t.Errorf("request %q, want %s...fieldManager=kmshealth", w[0], wantPrefix)
	}

	live := getAPIService(t, before.Name)
	if !bytes.Equal(live.Spec.CABundle, bundle) {
		t.Errorf("live caBundle %q, want the bundle", live.Spec.CABundle)
	}
	if got := live.Annotations[SourceAnnotation]; got != "Secret/default/fresh-ca/ca.crt" {
		t.Errorf("live annotation %s = %q, want %q", SourceAnnotation, got, "Secret/default/fresh-ca/ca.crt")
	}
	if got := live.Annotations["installer.example/keep"]; got != "yes" {
		t.Errorf("installer's annotation = %q, want it kept", got)
	}
	wantOwned(t, live, DefaultFieldManager, true, true)
	wantOwned(t, live, installer, false, false)
	// The apply configuration holds only our two fields.
	if got, want := managedLeaves(t, live, DefaultFieldManager), []string{annotationLeaf, bundleLeaf}; !slices.Equal(got, want) {
		t.Errorf("%s owns %q, want exactly %q", DefaultFieldManager, got, want)
	}
	assertSpecKept(t, before, live)
}

func TestEnsureInSyncWritesNothing(t *testing.T) {
	tests := []struct {
		name         string
		fromReturned bool // use the object the first Ensure returned, not a fresh GET
		newBundle    bool
		newSource    bool
		manager      string
		wantWrote    bool
	}{
		{name: "same input fresh GET", manager: DefaultFieldManager},
		{name: "same input object returned by first Ensure", fromReturned: true, manager: DefaultFieldManager},
		{name: "new bundle", newBundle: true, manager: DefaultFieldManager, wantWrote: true},
		{name: "new source", newSource: true, manager: DefaultFieldManager, wantWrote: true},
		{name: "same input another manager", manager: "someone-else", wantWrote: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := createAPIService(t, apiServiceOpts{})
			bundle, src := testBundle(t, "first"), secretSource("first-ca")
			first, wrote, err := Ensure(t.Context(), aggregatorClient(t), svc, bundle, src, ApplyOptions{FieldManager: DefaultFieldManager})
			if err != nil || !wrote {
				t.Fatalf("first Ensure: wrote %v, err %v", wrote, err)
			}

			c, log := countingAggregator(t)
			live := first
			if !tt.fromReturned {
				if live, err = Get(t.Context(), c, svc.Name); err != nil {
					t.Fatal(err)
				}
			}
			if tt.newBundle {
				bundle = testBundle(t, "second")
			}
			if tt.newSource {
				src = secretSource("second-ca")
			}
			log.reset()
			out, wrote, err := Ensure(t.Context(), c, live, bundle, src, ApplyOptions{FieldManager: tt.manager})
			if err != nil {
				t.Fatalf("second Ensure: %v", err)
			}
			if wrote != tt.wantWrote {
				t.Errorf("wrote = %v, want %v", wrote, tt.wantWrote)
			}
			if tt.wantWrote {
				if w := wantWrites(t, log, 1); len(w) == 1 && !strings.HasPrefix(w[0], "PATCH ") {
					t.Errorf("request %q, want a PATCH", w[0])
				}
			} else {
				if all := log.all(); len(all) != 0 {
					t.Errorf("in-sync Ensure sent %q, want no request at all", all)
				}
				if out.ResourceVersion != live.ResourceVersion {
					t.Errorf("returned resourceVersion %s, want the live %s", out.ResourceVersion, live.ResourceVersion)
				}
			}
			after := getAPIService(t, svc.Name)
			if !bytes.Equal(after.Spec.CABundle, bundle) || after.Annotations[SourceAnnotation] != src.String() {
				t.Errorf("live has caBundle of %d bytes and source %q, want %d bytes and %q",
					len(after.Spec.CABundle), after.Annotations[SourceAnnotation], len(bundle), src)
			}
			wantOwned(t, after, tt.manager, true, true)
		})
	}
}

func TestEnsureConflict(t *testing.T) {
	ours, theirs := testBundle(t, "ours"), testBundle(t, "theirs")
	tests := []struct {
		name         string
		setup        func(t *testing.T) *apiregv1.APIService
		force        bool
		wantConflict bool
		installerKey bool // whether the installer still owns spec.caBundle afterwards
	}{
		{
			name:         "installer created caBundle no force",
			setup:        func(t *testing.T) *apiregv1.APIService { return createAPIService(t, apiServiceOpts{caBundle: theirs}) },
			wantConflict: true, installerKey: true,
		},
		{
			name:  "installer created caBundle force",
			setup: func(t *testing.T) *apiregv1.APIService { return createAPIService(t, apiServiceOpts{caBundle: theirs}) },
			force: true,
		},
		{
			name: "installer applied caBundle no force",
			setup: func(t *testing.T) *apiregv1.APIService {
				svc := createAPIService(t, apiServiceOpts{})
				installerApply(t, svc.Name, theirs)
				return getAPIService(t, svc.Name)
			},
			wantConflict: true, installerKey: true,
		},
		{
			name: "installer applied caBundle force",
			setup: func(t *testing.T) *apiregv1.APIService {
				svc := createAPIService(t, apiServiceOpts{})
				installerApply(t, svc.Name, theirs)
				return getAPIService(t, svc.Name)
			},
			force: true,
		},
		{
			name:         "installer owns identical bytes no force",
			setup:        func(t *testing.T) *apiregv1.APIService { return createAPIService(t, apiServiceOpts{caBundle: ours}) },
			installerKey: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := tt.setup(t)
			if !slices.Contains(managedLeaves(t, live, installer), bundleLeaf) {
				t.Fatalf("setup: installer does not own %s: %q", bundleLeaf, managedLeaves(t, live, installer))
			}
			c, log := countingAggregator(t)
			src := secretSource("conflict-ca")
			out, wrote, err := Ensure(t.Context(), c, live, ours, src, ApplyOptions{FieldManager: DefaultFieldManager, Force: tt.force})
			after := getAPIService(t, live.Name)
			if tt.wantConflict {
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("error %v, want one wrapping ErrConflict", err)
				}
				for _, want := range []string{"force_conflicts", `"installer"`, live.Name, ".spec.caBundle"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				if wrote || out != nil {
					t.Errorf("on conflict: wrote %v, out %v; want false, nil", wrote, out)
				}
				if !bytes.Equal(after.Spec.CABundle, theirs) || after.Annotations[SourceAnnotation] != "" {
					t.Errorf("conflict changed the live object: caBundle theirs=%v, annotation %q",
						bytes.Equal(after.Spec.CABundle, theirs), after.Annotations[SourceAnnotation])
				}
				wantOwned(t, after, DefaultFieldManager, false, false)
			} else {
				if err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				if !wrote {
					t.Error("wrote = false, want true")
				}
				if !bytes.Equal(after.Spec.CABundle, ours) || after.Annotations[SourceAnnotation] != src.String() {
					t.Errorf("live caBundle ours=%v, annotation %q; want ours and %q",
						bytes.Equal(after.Spec.CABundle, ours), after.Annotations[SourceAnnotation], src)
				}
				wantOwned(t, after, DefaultFieldManager, true, true)
			}
			if got := slices.Contains(managedLeaves(t, after, installer), bundleLeaf); got != tt.installerKey {
				t.Errorf("installer owns %s afterwards: %v, want %v", bundleLeaf, got, tt.installerKey)
			}
			w := wantWrites(t, log, 1)
			if len(w) == 1 && !strings.Contains(w[0], "force="+strconv.FormatBool(tt.force)) {
				t.Errorf("request %q does not carry force=%v", w[0], tt.force)
			}
		})
	}
}

func TestEnsureDryRun(t *testing.T) {
	ours, theirs := testBundle(t, "ours"), testBundle(t, "theirs")
	tests := []struct {
		name         string
		existing     []byte // the installer's caBundle
		force        bool
		wantConflict bool
	}{
		{name: "conflict-free"},
		{name: "conflict without force", existing: theirs, wantConflict: true},
		{name: "conflict with force", existing: theirs, force: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := createAPIService(t, apiServiceOpts{caBundle: tt.existing})
			c, log := countingAggregator(t)
			out, _, err := Ensure(t.Context(), c, before, ours, secretSource("dry-ca"),
				ApplyOptions{FieldManager: DefaultFieldManager, Force: tt.force, DryRun: true})
			switch {
			case tt.wantConflict && !errors.Is(err, ErrConflict):
				t.Fatalf("error %v, want one wrapping ErrConflict", err)
			case !tt.wantConflict && err != nil:
				t.Fatalf("dry-run Ensure: %v", err)
			case !tt.wantConflict && !bytes.Equal(out.Spec.CABundle, ours):
				t.Errorf("dry-run result has caBundle of %d bytes, want what would be written", len(out.Spec.CABundle))
			}
			if w := wantWrites(t, log, 1); len(w) == 1 && !strings.Contains(w[0], "dryRun=All") {
				t.Errorf("request %q is not a dry run", w[0])
			}
			after := getAPIService(t, before.Name)
			if !bytes.Equal(after.Spec.CABundle, tt.existing) {
				t.Errorf("dry run changed caBundle to %d bytes, want %d", len(after.Spec.CABundle), len(tt.existing))
			}
			if v, ok := after.Annotations[SourceAnnotation]; ok {
				t.Errorf("dry run wrote annotation %q", v)
			}
			if got := managedLeaves(t, after, DefaultFieldManager); len(got) != 0 {
				t.Errorf("dry run left %s owning %q", DefaultFieldManager, got)
			}
			assertSpecKept(t, before, after)
		})
	}
}

func TestRelease(t *testing.T) {
	ours, theirs := testBundle(t, "ours"), testBundle(t, "theirs")
	keep := map[string]string{"installer.example/keep": "yes"}
	ensure := func(t *testing.T, svc *apiregv1.APIService) {
		t.Helper()
		if _, _, err := Ensure(t.Context(), aggregatorClient(t), svc, ours, secretSource("rel-ca"), ApplyOptions{FieldManager: DefaultFieldManager}); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
	}
	tests := []struct {
		name       string
		setup      func(t *testing.T) (name string, before *apiregv1.APIService)
		wantWrites int
		wantBundle []byte // live caBundle afterwards
	}{
		{
			name: "only we own",
			setup: func(t *testing.T) (string, *apiregv1.APIService) {
				svc := createAPIService(t, apiServiceOpts{annotations: keep})
				ensure(t, svc)
				return svc.Name, svc
			},
			wantWrites: 1, wantBundle: nil,
		},
		{
			name: "installer co-owns identical bytes",
			setup: func(t *testing.T) (string, *apiregv1.APIService) {
				svc := createAPIService(t, apiServiceOpts{annotations: keep, caBundle: ours})
				ensure(t, svc)
				return svc.Name, svc
			},
			wantWrites: 1, wantBundle: ours,
		},
		{
			name: "never managed by us",
			setup: func(t *testing.T) (string, *apiregv1.APIService) {
				svc := createAPIService(t, apiServiceOpts{annotations: keep, caBundle: theirs})
				return svc.Name, svc
			},
			wantWrites: 0, wantBundle: theirs,
		},
		{
			name: "missing APIService",
			setup: func(t *testing.T) (string, *apiregv1.APIService) {
				return "v1." + uniqueName(t) + ".cabundle.test", nil
			},
			wantWrites: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, before := tt.setup(t)
			c, log := countingAggregator(t)
			if err := Release(t.Context(), c, name, DefaultFieldManager); err != nil {
				t.Fatalf("Release: %v", err)
			}
			wantWrites(t, log, tt.wantWrites)
			if before == nil {
				if _, err := aggregatorClient(t).APIServices().Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("after Release of a missing APIService, Get: %v; want NotFound", err)
				}
				return
			}
			after := getAPIService(t, name)
			if !bytes.Equal(after.Spec.CABundle, tt.wantBundle) {
				t.Errorf("caBundle has %d bytes, want %d", len(after.Spec.CABundle), len(tt.wantBundle))
			}
			if v, ok := after.Annotations[SourceAnnotation]; ok {
				t.Errorf("annotation %s = %q left behind", SourceAnnotation, v)
			}
			if after.Annotations["installer.example/keep"] != "yes" {
				t.Errorf("installer's annotation lost: %v", after.Annotations)
			}
			wantOwned(t, after, DefaultFieldManager, false, false)
			if got := managedLeaves(t, after, DefaultFieldManager); len(got) != 0 {
				t.Errorf("%s still owns %q", DefaultFieldManager, got)
			}
			assertSpecKept(t, before, after)
		})
	}
}

func TestEnsureRejectsUnsupportedAPIService(t *testing.T) {
	tests := []struct {
		name string
		opts apiServiceOpts
		want string
	}{
		{name: "local", opts: apiServiceOpts{local: true}, want: "has no spec.service"},
		{name: "insecureSkipTLSVerify", opts: apiServiceOpts{insecure: true}, want: "has spec.insecureSkipTLSVerify: true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := createAPIService(t, tt.opts)
			c, log := countingAggregator(t)
			out, wrote, err := Ensure(t.Context(), c, before, testBundle(t, "rejected"), secretSource("rej-ca"),
				ApplyOptions{FieldManager: DefaultFieldManager, Force: true})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), before.Name) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, before.Name, tt.want)
			}
			if errors.Is(err, ErrConflict) {
				t.Errorf("error %v wraps ErrConflict; it is not a conflict", err)
			}
			if out != nil || wrote {
				t.Errorf("out %v, wrote %v; want nil, false", out, wrote)
			}
			if all := log.all(); len(all) != 0 {
				t.Errorf("sent %q, want no request at all", all)
			}
			after := getAPIService(t, before.Name)
			if len(after.Spec.CABundle) != 0 || after.Annotations[SourceAnnotation] != "" {
				t.Errorf("live object changed: caBundle %d bytes, annotation %q", len(after.Spec.CABundle), after.Annotations[SourceAnnotation])
			}
			if err := CheckAPIService(after); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckAPIService: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestEnsureStaleObject: Ensure given an informer's copy of an APIService
// that has since been deleted (or deleted and re-created) must not write
// (the UID precondition), and must not blame another field manager.
func TestEnsureStaleObject(t *testing.T) {
	tests := []struct {
		name     string
		recreate bool
		force    bool
	}{
		{name: "deleted no force"},
		{name: "deleted force", force: true},
		{name: "recreated force", recreate: true, force: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stale := createAPIService(t, apiServiceOpts{})
			c := aggregatorClient(t)
			if err := c.APIServices().Delete(t.Context(), stale.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if tt.recreate {
				fresh := stale.DeepCopy()
				fresh.ObjectMeta = metav1.ObjectMeta{Name: stale.Name}
				if _, err := c.APIServices().Create(t.Context(), fresh, metav1.CreateOptions{FieldManager: installer}); err != nil {
					t.Fatal(err)
				}
			}
			_, wrote, err := Ensure(t.Context(), c, stale, testBundle(t, "stale"), secretSource("stale-ca"),
				ApplyOptions{FieldManager: DefaultFieldManager, Force: tt.force})
			if !errors.Is(err, ErrGone) || wrote {
				t.Fatalf("Ensure on a stale APIService: wrote %v, err %v; want ErrGone", wrote, err)
			}
			after, getErr := c.APIServices().Get(t.Context(), stale.Name, metav1.GetOptions{})
			switch {
			case !tt.recreate && !apierrors.IsNotFound(getErr):
				t.Errorf("APIService re-created (Get: %v)", getErr)
			case tt.recreate && getErr != nil:
				t.Fatal(getErr)
			case tt.recreate && (len(after.Spec.CABundle) != 0 || after.Annotations[SourceAnnotation] != ""):
				t.Errorf("re-created APIService was written through a stale copy")
			}
			if errors.Is(err, ErrConflict) || strings.Contains(err.Error(), "force_conflicts") {
				t.Errorf("error %q blames a field-manager conflict and suggests force_conflicts; the APIService it was given is gone", err)
			}
		})
	}
}

// hookedAggregator is an aggregator client that runs hook before sending
// each request.
func hookedAggregator(t *testing.T, hook func(*http.Request)) apiregclient.ApiregistrationV1Interface {
	t.Helper()
	cfg := env.RESTConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return kube.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
			hook(r)
			return rt.RoundTrip(r)
		})
	}
	c, err := aggregator.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.ApiregistrationV1()
}

// TestReleaseRacesDeletion: the APIService is deleted between Release's GET
// and its apply (as when Terraform destroys the aggregated API and the
// cabundle resource in parallel). Release documents that a missing
// APIService is not an error.
func TestReleaseRacesDeletion(t *testing.T) {
	svc := createAPIService(t, apiServiceOpts{})
	if _, _, err := Ensure(t.Context(), aggregatorClient(t), svc, testBundle(t, "race"), secretSource("race-ca"), ApplyOptions{FieldManager: DefaultFieldManager}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	fired := false
	c := hookedAggregator(t, func(r *http.Request) {
		if r.Method == http.MethodPatch {
			once.Do(func() {
				if err := aggregatorClient(t).APIServices().Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil {
					t.Errorf("delete in hook: %v", err)
				}
				fired = true
			})
		}
	})
	if err := Release(t.Context(), c, svc.Name, DefaultFieldManager); err != nil {
		t.Errorf("Release of an APIService deleted meanwhile: %v; want nil", err)
	}
	if !fired {
		t.Fatal("Release sent no PATCH: the race this test is about never happened")
	}
}

// inlineAPIService is a name for an inline bundle: no APIService object is
// needed to exercise the ConfigMap functions.
func inlineAPIService(t *testing.T) string {
	sum := sha256.Sum256([]byte(t.Name()))
	return "v1.inline-" + hex.EncodeToString(sum[:4]) + ".example.com"
}

func getConfigMap(t *testing.T, namespace, name string) (*corev1.ConfigMap, error) {
	t.Helper()
	return env.Clientset().CoreV1().ConfigMaps(namespace).Get(t.Context(), name, metav1.GetOptions{})
}

func createConfigMap(t *testing.T, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	cms := env.Clientset().CoreV1().ConfigMaps(cm.Namespace)
	created, err := cms.Create(t.Context(), cm, metav1.CreateOptions{FieldManager: installer})
	if err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	cleanupConfigMap(t, cm.Namespace, cm.Name)
	return created
}

func cleanupConfigMap(t *testing.T, namespace, name string) {
	t.Cleanup(func() {
		err := env.Clientset().CoreV1().ConfigMaps(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ConfigMap %s/%s: %v", namespace, name, err)
		}
	})
}

func TestEnsureInlineConfigMap(t *testing.T) {
	bundleA, bundleB := testBundle(t, "a"), testBundle(t, "b")
	const ns = DefaultBundleNamespace
	tests := []struct {
		name           string
		existingLabels map[string]string // non-nil: a ConfigMap of that name exists, not created by us
		prior          []byte            // non-nil: an earlier EnsureInlineConfigMap wrote this
		bundle         []byte
		wantErr        string
		wantWrites     int
	}{
		{name: "creates", bundle: bundleA, wantWrites: 1},
		{name: "same bundle again writes nothing", prior: bundleA, bundle: bundleA, wantWrites: 0},
		{name: "new bundle rewrites", prior: bundleA, bundle: bundleB, wantWrites: 1},
		{name: "refuses unlabelled", existingLabels: map[string]string{}, bundle: bundleA, wantErr: "already exists and is not managed by kmshealth"},
		{name: "refuses another tool's", existingLabels: map[string]string{ManagedByLabel: "Helm"}, bundle: bundleA, wantErr: "already exists and is not managed by kmshealth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiSvc := inlineAPIService(t)
			cmName := InlineConfigMapName(apiSvc)
			cleanupConfigMap(t, ns, cmName)
			var existing *corev1.ConfigMap
			if tt.existingLabels != nil {
				existing = createConfigMap(t, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: ns, Labels: tt.existingLabels},
					Data:       map[string]string{InlineKey: "theirs"},
				})
			}
			if tt.prior != nil {
				if _, err := EnsureInlineConfigMap(t.Context(), env.Clientset(), ns, apiSvc, tt.prior, DefaultFieldManager); err != nil {
					t.Fatalf("prior EnsureInlineConfigMap: %v", err)
				}
			}

			core, log := countingCore(t)
			src, err := EnsureInlineConfigMap(t.Context(), core, ns, apiSvc, tt.bundle, DefaultFieldManager)
			wantSrc := Source{Kind: KindConfigMap, Namespace: ns, Name: "kmshealth-cabundle-" + apiSvc, Key: "ca.crt"}
			if src != wantSrc {
				t.Errorf("source %+v, want %+v", src, wantSrc)
			}
			wantWrites(t, log, tt.wantWrites)
			cm, getErr := getConfigMap(t, ns, cmName)
			if getErr != nil {
				t.Fatal(getErr)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), ns+"/"+cmName) {
					t.Fatalf("error %v, want one naming %s/%s and containing %q", err, ns, cmName, tt.wantErr)
				}
				if cm.ResourceVersion != existing.ResourceVersion || cm.Data[InlineKey] != "theirs" || len(cm.Labels) != len(tt.existingLabels) {
					t.Errorf("refused ConfigMap was touched: rv %s→%s, data %q, labels %v", existing.ResourceVersion, cm.ResourceVersion, cm.Data, cm.Labels)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureInlineConfigMap: %v", err)
			}
			if cm.Data[InlineKey] != string(tt.bundle) || len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
				t.Errorf("ConfigMap data %v, binaryData %v; want only %s = the bundle", cm.Data, cm.BinaryData, InlineKey)
			}
			if len(cm.Labels) != 2 || cm.Labels[ManagedByLabel] != ManagedByValue || cm.Labels[InlineLabel] != InlineLabelValue || cm.Annotations[BundleForAnnotation] != apiSvc {
				t.Errorf("labels %v, annotations %v; want only %s=%s, %s=%s and %s=%s", cm.Labels, cm.Annotations, ManagedByLabel, ManagedByValue, InlineLabel, InlineLabelValue, BundleForAnnotation, apiSvc)
			}
			if got := managedLeaves(t, cm, DefaultFieldManager); len(got) == 0 {
				t.Errorf("%s owns nothing on the ConfigMap", DefaultFieldManager)
			}
			read, err := ReadSource(t.Context(), env.Clientset(), src)
			if err != nil || !bytes.Equal(read, tt.bundle) {
				t.Errorf("ReadSource(%s) = %d bytes, %v; want the bundle", src, len(read), err)
			}
		})
	}
}

// TestEnsureInlineConfigMapLongAPIServiceName: APIService names are DNS
// subdomains (up to 253 characters; OpenShift ships
// v1beta1.clusterresourceoverrides.admission.autoscaling.openshift.io, 66),
// so an inline bundle must work for names longer than a 63-character label
// value.
func TestEnsureInlineConfigMapLongAPIServiceName(t *testing.T) {
	sum := sha256.Sum256([]byte(t.Name()))
	group := "clusterresourceoverrides-" + hex.EncodeToString(sum[:4]) + ".admission.autoscaling.example.io"
	port := int32(443)
	apiSvc := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1beta1." + group},
		Spec: apiregv1.APIServiceSpec{
			Group: group, Version: "v1beta1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "default", Name: "api-long", Port: &port},
		},
	}
	c := aggregatorClient(t).APIServices()
	if _, err := c.Create(t.Context(), apiSvc, metav1.CreateOptions{FieldManager: installer}); err != nil {
		t.Fatalf("the API server refuses APIService %s (%d characters): %v", apiSvc.Name, len(apiSvc.Name), err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), apiSvc.Name, metav1.DeleteOptions{}) })
	if len(apiSvc.Name) <= 63 {
		t.Fatalf("name %s has %d characters; the test needs more than 63", apiSvc.Name, len(apiSvc.Name))
	}

	const ns = "default"
	cleanupConfigMap(t, ns, InlineConfigMapName(apiSvc.Name))
	bundle := testBundle(t, "long")
	src, err := EnsureInlineConfigMap(t.Context(), env.Clientset(), ns, apiSvc.Name, bundle, DefaultFieldManager)
	if err != nil {
		t.Fatalf("EnsureInlineConfigMap for APIService %s (%d characters): %v", apiSvc.Name, len(apiSvc.Name), err)
	}
	if got, err := ReadSource(t.Context(), env.Clientset(), src); err != nil || !bytes.Equal(got, bundle) {
		t.Errorf("ReadSource(%s) = %d bytes, %v; want the bundle", src, len(got), err)
	}
}

func TestDeleteInlineConfigMap(t *testing.T) {
	const ns = "default"
	tests := []struct {
		name       string
		setup      func(t *testing.T, apiSvc string)
		wantExists bool
		wantWrites int
	}{
		{
			name: "ours is deleted",
			setup: func(t *testing.T, apiSvc string) {
				cleanupConfigMap(t, ns, InlineConfigMapName(apiSvc))
				if _, err := EnsureInlineConfigMap(t.Context(), env.Clientset(), ns, apiSvc, testBundle(t, "del"), DefaultFieldManager); err != nil {
					t.Fatal(err)
				}
			},
			wantWrites: 1,
		},
		{
			name: "unlabelled is left alone",
			setup: func(t *testing.T, apiSvc string) {
				createConfigMap(t, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: InlineConfigMapName(apiSvc), Namespace: ns},
					Data:       map[string]string{InlineKey: "theirs"},
				})
			},
			wantExists: true,
		},
		{name: "missing is fine", setup: func(*testing.T, string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiSvc := inlineAPIService(t)
			tt.setup(t, apiSvc)
			core, log := countingCore(t)
			if err := DeleteInlineConfigMap(t.Context(), core, ns, apiSvc); err != nil {
				t.Fatalf("DeleteInlineConfigMap: %v", err)
			}
			if w := wantWrites(t, log, tt.wantWrites); len(w) == 1 && !strings.HasPrefix(w[0], "DELETE ") {
				t.Errorf("request %q, want a DELETE", w[0])
			}
			cm, err := getConfigMap(t, ns, InlineConfigMapName(apiSvc))
			switch {
			case tt.wantExists && err != nil:
				t.Errorf("ConfigMap gone (%v), want it left alone", err)
			case tt.wantExists && cm.Data[InlineKey] != "theirs":
				t.Errorf("ConfigMap data %v, want it untouched", cm.Data)
			case !tt.wantExists && !apierrors.IsNotFound(err):
				t.Errorf("Get after delete: %v, want NotFound", err)
			}
		})
	}
}

func TestReadSource(t *testing.T) {
	u := uniqueName(t)
	bundle := testBundle(t, "read")
	core := env.Clientset()
	secret, err := core.CoreV1().Secrets("default").Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: u + "-secret", Namespace: "default"},
		Data:       map[string][]byte{"ca.crt": bundle, "tls.key": []byte("k")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.CoreV1().Secrets("default").Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
	cm := createConfigMap(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: u + "-cm", Namespace: "default"},
		Data:       map[string]string{"ca.crt": string(bundle), "other": "x"},
		BinaryData: map[string][]byte{"ca.der": {0x30, 0x82, 0x00, 0xff}},
	})

	tests := []struct {
		name    string
		src     Source
		want    []byte
		wantErr string // substring; "" means success
		missing bool   // whether the error wraps ErrSourceMissing
	}{
		{name: "secret key", src: Source{KindSecret, "default", secret.Name, "ca.crt"}, want: bundle},
		{name: "configmap data key", src: Source{KindConfigMap, "default", cm.Name, "ca.crt"}, want: bundle},
		{name: "configmap binaryData key", src: Source{KindConfigMap, "default", cm.Name, "ca.der"}, want: []byte{0x30, 0x82, 0x00, 0xff}},
		{
			name: "secret missing", src: Source{KindSecret, "default", u + "-nope", "ca.crt"},
			wantErr: "Secret default/" + u + "-nope not found", missing: true,
		},
		{
			name: "configmap missing", src: Source{KindConfigMap, "default", u + "-nope", "ca.crt"},
			wantErr: "ConfigMap default/" + u + "-nope not found", missing: true,
		},
		{
			name: "secret key missing", src: Source{KindSecret, "default", secret.Name, "ca.pem"},
			wantErr: `Secret default/` + secret.Name + ` has no key "ca.pem" (it has: ca.crt, tls.key)`, missing: true,
		},
		{
			name: "configmap key missing", src: Source{KindConfigMap, "default", cm.Name, "ca.pem"},
			wantErr: `ConfigMap default/` + cm.Name + ` has no key "ca.pem" (it has: ca.crt, ca.der, other)`, missing: true,
		},
		{name: "bad kind", src: Source{"Pod", "default", cm.Name, "ca.crt"}, wantErr: `kind "Pod"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSource(t.Context(), core, tt.src)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ReadSource: %v", err)
				}
				if !bytes.Equal(got, tt.want) {
					t.Errorf("ReadSource = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrSourceMissing) != tt.missing {
				t.Errorf("errors.Is(err, ErrSourceMissing) = %v, want %v", errors.Is(err, ErrSourceMissing), tt.missing)
			}
			if got != nil {
				t.Errorf("returned %q with the error, want nil", got)
			}
		})
	}
}

// TestEnsureWritesCertificatesOnly: the provider's path writes the same
// bytes as the reconciler's, the certificates re-encoded, so text around
// them never reaches spec.caBundle and the two never fight.
func TestEnsureWritesCertificatesOnly(t *testing.T) {
	before := createAPIService(t, apiServiceOpts{})
	c, _ := countingAggregator(t)
	clean := testBundle(t, "canonical")
	noisy := append([]byte("# a comment the caBundle must not carry\r\n"), bytes.ReplaceAll(clean, []byte("\n"), []byte("\r\n"))...)
	if _, _, err := Ensure(t.Context(), c, before, noisy, secretSource("canonical-ca"), ApplyOptions{FieldManager: DefaultFieldManager}); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if live := getAPIService(t, before.Name); !bytes.Equal(live.Spec.CABundle, clean) {
		t.Errorf("live caBundle %q, want the certificates alone %q", live.Spec.CABundle, clean)
	}
	// The same certificates again, spelt differently: nothing to write.
	_, wrote, err := Ensure(t.Context(), c, getAPIService(t, before.Name), noisy, secretSource("canonical-ca"), ApplyOptions{FieldManager: DefaultFieldManager})
	if err != nil || wrote {
		t.Errorf("Ensure of an equivalent bundle: wrote=%v err=%v, want nothing written", wrote, err)
	}
	if _, _, err := Ensure(t.Context(), c, before, []byte("junk"), secretSource("canonical-ca"), ApplyOptions{FieldManager: DefaultFieldManager}); err == nil {
		t.Error("Ensure wrote a bundle that is not certificates")
	}
}
