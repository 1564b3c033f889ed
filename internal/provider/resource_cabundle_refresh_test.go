package provider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// refreshCounter is a reverse proxy in front of the test API server that
// counts the GETs of one APIService, the reads of its inline ConfigMap (a
// GET of it, or the LIST of kube-system's inline ConfigMaps that
// cabundle.InlineReader sends), and holds each APIService GET until the
// ConfigMap's read has arrived (at most pairWait): a Read that sends them
// one after the other is caught as a timed-out pair, one that sends them
// together passes at once.
type refreshCounter struct {
	apiservicePath, configMapPath, listPath string

	mu                 sync.Mutex
	apiservices, cms   int // cms: GETs and LISTs
	cmGets             int
	unpaired           int // APIService GETs no ConfigMap GET joined within pairWait
	cmArrived          chan struct{}
	others             []string
	waitingAPIServices int
}

// pairWait bounds how long an APIService GET waits for its ConfigMap GET;
// only a sequential Read ever waits it out.
const pairWait = 5 * time.Second

func newRefreshCounter(t *testing.T, apiservice string) (*refreshCounter, string) {
	t.Helper()
	rc := &refreshCounter{
		apiservicePath: "/apis/apiregistration.k8s.io/v1/apiservices/" + apiservice,
		configMapPath:  "/api/v1/namespaces/kube-system/configmaps/" + cabundle.InlineConfigMapName(apiservice),
		listPath:       "/api/v1/namespaces/kube-system/configmaps",
		cmArrived:      make(chan struct{}),
	}
	cfg := env.RESTConfig()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(upstream) },
		Transport: transport,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.observe(r)
		proxy.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err = os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: counted, cluster: {server: "http://%s"}}]
users: [{name: proxy, user: {token: "the-proxy-authenticates"}}]
contexts: [{name: counted, context: {cluster: counted, user: proxy}}]
current-context: counted
`, l.Addr()), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return rc, kubeconfig
}

// observe counts r and, for the APIService's GET, waits for the ConfigMap's.
func (rc *refreshCounter) observe(r *http.Request) {
	rc.mu.Lock()
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == rc.configMapPath ||
		r.URL.Path == rc.listPath && r.URL.Query().Get("labelSelector") == cabundle.InlineLabel+"="+cabundle.InlineLabelValue):
		rc.cms++
		if r.URL.Path == rc.configMapPath {
			rc.cmGets++
		}
		if rc.waitingAPIServices > 0 {
			close(rc.cmArrived)
			rc.cmArrived = make(chan struct{})
		}
		rc.mu.Unlock()
		return
	case r.Method == http.MethodGet && r.URL.Path == rc.apiservicePath:
		rc.apiservices++
		if rc.cms >= rc.apiservices {
			rc.mu.Unlock() // its ConfigMap GET came first
			return
		}
		rc.waitingAPIServices++
		arrived := rc.cmArrived
		rc.mu.Unlock()
		timer := time.NewTimer(pairWait)
		defer timer.Stop()
		select {
		case <-arrived:
		case <-timer.C:
			rc.mu.Lock()
			rc.unpaired++
			rc.mu.Unlock()
		}
		rc.mu.Lock()
		rc.waitingAPIServices--
		rc.mu.Unlock()
		return
	default:
		rc.others = append(rc.others, r.Method+" "+r.URL.Path)
		rc.mu.Unlock()
	}
}

func (rc *refreshCounter) counts() (apiservices, cms, cmGets, unpaired int, others []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.apiservices, rc.cms, rc.cmGets, rc.unpaired, append([]string(nil), rc.others...)
}

// checkRefresh asserts what the plans since the last reset cost: every
// refresh (one resource, so one per provider process) one GET of the
// APIService and one LIST of kube-system's inline ConfigMaps, sent
// together (one round trip), and nothing else.
func (rc *refreshCounter) check(t *testing.T) {
	t.Helper()
	apiservices, cms, cmGets, unpaired, others := rc.counts()
	lists := cms - cmGets
	t.Logf("refreshes through the counting proxy: %d APIService GETs, %d inline ConfigMap LISTs, %d ConfigMap GETs, %d sent one after the other, other requests %q", apiservices, lists, cmGets, unpaired, others)
	if apiservices == 0 || lists != apiservices || cmGets != 0 || unpaired != 0 || len(others) != 0 {
		t.Errorf("want each refresh to GET the APIService and LIST the inline ConfigMaps once, together, and nothing else; got %d APIService GETs, %d LISTs, %d ConfigMap GETs, %d sequential, others %q",
			apiservices, lists, cmGets, unpaired, others)
	}
}

// TestAccAPIServiceCABundle_refreshRoundTrip: refreshing an inline bundle
// costs one round trip — the APIService and its ConfigMap are read
// together, each once (the ConfigMap by the LIST that the refreshes of a
// plan share) — and drift of either still shows in the plan.
func TestAccAPIServiceCABundle_refreshRoundTrip(t *testing.T) {
	t.Parallel()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	ca1 := newCertPEM(t, "ca-one", certOpts{})
	ca2 := newCertPEM(t, "ca-two", certOpts{})
	rc, kubeconfig := newRefreshCounter(t, name)
	// The same configuration, with the provider talking through the proxy.
	counted := func() string {
		return strings.Replace(inlineConfig(name, ca1, ""), fmt.Sprintf("config_path = %q", env.Kubeconfig), fmt.Sprintf("config_path = %q", kubeconfig), 1)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReleased(t, name),
		Steps: []resource.TestStep{
			{Config: inlineConfig(name, ca1, "")},
			// No drift: an empty plan, each refresh a GET and a LIST in one round trip.
			{Config: counted(), PlanOnly: true},
			{
				Config:   counted(),
				PlanOnly: true,
				PreConfig: func() {
					rc.check(t)
				},
			},
			// Someone edits our ConfigMap: drift, seen through the same reads.
			{
				PreConfig: func() {
					cms := env.Clientset().CoreV1().ConfigMaps("kube-system")
					cm, err := cms.Get(context.Background(), cabundle.InlineConfigMapName(name), metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cm.Data[cabundle.InlineKey] = ca2
					if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             counted(),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			// Restore, then an installer overwrites the APIService: drift too.
			{Config: inlineConfig(name, ca1, ""), Check: checkLive(t, name, ca1, "ConfigMap/kube-system/"+cabundle.InlineConfigMapName(name)+"/ca.crt")},
			{
				PreConfig:          func() { overwrite(t, name, ca2) },
				Config:             counted(),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: inlineConfig(name, ca1, ""),
				PreConfig: func() {
					rc.check(t)
				},
			},
		},
	})
}
