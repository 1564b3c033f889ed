package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

const peerUsage = "peer [-counts=1,200] [-rounds=3] [-corruptions=30] [-bin=path] [-base=path]   (builds tools/install.sh cainjector on first use)"

// cert-manager's annotations: the APIService names its CA Secret, and the
// Secret allows being injected from directly (cainjector refuses a Secret
// without it that no Certificate owns).
const (
	injectFromSecretAnnotation = "cert-manager.io/inject-ca-from-secret"
	allowDirectInjection       = "cert-manager.io/allow-direct-injection"
	cainjectorLease            = "cert-manager-cainjector-leader-election"
)

// peerOptions are the flags of the peer subcommand.
type peerOptions struct {
	counts      []int // kept APIServices, each measured in turn
	rounds      int   // rounds per side and count, alternating ours and theirs
	corruptions int   // timed restores per round
	// bin is our binary built beforehand (e.g. with -tags incluster, as the
	// image's reconciler is); empty builds this checkout's provider binary.
	bin string
	// base, when set, is another build of ours (e.g. main's) run as a
	// third side in the same rotation: a before/after in one run.
	base string
}

func parsePeerFlags(args []string) (peerOptions, error) {
	var o peerOptions
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	counts := fs.String("counts", "1,200", "comma-separated numbers of kept APIServices, ascending")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per side and count (ours, theirs, ours, …)")
	fs.IntVar(&o.corruptions, "corruptions", 30, "timed restores per round")
	fs.StringVar(&o.bin, "bin", "", "our binary built beforehand (e.g. go build -tags incluster, as the image runs it; default: build this checkout's provider)")
	fs.StringVar(&o.base, "base", "", "another build of ours (e.g. main's, -tags incluster) run as a third side, alternating base, ours, cainjector: a before/after in one run")
	if err := parseFlags(fs, args, peerUsage); err != nil {
		return o, err
	}
	for c := range strings.SplitSeq(*counts, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(c, &n); err != nil {
			return o, fmt.Errorf("-counts: %q is not a number: %w", c, err)
		}
		o.counts = append(o.counts, n)
	}
	return o, o.Validate()
}

// Validate runs before anything starts, so bad flags fail in milliseconds.
func (o peerOptions) Validate() error {
	err := atLeast1(intFlag{"rounds", o.rounds}, intFlag{"corruptions", o.corruptions})
	if len(o.counts) == 0 {
		err = errors.Join(err, errors.New("-counts is empty: want e.g. 1,200"))
	}
	if o.base != "" {
		if _, statErr := os.Stat(o.base); statErr != nil {
			err = errors.Join(err, fmt.Errorf("-base: %w: want a build of ours, e.g. go build -tags incluster -o /tmp/base . in another checkout", statErr))
		}
	}
	for i, n := range o.counts {
		if n < 1 || n > 2000 {
			err = errors.Join(err, fmt.Errorf("-counts: %d: want 1..2000", n))
		}
		if i > 0 && n <= o.counts[i-1] {
			err = errors.Join(err, fmt.Errorf("-counts: %d after %d: want ascending (objects are only added)", n, o.counts[i-1]))
		}
	}
	return err
}

// side is one of the two injectors: how to start it on the kept objects
// and how to know it has finished with a restore.
type side struct {
	name  string
	start func(ctx context.Context, n int) (*devenv.Process, error)
	// settled returns, once the side has counted the restore it just made,
	// so the next corruption finds it idle.
	settled func(ctx context.Context, p *devenv.Process) (func() error, error)
}

// peerResult is one side's figures at one count.
type peerResult struct {
	restores              devenv.Latencies
	roundP50              []time.Duration
	vmRSS, anon, fileBack []float64
}

type peerBench struct {
	o          peerOptions
	rb         *reconcileBench // the control plane, clients and our binary
	cainjector string
	logDir     string
	bundles    [][]byte // bundles[i] is kept APIService i's CA
}

// run compares our reconciler with cert-manager's cainjector on the same
// API server doing the same work: n aggregated APIServices, each taking
// its caBundle from its own Secret (ours through the record, cainjector
// through cert-manager.io/inject-ca-from-secret on the same objects).
//
// Restored means the good CA is back in the caBundle (see timeRestores for
// why not "the caBundle is the good CA again").
//
// The two run one at a time, never side by side: on the same objects they
// would race to restore the same corruption, and on different objects
// cainjector (which watches every APIService and the metadata of every
// Secret in the cluster) would also hold ours in its caches. For each
// count, rounds alternate ours, theirs, ours, …; each round starts the
// process, waits until it leads and has reconciled every kept APIService,
// times -corruptions restores (from the corrupting write's response to
// the watch event that shows the good CA back) and then reads its RSS.
// Before the first count's rounds, writeFloor times each side's write
// alone.
func (o peerOptions) run(ctx context.Context, out io.Writer) error {
	load := loadAverage()
	peerLogf("building (first use) or finding cert-manager's cainjector: tools/install.sh cainjector")
	cainjector, err := devenv.Tool("cainjector")
	if err != nil {
		return fmt.Errorf("cert-manager's cainjector: %w", err)
	}
	bin, env, cleanup, err := prebuiltOrBuild(ctx, o.bin)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg := env.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	rb := &reconcileBench{env: env, core: kubernetes.NewForConfigOrDie(cfg), agg: aggregator.NewForConfigOrDie(cfg), bin: bin}
	// The processes' logs outlive the control plane's scratch directory,
	// for a failed run to be read.
	logDir, err := os.MkdirTemp("", "kmshealth-bench-peer-")
	if err != nil {
		return fmt.Errorf("create log directory: %w", err)
	}
	peerLogf("peer: logs of both sides in %s", logDir)
	b := &peerBench{o: o, rb: rb, cainjector: cainjector, logDir: logDir}
	version, err := rb.core.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("read kube-apiserver version: %w", err)
	}
	_, _ = fmt.Fprintf(out, "ours vs cert-manager's cainjector (%s), same API server, same objects, one at a time: kube-apiserver %s, %d CPUs, %s, load average %s at start\n",
		filepath.Base(filepath.Dir(cainjector)), version.GitVersion, runtime.NumCPU(), runtime.Version(), load)

	sides := []side{
		{name: "ours", start: b.startOurs("ours", rb.bin), settled: b.oursSettled},
		{name: "cainjector", start: b.startCainjector, settled: b.cainjectorSettled},
	}
	if o.base != "" {
		base, err := filepath.Abs(o.base)
		if err != nil {
			return fmt.Errorf("-base: %w", err)
		}
		sides = append([]side{{name: "base", start: b.startOurs("base", base), settled: b.oursSettled}}, sides...)
	}
	for i, n := range o.counts {
		if err := b.keep(ctx, n); err != nil {
			return err
		}
		if i == 0 {
			if err := b.writeFloor(ctx, out); err != nil {
				return err
			}
		}
		results := map[string]*peerResult{}
		for r := range len(sides) * o.rounds {
			s := sides[r%len(sides)]
			peerLogf("peer: %d kept APIServices, round %d of %d: %s", n, r/len(sides)+1, o.rounds, s.name)
			if results[s.name] == nil {
				results[s.name] = &peerResult{}
			}
			if err := b.round(ctx, s, n, results[s.name]); err != nil {
				return fmt.Errorf("%s, %d kept APIServices: %w (logs: %s)", s.name, n, err, logDir)
			}
		}
		if err := printPeer(out, n, o, results["ours"], results["cainjector"], loadAverage()); err != nil {
			return err
		}
		if base := results["base"]; base != nil {
			if err := printBase(out, n, base, results["ours"], results["cainjector"]); err != nil {
				return err
			}
		}
	}
	return nil
}

// peerLogf reports progress on stderr; the figures go to out.
func peerLogf(format string, args ...any) {
	_, _ = fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// keep makes sure APIServices 0..n-1 exist, each with its own CA Secret,
// annotated for cainjector and kept by ours (our source annotation and the
// record listing every one).
func (b *peerBench) keep(ctx context.Context, n int) error {
	sources := make(map[string]cabundle.Source, n)
	port := int32(443)
	for i := range n {
		name := fmt.Sprintf("p%03d", i)
		src := cabundle.Source{Kind: cabundle.KindSecret, Namespace: reconcileNamespace, Name: name + "-ca", Key: "ca.crt"}
		apiservice := "v1." + name + ".bench.example.com"
		sources[apiservice] = src
		if i < len(b.bundles) {
			continue
		}
		bundle := newCA(name + " CA")
		b.bundles = append(b.bundles, bundle)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: src.Name, Annotations: map[string]string{allowDirectInjection: "true"}},
			Data:       map[string][]byte{"ca.crt": bundle},
		}
		if _, err := b.rb.core.CoreV1().Secrets(src.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Secret %s/%s: %w", src.Namespace, src.Name, err)
		}
		group := name + ".bench.example.com"
		live, err := b.rb.agg.ApiregistrationV1().APIServices().Create(ctx, &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: apiservice, Annotations: map[string]string{injectFromSecretAnnotation: src.Namespace + "/" + src.Name}},
			Spec: apiregv1.APIServiceSpec{Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
				Service: &apiregv1.ServiceReference{Namespace: "default", Name: name, Port: &port}},
		}, metav1.CreateOptions{FieldManager: "installer"})
		if err != nil {
			return fmt.Errorf("create APIService %s: %w", apiservice, err)
		}
		if _, _, err := cabundle.Ensure(ctx, b.rb.agg.ApiregistrationV1(), live, bundle, src, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager}); err != nil {
			return fmt.Errorf("apply the bundle of %s: %w", apiservice, err)
		}
	}
	return b.rb.record(ctx, sources)
}

// round runs one side for one round and adds its figures to res.
func (b *peerBench) round(ctx context.Context, s side, n int, res *peerResult) error {
	p, err := s.start(ctx, n)
	if err != nil {
		return err
	}
	defer p.Stop()
	settled, err := s.settled(ctx, p)
	if err != nil {
		return err
	}
	lat, err := b.timeRestores(ctx, "v1.p000.bench.example.com", b.bundles[0], settled)
	if err != nil {
		return err
	}
	res.restores = append(res.restores, lat...)
	res.roundP50 = append(res.roundP50, lat.Percentile(50))
	pid := p.Cmd.Process.Pid
	for _, f := range []struct {
		field string
		into  *[]float64
	}{{"VmRSS", &res.vmRSS}, {"RssAnon", &res.anon}, {"RssFile", &res.fileBack}} {
		v, err := devenv.StatusMiB(pid, f.field)
		if err != nil {
			return fmt.Errorf("read %s of %s: %w", f.field, s.name, err)
		}
		*f.into = append(*f.into, v)
	}
	return nil
}

// timeRestores overwrites name's caBundle with a stale CA
// b.o.corruptions times, by Update under another field manager, and times
// each restore: from the corrupting write's response to the watch event
// whose caBundle holds the good certificate again. "Holds", not "is":
// cainjector v1.21 merges the CA it injects into what it finds (its
// CAInjectorMerging gate, GA and on), so after a corruption it writes
// stale + good, where ours writes good alone. settled runs after each
// restore, before the next corruption.
func (b *peerBench) timeRestores(ctx context.Context, name string, good []byte, settled func() error) (devenv.Latencies, error) {
	want, err := certificatesDER(good)
	if err != nil {
		return nil, fmt.Errorf("the good bundle of %s: %w", name, err)
	}
	if len(want) != 1 {
		return nil, fmt.Errorf("the good bundle of %s: %d certificates, want one", name, len(want))
	}
	holds := func(s *apiregv1.APIService) bool {
		got, _ := certificatesDER(s.Spec.CABundle)
		return slices.ContainsFunc(got, func(d []byte) bool { return bytes.Equal(d, want[0]) })
	}
	return timeRestores(ctx, b.rb.agg.ApiregistrationV1().APIServices(), name, b.o.corruptions, holds, settled)
}

// writeFloor times the write each side restores with, alone, with no
// injector running: after each corrupting Update, ours (a forced
// server-side apply of the caBundle and our source annotation as
// kmshealth, through cabundle.Apply, what our reconciler sends) or
// cainjector's (a forced server-side apply as cainjector of its apply
// object: name and spec.caBundle, the bundle it found with the good CA
// appended, as cainjector v1.21's Reconcile sends with
// client.ForceOwnership), alternating one by one so the host's noise
// falls on both alike. A restore cannot be faster than its write: the
// ratio of the two is the part of the restore ratio the API server
// decides, the rest is each side's reaction.
func (b *peerBench) writeFloor(ctx context.Context, out io.Writer) error {
	apis := b.rb.agg.ApiregistrationV1().APIServices()
	name, good := "v1.p000.bench.example.com", b.bundles[0]
	stale := newCA("stale")
	n := b.o.rounds * b.o.corruptions
	var ours, theirs devenv.Latencies
	for i := range 2 * n {
		svc, err := corrupt(ctx, apis, name, stale)
		if err != nil {
			return err
		}
		if i%2 == 0 {
			want := cabundle.DesiredFor(svc, good, cabundle.Source{Kind: cabundle.KindSecret, Namespace: reconcileNamespace, Name: "p000-ca", Key: "ca.crt"})
			start := time.Now()
			if _, err := cabundle.Apply(ctx, b.rb.agg.ApiregistrationV1(), want, cabundle.ApplyOptions{FieldManager: cabundle.DefaultFieldManager, Force: true}); err != nil {
				return fmt.Errorf("apply the bundle of %s: %w", name, err)
			}
			ours = append(ours, time.Since(start))
			continue
		}
		body, err := cainjectorApplyBody(name, append(slices.Clip(svc.Spec.CABundle), good...))
		if err != nil {
			return err
		}
		start := time.Now()
		force := true
		if _, err := apis.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "cainjector", Force: &force}); err != nil {
			return fmt.Errorf("apply APIService %s as cainjector: %w", name, err)
		}
		theirs = append(theirs, time.Since(start))
	}
	_, _ = fmt.Fprintf(out, "\nthe write alone, no injector running: %d corruptions each, alternating one by one (both a forced server-side apply: ours of the good bundle and our annotation, cainjector's of the found bundle with the good CA appended)\n", n)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "\tours\tcainjector\tours/cainjector")
	for _, p := range []int{50, 99} {
		x, y := ours.Percentile(p), theirs.Percentile(p)
		_, _ = fmt.Fprintf(w, "write p%d\t%s\t%s\t%.2f\n", p, devenv.Millis(x), devenv.Millis(y), float64(x)/float64(y))
	}
	return w.Flush()
}

// cainjectorApplyBody is the apply configuration cainjector v1.21 sends for
// an APIService (its apiServiceTarget.AsApplyObject): type, name and
// spec.caBundle, nothing else.
func cainjectorApplyBody(name string, bundle []byte) ([]byte, error) {
	type spec struct {
		CABundle []byte `json:"caBundle,omitempty"`
	}
	type meta struct {
		Name string `json:"name"`
	}
	return json.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   meta   `json:"metadata"`
		Spec       spec   `json:"spec"`
	}{apiregv1.SchemeGroupVersion.String(), "APIService", meta{name}, spec{bundle}})
}

// certificatesDER returns the DER of every CERTIFICATE block in bundle.
func certificatesDER(bundle []byte) ([][]byte, error) {
	var out [][]byte
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			out = append(out, block.Bytes)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no certificate")
	}
	return out, nil
}

// startOurs returns the start of a build of ours (bin, logged as name):
// it runs bin in reconcile mode as bench reconcile does and waits until
// it leads and has reconciled every kept APIService.
func (b *peerBench) startOurs(name, bin string) func(ctx context.Context, n int) (*devenv.Process, error) {
	return func(ctx context.Context, n int) (*devenv.Process, error) {
		return b.startReconcile(ctx, name, bin, n)
	}
}

func (b *peerBench) startReconcile(ctx context.Context, name, bin string, n int) (*devenv.Process, error) {
	logFile, err := os.OpenFile(filepath.Join(b.logDir, fmt.Sprintf("%s-%d.log", name, n)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	p, err := devenv.StartReconcile(ctx, bin, logFile, b.rb.env.Token,
		"--kubeconfig="+b.rb.env.Kubeconfig, "--namespace="+reconcileNamespace, "--record-configmap="+recordName,
		"--leader-elect=true", "--leader-elect-lease-name="+leaseName)
	if err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	if err := b.rb.waitLeader(ctx, reconcileNamespace, leaseName); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	what := fmt.Sprintf("first pass: in_sync + written reconciles ≥ %d, /readyz ok", n)
	err = waitMetrics(ctx, p, what, 100*time.Millisecond, 60*time.Second, func(m map[string]float64) bool {
		return m[inSyncSeries]+m[writtenSeries] >= float64(n) && ready(p)
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	return p, nil
}

// oursSettled reads our reconciler's corrections counter now and returns
// a wait for it to count one more restore each time it is called.
func (b *peerBench) oursSettled(ctx context.Context, p *devenv.Process) (func() error, error) {
	corrections, err := p.Metric(correctionsSeries)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", correctionsSeries, err)
	}
	return func() error {
		corrections++
		want := corrections
		return waitMetrics(ctx, p, fmt.Sprintf("%s = %v", correctionsSeries, want), 20*time.Millisecond, 10*time.Second,
			func(m map[string]float64) bool { return m[correctionsSeries] >= want })
	}, nil
}

// startCainjector runs cainjector (APIService injector only, Secret and
// kubeconfig sources; no Certificate source, the test API server has no
// cert-manager CRDs) with leader election on a Lease and its metrics on
// loopback, and waits until it leads and has reconciled every kept
// APIService.
func (b *peerBench) startCainjector(ctx context.Context, n int) (*devenv.Process, error) {
	logFile, err := os.OpenFile(filepath.Join(b.logDir, fmt.Sprintf("cainjector-%d.log", n)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.cainjector, "-kubeconfig="+b.rb.env.Kubeconfig,
		"-leader-elect=true", "-leader-election-namespace="+reconcileNamespace,
		"-metrics-listen-address="+addr, "-enable-certificates-data-source=false",
		"-enable-apiservices-injectable=true", "-enable-webhooks-injectable=false", "-enable-customresourcedefinitions-injectable=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p, err := devenv.StartCommand(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", b.cainjector, err)
	}
	p.MetricsURL = "http://" + addr + "/metrics"
	if err := b.rb.waitLeader(ctx, reconcileNamespace, cainjectorLease); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	// controller-runtime names the For(&APIService{}) controller and its
	// queue after the kind.
	what := fmt.Sprintf("first pass: ≥ %d apiservice reconciles, queue empty", n)
	err = waitMetrics(ctx, p, what, 100*time.Millisecond, 60*time.Second, func(m map[string]float64) bool {
		return cainjectorReconciles(m) >= float64(n) && cainjectorIdle(m)
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	return p, nil
}

// cainjectorSettled reads cainjector's reconcile counter now and returns
// a wait, each time it is called, for the two reconciles a corruption
// causes (the restore, then the no-op one its own write's event triggers)
// and an empty queue.
func (b *peerBench) cainjectorSettled(ctx context.Context, p *devenv.Process) (func() error, error) {
	m, err := p.Metrics()
	if err != nil {
		return nil, fmt.Errorf("scrape cainjector: %w", err)
	}
	reconciles := cainjectorReconciles(m)
	return func() error {
		reconciles += 2
		want := reconciles
		return waitMetrics(ctx, p, fmt.Sprintf("cainjector: %v apiservice reconciles, queue empty", want), 20*time.Millisecond, 10*time.Second,
			func(m map[string]float64) bool { return cainjectorReconciles(m) >= want && cainjectorIdle(m) })
	}, nil
}

// cainjectorReconciles sums controller-runtime's reconcile counter of the
// APIService controller over its results.
func cainjectorReconciles(m map[string]float64) float64 {
	return sumSeries(m, "controller_runtime_reconcile_total", `controller="apiservice"`)
}

// cainjectorIdle reports an empty APIService queue and no reconcile
// running.
func cainjectorIdle(m map[string]float64) bool {
	return sumSeries(m, "workqueue_depth", `name="apiservice"`) == 0 &&
		sumSeries(m, "controller_runtime_active_workers", `controller="apiservice"`) == 0
}

// sumSeries sums every series of metric name whose labels include label.
func sumSeries(m map[string]float64, name, label string) float64 {
	var sum float64
	for k, v := range m {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, label) {
			sum += v
		}
	}
	return sum
}

// loopbackAddr is a free TCP address on loopback.
func loopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free loopback port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// printPeer prints both sides' figures at one count and ours/theirs.
func printPeer(out io.Writer, n int, o peerOptions, ours, theirs *peerResult, load string) error {
	_, _ = fmt.Fprintf(out, "\n%d kept APIService(s), each with its own Secret; %d rounds per side, %d restores each (load average %s at the end)\n", n, o.rounds, o.corruptions, load)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "\tours\tcainjector\tours/cainjector")
	mib := func(label string, a, b []float64) {
		x, y := median(a), median(b)
		_, _ = fmt.Fprintf(w, "%s (median of rounds)\t%.1f MiB\t%.1f MiB\t%.2f\n", label, x, y, x/y)
	}
	mib("VmRSS", ours.vmRSS, theirs.vmRSS)
	mib("RssAnon", ours.anon, theirs.anon)
	mib("RssFile", ours.fileBack, theirs.fileBack)
	ms := func(label string, p int) {
		x, y := ours.restores.Percentile(p), theirs.restores.Percentile(p)
		_, _ = fmt.Fprintf(w, "restore %s (%d restores)\t%s\t%s\t%.2f\n", label, len(ours.restores), devenv.Millis(x), devenv.Millis(y), float64(x)/float64(y))
	}
	ms("p50", 50)
	ms("p99", 99)
	_, _ = fmt.Fprintf(w, "restore p50 by round\t%s\t%s\t\n", millisList(ours.roundP50), millisList(theirs.roundP50))
	return w.Flush()
}

// printBase prints the base build's figures (-base) beside ours at one
// count: ours/base is the before/after of a change, measured in the same
// rotation as cainjector.
func printBase(out io.Writer, n int, base, ours, theirs *peerResult) error {
	_, _ = fmt.Fprintf(out, "\n%d kept: base (-base) in the same rotation\n", n)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "\tbase\tours\tours/base\tbase/cainjector")
	mib := func(label string, a, b, c []float64) {
		x, y, z := median(a), median(b), median(c)
		_, _ = fmt.Fprintf(w, "%s (median of rounds)\t%.1f MiB\t%.1f MiB\t%.2f\t%.2f\n", label, x, y, y/x, x/z)
	}
	mib("VmRSS", base.vmRSS, ours.vmRSS, theirs.vmRSS)
	mib("RssAnon", base.anon, ours.anon, theirs.anon)
	ms := func(label string, p int) {
		x, y, z := base.restores.Percentile(p), ours.restores.Percentile(p), theirs.restores.Percentile(p)
		_, _ = fmt.Fprintf(w, "restore %s (%d restores)\t%s\t%s\t%.2f\t%.2f\n", label, len(base.restores), devenv.Millis(x), devenv.Millis(y), float64(y)/float64(x), float64(x)/float64(z))
	}
	ms("p50", 50)
	ms("p99", 99)
	_, _ = fmt.Fprintf(w, "restore p50 by round\t%s\t%s\t\t\n", millisList(base.roundP50), millisList(ours.roundP50))
	return w.Flush()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func millisList(d []time.Duration) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = devenv.Millis(v)
	}
	return strings.Join(parts, " ")
}
