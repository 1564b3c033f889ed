package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	apiregclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const reconcileUsage = "reconcile [-corruptions=50] [-apiservices=200] [-idle=60s] [-unrelated=5000] [-steps=1,200] [-bin=path]"

// The reconciler's namespace, its Lease and its record (what it keeps) in
// that namespace, and the series the bench reads from its /metrics.
const (
	reconcileNamespace = "default"
	leaseName          = "kmshealth-reconciler"        // its --leader-elect-lease-name default
	recordName         = "kmshealth-reconciler-record" // its --record-configmap default
	inSyncSeries       = `kmshealth_reconciles_total{controller="cabundle",result="in_sync"}`
	writtenSeries      = `kmshealth_reconciles_total{controller="cabundle",result="written"}`
	correctionsSeries  = `kmshealth_corrections_total{controller="cabundle"}`
	watchesSeries      = `kmshealth_watches{controller="cabundle"}`
)

// reconcileOptions are the flags of the reconcile subcommand.
type reconcileOptions struct {
	corruptions int
	apiservices int
	idle        time.Duration
	unrelated   int
	// steps are kept counts below apiservices at which memory is read
	// first (comma-separated): the record grows to each in turn, then to
	// apiservices, in one process, and the growth per kept object is
	// printed.
	steps string
	// bin is a binary built beforehand (e.g. with -tags incluster, as the
	// image is, or from another commit to compare); empty builds this
	// checkout's provider binary.
	bin string
}

func parseReconcileFlags(args []string) (reconcileOptions, error) {
	var o reconcileOptions
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	fs.IntVar(&o.corruptions, "corruptions", 50, "out-of-band corruptions to time")
	fs.IntVar(&o.apiservices, "apiservices", 200, "managed APIServices for the idle and RSS figures")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "idle window")
	fs.IntVar(&o.unrelated, "unrelated", 5000, "unrelated Secrets, and as many ConfigMaps, for the RSS figure")
	fs.StringVar(&o.steps, "steps", "", "kept counts below -apiservices to read memory at first, comma-separated (e.g. 1,200)")
	fs.StringVar(&o.bin, "bin", "", "a binary built beforehand to run (default: build this checkout's provider)")
	if err := parseFlags(fs, args, reconcileUsage); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// Validate runs before anything starts, so bad flags fail in milliseconds.
func (o reconcileOptions) Validate() error {
	err := atLeast1(intFlag{"corruptions", o.corruptions}, intFlag{"apiservices", o.apiservices})
	if o.idle <= 0 {
		err = errors.Join(err, fmt.Errorf("-idle=%s: want a positive duration", o.idle))
	}
	if o.unrelated < 0 {
		err = errors.Join(err, fmt.Errorf("-unrelated=%d: want 0 or more", o.unrelated))
	}
	if _, serr := o.stepCounts(); serr != nil {
		err = errors.Join(err, serr)
	}
	return err
}

// stepCounts are the kept counts memory is read at: -steps, then
// -apiservices.
func (o reconcileOptions) stepCounts() ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(o.steps, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n >= o.apiservices || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("-steps=%s: want increasing counts from 1 to below -apiservices=%d", o.steps, o.apiservices)
		}
		out = append(out, n)
	}
	return append(out, o.apiservices), nil
}

type reconcileBench struct {
	o    reconcileOptions
	env  *testenv.Env
	core kubernetes.Interface
	agg  aggregator.Interface
	bin  string
}

// run measures the reconcile mode of the real binary against the real test
// API server and prints figures (no pass/fail):
//
//	(a) drift-restore latency over -corruptions out-of-band overwrites;
//	(b) API requests the reconciler sends during -idle with -apiservices
//	    managed APIServices (writes and non-watch reads counted apart);
//	(c) its RSS with -apiservices managed, then with -unrelated Secrets and
//	    as many ConfigMaps present.
func (o reconcileOptions) run(ctx context.Context, out io.Writer) error {
	bin, env, cleanup, err := prebuiltOrBuild(ctx, o.bin)
	if err != nil {
		return err
	}
	defer cleanup()
	steps, err := o.stepCounts()
	if err != nil {
		return err
	}
	cfg := env.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	b := &reconcileBench{o: o, env: env, core: kubernetes.NewForConfigOrDie(cfg), agg: aggregator.NewForConfigOrDie(cfg), bin: bin}
	version, _ := b.core.Discovery().ServerVersion()
	_, _ = fmt.Fprintf(out, "reconcile mode benchmark: kube-apiserver %s, %d CPUs, %s, %s\n\n", version, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))

	good := newCA("good")
	names := make([]string, o.apiservices)
	sources := make(map[string]cabundle.Source, o.apiservices)
	for i := range names {
		name, src, err := b.managed(ctx, fmt.Sprintf("b%03d", i), good)
		if err != nil {
			return err
		}
		names[i], sources[name] = name, src
	}
	keep := func(n int) map[string]cabundle.Source {
		m := make(map[string]cabundle.Source, n)
		for _, name := range names[:n] {
			m[name] = sources[name]
		}
		return m
	}
	if err := b.record(ctx, keep(steps[0])); err != nil {
		return err
	}
	p, err := b.startKeeping(ctx, steps[0])
	if err != nil {
		return err
	}
	defer p.Stop()

	// (m) memory per kept object: the record grows step by step in one
	// process.
	var mem []memoryFigures
	for i, n := range steps {
		if i > 0 {
			if err := b.record(ctx, keep(n)); err != nil {
				return err
			}
			if err := b.firstPass(ctx, p, n); err != nil {
				return err
			}
		}
		f, err := readMemory(p, n)
		if err != nil {
			return err
		}
		mem = append(mem, f)
	}
	_, _ = fmt.Fprintf(out, "(m) memory by kept APIServices (each with its own source ConfigMap; the record grows in one process)\n")
	for _, f := range mem {
		_, _ = fmt.Fprintf(out, "    %s\n", f)
	}
	if len(mem) > 1 {
		first, last := mem[0], mem[len(mem)-1]
		kept := float64(last.kept - first.kept)
		_, _ = fmt.Fprintf(out, "    per kept APIService from %d to %d: RSS %.1f KiB, RssAnon %.1f KiB, goroutines %.2f\n",
			first.kept, last.kept, (last.rss-first.rss)*1024/kept, (last.anon-first.anon)*1024/kept, (last.goroutines-first.goroutines)/kept)
	}
	_, _ = fmt.Fprintln(out)

	// (a) restore latency.
	lat, err := b.restoreLatency(ctx, p, names[0], good)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "(a) drift restore, %d corruptions of one managed APIService (from the corrupting write's response to the watch event of the restored bundle)\n", len(lat))
	_, _ = fmt.Fprintf(out, "    %s\n\n", lat.Summary())

	// (b) idle requests.
	before, err := kubeAPIRequests(p)
	if err != nil {
		return err
	}
	if err := sleep(ctx, o.idle); err != nil {
		return err
	}
	after, err := kubeAPIRequests(p)
	if err != nil {
		return err
	}
	var writes, reads, watches, lease, reviews float64
	var detail []string
	for k, d := range after.sub(before) {
		detail = append(detail, fmt.Sprintf("%s %s=%v", k.verb, k.resource, d))
		switch {
		case k.resource == "leases":
			lease += d
		case k.resource == "tokenreviews" || k.resource == "subjectaccessreviews":
			reviews += d
		case k.verb == "WATCH":
			watches += d
		case k.verb == "GET":
			reads += d
		default:
			writes += d
		}
	}
	slices.Sort(detail)
	running, err := p.Metric(watchesSeries)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "(b) idle %s with %d managed APIServices (%v watches: the record, each source, the APIServices): writes %v, non-watch reads %v, new watches %v (client-go re-opens watches on server timeout), leader-election lease requests %v, reviews of the bench's own /metrics scrapes %v\n",
		o.idle, o.apiservices, running, writes, reads, watches, lease, reviews)
	_, _ = fmt.Fprintf(out, "    all requests in the window: %s\n\n", strings.Join(detail, ", "))

	// (c) RSS.
	rss1, err := devenv.StatusMiB(p.Cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.createUnrelated(ctx); err != nil {
		return err
	}
	created := time.Since(start)
	// Part of the measurement, not synchronisation: the reconciler must not
	// hear of these objects at all, so there is nothing to wait for; the
	// pause lets memory that a regression (a watch of every Secret or
	// ConfigMap) would grow show up before RSS is read.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	rss2, err := devenv.StatusMiB(p.Cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "(c) reconciler RSS: %.1f MiB with %d managed APIServices; %.1f MiB after creating %d unrelated Secrets and %d ConfigMaps (in %s)\n",
		rss1, o.apiservices, rss2, o.unrelated, o.unrelated, created.Round(time.Second))
	var parts []string
	for _, f := range []string{"RssAnon", "RssFile"} {
		if v, err := devenv.StatusMiB(p.Cmd.Process.Pid, f); err == nil {
			parts = append(parts, fmt.Sprintf("%s %.1f MiB", f, v))
		}
	}
	if m, err := p.Metrics(); err == nil {
		for _, s := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_goroutines"} {
			v, ok := m[s]
			switch {
			case !ok:
			case strings.HasSuffix(s, "_bytes"):
				parts = append(parts, fmt.Sprintf("%s %.1f MiB", strings.TrimSuffix(strings.TrimPrefix(s, "go_memstats_"), "_bytes"), v/(1<<20)))
			default:
				parts = append(parts, fmt.Sprintf("%s %v", strings.TrimPrefix(s, "go_"), v))
			}
		}
	}
	_, _ = fmt.Fprintf(out, "    at the end: %s\n", strings.Join(parts, ", "))
	return nil
}

// managed creates an APIService with its own source ConfigMap and applies
// the bundle the way the provider does; it returns the APIService's name
// and its source, for the record.
func (b *reconcileBench) managed(ctx context.Context, name string, bundle []byte) (string, cabundle.Source, error) {
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: reconcileNamespace, Name: name + "-ca", Key: "ca.crt"}
	if _, err := b.core.CoreV1().ConfigMaps(src.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: src.Name}, Data: map[string]string{"ca.crt": string(bundle)}}, metav1.CreateOptions{}); err != nil {
		return "", src, err
	}
	port := int32(443)
	group := name + ".bench.example.com"
	live, err := b.agg.ApiregistrationV1().APIServices().Create(ctx, &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + group},
		Spec: apiregv1.APIServiceSpec{Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "default", Name: name, Port: &port}},
	}, metav1.CreateOptions{FieldManager: "installer"})
	if err != nil {
		return "", src, err
	}
	_, _, err = cabundle.Ensure(ctx, b.agg.ApiregistrationV1(), live, bundle, src, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager})
	return live.Name, src, err
}

// record writes the reconciler's record, every managed APIService with its
// source, in one server-side apply, as kmshealth_reconciler does.
func (b *reconcileBench) record(ctx context.Context, sources map[string]cabundle.Source) error {
	ac := corev1ac.ConfigMap(recordName, reconcileNamespace).WithData(cabundle.RecordData(sources))
	if _, err := b.core.CoreV1().ConfigMaps(reconcileNamespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "kmshealth-bench", Force: true}); err != nil {
		return fmt.Errorf("apply the reconciler's record %s/%s: %w", reconcileNamespace, recordName, err)
	}
	return nil
}

// restoreLatency corrupts name's caBundle b.o.corruptions times and times
// each restore, from the corrupting write's response to the watch event of
// the good bundle. After each restore it waits until the reconciler has
// counted it, so the next corruption finds the reconciler idle.
func (b *reconcileBench) restoreLatency(ctx context.Context, p *devenv.Process, name string, good []byte) (devenv.Latencies, error) {
	corrections, err := p.Metric(correctionsSeries)
	if err != nil {
		return nil, err
	}
	return b.timeRestores(ctx, name, good, func() error {
		corrections++
		want := corrections
		return waitMetrics(ctx, p, fmt.Sprintf("%s = %v", correctionsSeries, want), 20*time.Millisecond, 10*time.Second,
			func(m map[string]float64) bool { return m[correctionsSeries] >= want })
	})
}

// timeRestores overwrites name's caBundle with a stale CA
// b.o.corruptions times and times each restore (see the shared
// timeRestores): restored means the caBundle is good again, exactly.
func (b *reconcileBench) timeRestores(ctx context.Context, name string, good []byte, settled func() error) (devenv.Latencies, error) {
	exactly := func(s *apiregv1.APIService) bool { return bytes.Equal(s.Spec.CABundle, good) }
	return timeRestores(ctx, b.agg.ApiregistrationV1().APIServices(), name, b.o.corruptions, exactly, settled)
}

// timeRestores overwrites APIService name's caBundle with a stale CA n
// times, by Update under another field manager ("legacy-installer", as an
// installer's kubectl replace would), and times each restore: from the
// corrupting write's response to the first watch event after it for which
// restored is true. settled runs after each restore, before the next
// corruption.
func timeRestores(ctx context.Context, apis apiregclient.APIServiceInterface, name string, n int, restored func(*apiregv1.APIService) bool, settled func() error) (devenv.Latencies, error) {
	w, err := apis.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return nil, fmt.Errorf("watch APIService %s: %w", name, err)
	}
	defer w.Stop()
	stale := newCA("stale")
	out := make(devenv.Latencies, 0, n)
	for range n {
		corrupted, err := corrupt(ctx, apis, name, stale)
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
				// Only a write after the corruption counts (etcd revisions
				// are ordered integers).
				if rv, _ := strconv.ParseInt(s.ResourceVersion, 10, 64); rv > after && restored(s) {
					out = append(out, time.Since(start))
					break wait
				}
			case <-timeout:
				return nil, fmt.Errorf("APIService %s not restored within 10s of the corruption", name)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := settled(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// corrupt overwrites name's caBundle with stale, by Update under another
// field manager (a legacy installer), and returns the object written.
func corrupt(ctx context.Context, apis apiregclient.APIServiceInterface, name string, stale []byte) (*apiregv1.APIService, error) {
	svc, err := apis.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	svc.Spec.CABundle = stale
	out, err := apis.Update(ctx, svc, metav1.UpdateOptions{FieldManager: "legacy-installer"})
	if err != nil {
		return nil, fmt.Errorf("corrupt APIService %s: %w", name, err)
	}
	return out, nil
}

// createUnrelated creates b.o.unrelated Secrets and as many ConfigMaps,
// none of them the reconciler's business.
func (b *reconcileBench) createUnrelated(ctx context.Context) error {
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
	for i := range b.o.unrelated {
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

// start runs the reconciler with leader election and waits until it leads
// (its Lease has a holder) and has made its first pass: every record entry
// watched (the record, each APIService and each source), every watch
// listed (/readyz), and every managed APIService reconciled.
func (b *reconcileBench) start(ctx context.Context) (*devenv.Process, error) {
	return b.startKeeping(ctx, b.o.apiservices)
}

// startKeeping is start with the record keeping kept APIServices.
func (b *reconcileBench) startKeeping(ctx context.Context, kept int) (*devenv.Process, error) {
	logf, err := os.Create(filepath.Join(b.env.Dir, "reconciler.log"))
	if err != nil {
		return nil, err
	}
	p, err := devenv.StartReconcile(ctx, b.bin, logf, b.env.Token,
		"--kubeconfig="+b.env.Kubeconfig, "--namespace="+reconcileNamespace, "--record-configmap="+recordName,
		"--leader-elect=true", "--leader-elect-lease-name="+leaseName)
	if err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	if err := b.waitLeader(ctx, reconcileNamespace, leaseName); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	if err := b.firstPass(ctx, p, kept); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	return p, nil
}

// firstPass waits until p watches kept APIServices and their sources
// besides the record, every watch has listed (/readyz), and it has
// reconciled at least kept times in all. A source is one watch each; the
// APIServices are one watch each (an older reconciler) or one watch of
// them all (controller.Kind.ClusterWide): kept + 2 watches at least.
func (b *reconcileBench) firstPass(ctx context.Context, p *devenv.Process, kept int) error {
	n := float64(kept)
	what := fmt.Sprintf("first pass: %s ≥ %v, in_sync + written reconciles ≥ %v, /readyz ok", watchesSeries, n+2, n)
	var running float64
	err := waitMetrics(ctx, p, what, 100*time.Millisecond, 120*time.Second,
		func(m map[string]float64) bool {
			running = m[watchesSeries]
			return running >= n+2 && m[inSyncSeries]+m[writtenSeries] >= n && ready(p)
		})
	if err != nil {
		return err
	}
	// Listed is not yet watching: the watch requests queue behind the
	// lists in the client's rate limiter (QPS 50), and so would the
	// restores timed next. Wait until every watch request went out. (The
	// watches start together, when the record lists: all of them are
	// running once the first ones are.)
	var sent float64
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 180*time.Second, true, func(context.Context) (bool, error) {
		samples, err := p.Samples()
		if err == nil {
			sent = sum(samples, "kmshealth_kube_api_requests_total", map[string]string{"verb": "WATCH"})
		}
		return err == nil && sent >= running, nil
	})
	if err != nil {
		return fmt.Errorf("first pass: %v watch requests sent, want %v: %w", sent, running, err)
	}
	return nil
}

// memoryFigures are one reading of the reconciler's memory.
type memoryFigures struct {
	kept                  int
	rss, anon, file, heap float64 // MiB
	stack, goroutines     float64
}

func (f memoryFigures) String() string {
	return fmt.Sprintf("%5d kept: RSS %.1f MiB (RssAnon %.1f, RssFile %.1f), heap in use %.1f MiB, stacks %.1f MiB, goroutines %v",
		f.kept, f.rss, f.anon, f.file, f.heap, f.stack, f.goroutines)
}

// readMemory reads p's RSS from /proc and its Go figures from /metrics.
func readMemory(p *devenv.Process, kept int) (memoryFigures, error) {
	f := memoryFigures{kept: kept}
	pid := p.Cmd.Process.Pid
	var err error
	for field, v := range map[string]*float64{"VmRSS": &f.rss, "RssAnon": &f.anon, "RssFile": &f.file} {
		var e error
		*v, e = devenv.StatusMiB(pid, field)
		err = errors.Join(err, e)
	}
	m, e := p.Metrics()
	if err = errors.Join(err, e); err != nil {
		return f, fmt.Errorf("memory at %d kept: %w", kept, err)
	}
	f.heap = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
	f.stack = m["go_memstats_stack_inuse_bytes"] / (1 << 20)
	f.goroutines = m["go_goroutines"]
	return f, nil
}

// ready reports whether p's /readyz answers ok: every running watch listed.
func ready(p *devenv.Process) bool {
	resp, err := http.Get(p.HealthURL + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitLeader watches the reconciler's Lease until it has a holder.
func (b *reconcileBench) waitLeader(ctx context.Context, namespace, leaseName string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	held := func(obj any) bool {
		l, ok := obj.(*coordinationv1.Lease)
		return ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	}
	lw := cache.NewListWatchFromClient(b.core.CoordinationV1().RESTClient(), "leases", namespace,
		fields.OneTermEqualSelector("metadata.name", leaseName))
	_, err := watchtools.UntilWithSync(ctx, lw, &coordinationv1.Lease{}, func(s cache.Store) (bool, error) {
		return slices.ContainsFunc(s.List(), held), nil
	}, func(e watch.Event) (bool, error) {
		return e.Type != watch.Deleted && held(e.Object), nil
	})
	if err != nil {
		return fmt.Errorf("leader election: Lease %s/%s has no holder: %w", namespace, leaseName, err)
	}
	return nil
}

// kubeAPIRequests returns the requests p has sent, from its
// kmshealth_kube_api_requests_total, by verb and resource.
func kubeAPIRequests(p *devenv.Process) (requestCounts, error) {
	samples, err := p.Samples()
	if err != nil {
		return nil, err
	}
	return countRequests(samples, "kmshealth_kube_api_requests_total"), nil
}

// binaryAndControlPlane builds the provider binary into a scratch
// directory and starts a control plane, for the benches that run the
// binary as a process; cleanup stops and removes both.
func binaryAndControlPlane(ctx context.Context) (bin string, env *testenv.Env, cleanup func(), err error) {
	return prebuiltOrBuild(ctx, "")
}

// prebuiltOrBuild is binaryAndControlPlane running prebuilt when set.
func prebuiltOrBuild(ctx context.Context, prebuilt string) (bin string, env *testenv.Env, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "kmshealth-bench-")
	if err != nil {
		return "", nil, nil, err
	}
	if prebuilt != "" {
		bin, err = filepath.Abs(prebuilt)
	} else {
		bin, err = devenv.BuildProvider(ctx, dir, "bench")
	}
	if err == nil {
		env, err = testenv.Start(ctx)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, nil, err
	}
	return bin, env, func() { env.Stop(); _ = os.RemoveAll(dir) }, nil
}
