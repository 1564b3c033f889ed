// Command reconcilebench measures the reconcile mode of the real binary
// against the real test API server and prints figures (no pass/fail):
//
//	(a) drift-restore latency over -corruptions out-of-band overwrites;
//	(b) API requests the reconciler sends during -idle with -apiservices
//	    managed APIServices (writes and non-watch reads counted apart);
//	(c) its RSS with -apiservices managed, then with -unrelated Secrets and
//	    as many ConfigMaps present.
//
// Run by `make bench`.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

func main() {
	corruptions := flag.Int("corruptions", 50, "out-of-band corruptions to time")
	apiservices := flag.Int("apiservices", 200, "managed APIServices for the idle and RSS figures")
	idle := flag.Duration("idle", 60*time.Second, "idle window")
	unrelated := flag.Int("unrelated", 5000, "unrelated Secrets, and as many ConfigMaps, for the RSS figure")
	flag.Parse()
	if err := run(*corruptions, *apiservices, *idle, *unrelated); err != nil {
		fmt.Fprintln(os.Stderr, "reconcilebench:", err)
		os.Exit(1)
	}
}

type bench struct {
	env  *testenv.Env
	core kubernetes.Interface
	agg  aggregator.Interface
	bin  string
}

func run(corruptions, apiservices int, idle time.Duration, unrelated int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kmshealth-reconcilebench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, err := devenv.BuildProvider(ctx, dir, "bench")
	if err != nil {
		return err
	}
	env, err := testenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Stop()
	cfg := env.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	b := &bench{env: env, core: kubernetes.NewForConfigOrDie(cfg), agg: aggregator.NewForConfigOrDie(cfg), bin: bin}
	version, _ := b.core.Discovery().ServerVersion()
	fmt.Printf("reconcile mode benchmark: kube-apiserver %s, %d CPUs, %s, %s\n\n", version, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))

	good := newCA("good")
	names := make([]string, apiservices)
	for i := range names {
		if names[i], err = b.managed(ctx, fmt.Sprintf("b%03d", i), good); err != nil {
			return err
		}
	}
	p, err := b.start()
	if err != nil {
		return err
	}
	defer p.Stop()

	// (a) restore latency.
	lat, err := b.restoreLatency(ctx, names[0], good, corruptions)
	if err != nil {
		return err
	}
	slices.Sort(lat)
	fmt.Printf("(a) drift restore, %d corruptions of one managed APIService (from the corrupting write's response to the watch event of the restored bundle)\n", len(lat))
	fmt.Printf("    %s\n\n", devenv.Latencies(lat).Summary())

	// (b) idle requests.
	before, err := requests(p)
	if err != nil {
		return err
	}
	time.Sleep(idle)
	after, err := requests(p)
	if err != nil {
		return err
	}
	var writes, reads, watches, lease float64
	var detail []string
	for k, v := range after {
		d := v - before[k]
		if d == 0 {
			continue
		}
		detail = append(detail, fmt.Sprintf("%s %s=%v", k.verb, k.resource, d))
		switch {
		case k.resource == "leases":
			lease += d
		case k.verb == "WATCH":
			watches += d
		case k.verb == "GET":
			reads += d
		default:
			writes += d
		}
	}
	slices.Sort(detail)
	fmt.Printf("(b) idle %s with %d managed APIServices (%d source watches): writes %v, non-watch reads %v, new watches %v (client-go re-opens watches on server timeout), leader-election lease requests %v\n",
		idle, apiservices, apiservices, writes, reads, watches, lease)
	fmt.Printf("    all requests in the window: %s\n\n", strings.Join(detail, ", "))

	// (c) RSS.
	rss1, err := devenv.StatusMiB(p.Cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.unrelated(ctx, unrelated); err != nil {
		return err
	}
	created := time.Since(start)
	time.Sleep(5 * time.Second) // let any (unwanted) watch traffic land
	rss2, err := devenv.StatusMiB(p.Cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	fmt.Printf("(c) reconciler RSS: %.1f MiB with %d managed APIServices; %.1f MiB after creating %d unrelated Secrets and %d ConfigMaps (in %s)\n",
		rss1, apiservices, rss2, unrelated, unrelated, created.Round(time.Second))
	var parts []string
	for _, f := range []string{"RssAnon", "RssFile"} {
		if v, err := devenv.StatusMiB(p.Cmd.Process.Pid, f); err == nil {
			parts = append(parts, fmt.Sprintf("%s %.1f MiB", f, v))
		}
	}
	for _, s := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_goroutines"} {
		if v, err := p.Metric(s); err == nil {
			if strings.HasSuffix(s, "_bytes") {
				parts = append(parts, fmt.Sprintf("%s %.1f MiB", strings.TrimSuffix(strings.TrimPrefix(s, "go_memstats_"), "_bytes"), v/(1<<20)))
			} else {
				parts = append(parts, fmt.Sprintf("%s %v", strings.TrimPrefix(s, "go_"), v))
			}
		}
	}
	fmt.Printf("    at the end: %s\n", strings.Join(parts, ", "))
	return nil
}

// managed creates an APIService with its own source ConfigMap and applies
// the bundle the way the provider does.
func (b *bench) managed(ctx context.Context, name string, bundle []byte) (string, error) {
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "default", Name: name + "-ca", Key: "ca.crt"}
	if _, err := b.core.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: src.Name}, Data: map[string]string{"ca.crt": string(bundle)}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	port := int32(443)
	group := name + ".bench.example.com"
	live, err := b.agg.ApiregistrationV1().APIServices().Create(ctx, &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + group},
		Spec: apiregv1.APIServiceSpec{Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "default", Name: name, Port: &port}},
	}, metav1.CreateOptions{FieldManager: "installer"})
	if err != nil {
		return "", err
	}
	_, _, err = cabundle.Ensure(ctx, b.agg.ApiregistrationV1(), live, bundle, src, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager})
	return live.Name, err
}

func (b *bench) restoreLatency(ctx context.Context, name string, good []byte, n int) ([]time.Duration, error) {
	apis := b.agg.ApiregistrationV1().APIServices()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	w, err := apis.Watch(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	bad := newCA("stale")
	var out []time.Duration
	for range n {
		svc, err := apis.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		svc.Spec.CABundle = bad
		corrupted, err := apis.Update(ctx, svc, metav1.UpdateOptions{FieldManager: "legacy-installer"})
		if err != nil {
			return nil, err
		}
		start := time.Now()
		after, _ := strconv.ParseInt(corrupted.ResourceVersion, 10, 64)
		timeout := time.After(10 * time.Second)
	wait:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return nil, errors.New("watch closed")
				}
				s, ok := ev.Object.(*apiregv1.APIService)
				if !ok {
					continue
				}
				// Only the write that follows the corruption counts (etcd
				// revisions are ordered integers).
				if rv, _ := strconv.ParseInt(s.ResourceVersion, 10, 64); rv > after && bytes.Equal(s.Spec.CABundle, good) {
					out = append(out, time.Since(start))
					break wait
				}
			case <-timeout:
				return nil, fmt.Errorf("corruption not restored within 10s")
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out, nil
}

func (b *bench) unrelated(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := fmt.Sprintf("unrelated-%05d", i)
				if _, err := b.core.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"k": bytes.Repeat([]byte("s"), 1024)}}, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				if _, err := b.core.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": strings.Repeat("c", 1024)}}, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (b *bench) start() (*devenv.Process, error) {
	logf, err := os.Create(filepath.Join(b.env.Dir, "reconciler.log"))
	if err != nil {
		return nil, err
	}
	p, err := devenv.StartReconcile(context.Background(), b.bin, logf, b.env.Token,
		"--kubeconfig="+b.env.Kubeconfig, "--namespace=default", "--leader-elect=true")
	if err != nil {
		return nil, err
	}
	// Ready means caches synced; give it the Lease and its first pass.
	time.Sleep(3 * time.Second)
	return p, nil
}

type requestKey struct{ verb, resource string }

// requests returns kmshealth_kube_api_requests_total by verb and resource.
func requests(p *devenv.Process) (map[requestKey]float64, error) {
	all, err := p.Metrics()
	if err != nil {
		return nil, err
	}
	out := map[requestKey]float64{}
	for series, v := range all {
		labels, ok := strings.CutPrefix(series, "kmshealth_kube_api_requests_total{")
		if !ok {
			continue
		}
		var k requestKey
		for _, kv := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
			key, val, _ := strings.Cut(kv, "=")
			switch val = strings.Trim(val, `"`); key {
			case "verb":
				k.verb = val
			case "resource":
				k.resource = val
			}
		}
		out[k] = v
	}
	return out, nil
}

func newCA(cn string) []byte { return testpki.MustCertPEM(cn, testpki.Options{}) }
