package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const kmsUsage = "kms [-plugins=3] [-cycles=500] [-intervals=6] [-nodes=100] [-rounds=200] [-flips=20]"

// kmsOptions are the flags of the kms subcommand.
type kmsOptions struct {
	plugins, cycles, intervals, nodes, rounds, flips int
}

func parseKMSFlags(args []string) (kmsOptions, error) {
	var o kmsOptions
	fs := flag.NewFlagSet("kms", flag.ContinueOnError)
	fs.IntVar(&o.plugins, "plugins", 3, "KMS v2 plugins probed per cycle")
	fs.IntVar(&o.cycles, "cycles", 500, "probe cycles timed")
	fs.IntVar(&o.intervals, "intervals", 6, "reporter intervals counted (at the minimum --interval of 5s): one tick at start, one per interval")
	fs.IntVar(&o.nodes, "nodes", 100, "node conditions for the aggregator and data-source figures")
	fs.IntVar(&o.rounds, "rounds", 200, "repetitions of the in-process judgement and of the data-source read")
	fs.IntVar(&o.flips, "flips", 20, "unhealthy/healthy flips timed through the real aggregator")
	if err := parseFlags(fs, args, kmsUsage); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// Validate runs before anything starts, so bad flags fail in milliseconds.
func (o kmsOptions) Validate() error {
	return atLeast1(intFlag{"plugins", o.plugins}, intFlag{"cycles", o.cycles}, intFlag{"intervals", o.intervals},
		intFlag{"nodes", o.nodes}, intFlag{"rounds", o.rounds}, intFlag{"flips", o.flips})
}

type kmsBench struct {
	kmsOptions
	out io.Writer

	env    *testenv.Env
	core   kubernetes.Interface
	dyn    dynamic.Interface
	bin    string
	dir    string
	target kmshealth.Target
}

const interval = kmshealth.MinInterval

// run measures the KMS health pieces and prints figures (no pass/fail):
//
//	(a) probe-cycle latency: one concurrent Status probe of -plugins real
//	    KMS v2 plugins on unix sockets, repeated -cycles times;
//	(b) API requests of one `report` process of the real binary over
//	    -intervals intervals (writes per node per interval), and its RSS;
//	(c) aggregator: judging -nodes node conditions in process, and the
//	    real reconcile process's reaction time (one node turns unhealthy →
//	    KMSPluginsDegraded=True, and back) with -nodes nodes reporting;
//	(d) data-source read: what kmshealth_kms_plugin_health does per read
//	    (GET the target, parse and judge -nodes conditions).
func (o kmsOptions) run(ctx context.Context, out io.Writer) error {
	b := &kmsBench{kmsOptions: o, out: out}
	var err error
	if b.dir, err = os.MkdirTemp("", "kh-bench-"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(b.dir) }()
	b.printf("KMS health benchmark: %d CPUs, %s, %s\n\n", goruntime.NumCPU(), goruntime.Version(), time.Now().UTC().Format(time.RFC3339))

	if err := b.probeCycles(ctx); err != nil {
		return err
	}
	if b.bin, err = devenv.BuildProvider(ctx, b.dir, "bench"); err != nil {
		return err
	}
	if b.env, err = testenv.Start(ctx); err != nil {
		return err
	}
	defer b.env.Stop()
	cfg := b.env.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	b.core = kubernetes.NewForConfigOrDie(cfg)
	b.dyn = dynamic.NewForConfigOrDie(cfg)
	b.target = kmshealth.DefaultTarget()
	cl := install.Clients{Core: b.core, Dynamic: b.dyn}
	target := reporterinstall.DefaultConfig("kube-system", "kmsbench")
	if err := reporterinstall.InstallCRD(ctx, cl, target); err != nil {
		return err
	}
	if err := reporterinstall.CreateTarget(ctx, cl, target); err != nil {
		return err
	}
	if err := b.reporter(ctx); err != nil {
		return err
	}
	if err := b.aggregator(ctx); err != nil {
		return err
	}
	return b.dataSourceRead(ctx)
}

func (b *kmsBench) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(b.out, format, args...)
}

// (a) probe-cycle latency.
func (b *kmsBench) probeCycles(ctx context.Context) error {
	dir := filepath.Join(b.dir, "a")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for i := 1; i <= b.plugins; i++ {
		p, err := kmstest.Start(filepath.Join(dir, fmt.Sprintf("kms-%d.sock", i)), fmt.Sprintf("kek-%d", i))
		if err != nil {
			return err
		}
		defer p.Stop()
	}
	sockets, err := kmshealth.SocketsInDir(dir)
	if err != nil {
		return err
	}
	lat := make(devenv.Latencies, 0, b.cycles)
	for range b.cycles {
		start := time.Now()
		res := kmshealth.Probe(ctx, sockets, kmshealth.DefaultReadTimeout, time.Now)
		lat = append(lat, time.Since(start))
		for _, r := range res {
			if r.Plugin().Status != kmshealth.StatusHealthy {
				return fmt.Errorf("plugin %s: %s", r.Socket.KeyID, r.Plugin().Detail)
			}
		}
	}
	b.printf("(a) probe cycle, %d plugins probed concurrently (fresh gRPC connection each), %d cycles\n    %s\n\n", b.plugins, b.cycles, lat.Summary())
	return nil
}

// (b) one reporter process: requests per tick, and RSS.
func (b *kmsBench) reporter(ctx context.Context) error {
	dir := filepath.Join(b.dir, "b")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	var args []string
	for i := 1; i <= b.plugins; i++ {
		p, err := kmstest.Start(filepath.Join(dir, fmt.Sprintf("kms-%d.sock", i)), "kek")
		if err != nil {
			return err
		}
		defer p.Stop()
		args = append(args, fmt.Sprintf("--kms-socket=unix:///var/run/kmsplugin/kms-%d.sock", i))
	}
	var log devenv.SyncBuffer
	start := time.Now()
	p, err := devenv.StartReport(ctx, b.bin, &log, dir, append(args,
		"--kubeconfig="+b.env.Kubeconfig, "--node-name=bench-node", "--interval="+interval.String(),
		"--read-timeout=2s", "--write-timeout=3s")...)
	if err != nil {
		return err
	}
	defer p.Stop()
	// The reporter ticks at start and then once per interval (plus jitter):
	// wait until it has ticked through -intervals intervals.
	const writes = "kmshealth_reporter_writes_total"
	want := float64(b.intervals + 1)
	ticked := func(m map[string]float64) float64 {
		return m[writes+`{result="ok"}`] + m[writes+`{result="dropped"}`]
	}
	if err := waitMetrics(ctx, p, fmt.Sprintf("%s (ok + dropped) = %v", writes, want), interval/10, time.Duration(b.intervals+2)*interval*2,
		func(m map[string]float64) bool { return ticked(m) >= want }); err != nil {
		return fmt.Errorf("%w\n%s", err, log.String())
	}
	window := time.Since(start)
	samples, err := p.Samples()
	if err != nil {
		return err
	}
	ticks := sum(samples, writes, map[string]string{"result": "ok"}) + sum(samples, writes, map[string]string{"result": "dropped"})
	var patches, others float64
	for k, v := range countRequests(samples, "kmshealth_kube_api_requests_total") {
		if k.verb == "PATCH" {
			patches += v
		} else {
			others += v
		}
	}
	rss, err := devenv.RSS(p.Cmd.Process.Pid)
	if err != nil {
		return err
	}
	b.printf("(b) one reporter process, %d plugins, --interval=%s, %.0f ticks in %s\n", b.plugins, interval, ticks, window.Round(100*time.Millisecond))
	b.printf("    API writes per node per interval: %.2f (%.0f PATCH / %.0f ticks); other requests: %.0f\n", patches/max(ticks, 1), patches, ticks, others)
	b.printf("    reporter RSS: %s\n\n", rss)
	return nil
}

// nodeName is the i-th simulated node.
func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

func (b *kmsBench) writeNode(ctx context.Context, i int, status kmshealth.PluginStatus) error {
	now := time.Now()
	p := kmshealth.Plugin{KeyID: "1", KEKID: "kek-1", Status: status, LastChecked: now.UTC().Truncate(time.Second)}
	if status != kmshealth.StatusHealthy {
		p.Detail = `healthz "down", want "ok"`
	}
	builder := kmshealth.ConditionBuilder{Node: nodeName(i)}
	return kmshealth.ApplyCondition(ctx, b.dyn, b.target, kmshealth.Kind, builder.Build([]kmshealth.Plugin{p}, now), kmshealth.ReporterFieldManager(nodeName(i)))
}

// (c) aggregator.
func (b *kmsBench) aggregator(ctx context.Context) error {
	for i := range b.nodes {
		_, err := b.core.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: nodeName(i), Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""},
		}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if err := b.writeNode(ctx, i, kmshealth.StatusHealthy); err != nil {
			return err
		}
	}
	obj, err := kmshealth.GetTarget(ctx, b.dyn, b.target)
	if err != nil {
		return err
	}
	conds := kmshealth.Conditions(obj)
	judge := make(devenv.Latencies, 0, b.rounds)
	for range b.rounds {
		start := time.Now()
		h := kmshealth.Evaluate(conds, kmshealth.EvalOptions{Now: time.Now(), MaxStaleness: 4 * kmshealth.DefaultInterval})
		_ = kmshealth.DegradedConditionFor(h, nil, time.Now())
		judge = append(judge, time.Since(start))
	}
	b.printf("(c) aggregator, %d nodes' conditions (plus the bench reporter's)\n    judge in process (parse, evaluate, build KMSPluginsDegraded), %d rounds: %s\n", len(conds), b.rounds, judge.Summary())

	var log devenv.SyncBuffer
	rec, err := devenv.StartReconcile(ctx, b.bin, &log, b.env.Token, "--kubeconfig="+b.env.Kubeconfig, "--leader-elect=false", "--record-configmap=")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, log.String())
	}
	defer rec.Stop()
	if err := b.waitDegraded(ctx, metav1.ConditionFalse); err != nil {
		return err
	}
	react := make(devenv.Latencies, 0, 2*b.flips)
	for k := range b.flips {
		i := k % b.nodes
		for _, step := range []struct {
			status kmshealth.PluginStatus
			want   metav1.ConditionStatus
		}{{kmshealth.StatusUnhealthy, metav1.ConditionTrue}, {kmshealth.StatusHealthy, metav1.ConditionFalse}} {
			start := time.Now()
			if err := b.writeNode(ctx, i, step.status); err != nil {
				return err
			}
			if err := b.waitDegraded(ctx, step.want); err != nil {
				return err
			}
			react = append(react, time.Since(start))
		}
	}
	b.printf("    real reconcile process, %d flips of one node among %d (condition write → KMSPluginsDegraded updated, seen by watch): %s\n", len(react), b.nodes, react.Summary())
	rss, err := devenv.RSS(rec.Cmd.Process.Pid)
	if err != nil {
		return err
	}
	b.printf("    reconcile process RSS with %d Nodes: %s\n\n", b.nodes, rss)
	return nil
}

// waitDegraded watches the target until KMSPluginsDegraded has status want.
func (b *kmsBench) waitDegraded(ctx context.Context, want metav1.ConditionStatus) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return kmshealth.WaitForCondition(ctx, b.dyn, b.target, kmshealth.DegradedCondition, want)
}

// (d) data-source read.
func (b *kmsBench) dataSourceRead(ctx context.Context) error {
	lat := make(devenv.Latencies, 0, b.rounds)
	var h kmshealth.Health
	for range b.rounds {
		start := time.Now()
		obj, err := kmshealth.GetTarget(ctx, b.dyn, b.target)
		if err != nil {
			return err
		}
		h = kmshealth.Evaluate(kmshealth.Conditions(obj), kmshealth.EvalOptions{Now: time.Now(), MaxStaleness: 4 * kmshealth.DefaultInterval})
		lat = append(lat, time.Since(start))
	}
	b.printf("(d) data-source read (GET the target, parse and judge), %d nodes, %d reads: %s (healthy=%v, rotation_ready=%v)\n",
		len(h.Nodes), b.rounds, lat.Summary(), h.Healthy, h.RotationReady)
	return nil
}
