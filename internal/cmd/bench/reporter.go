package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const reporterUsage = "reporter [-plugins=2] [-intervals=3] [-tags=reportonly,grpcnotrace] [-compare]   (root, Linux)"

// reporterTags is the reporter's build in the image (internal/cmd/image).
const reporterTags = "reportonly,grpcnotrace"

// reporterOptions are the flags of the reporter subcommand.
type reporterOptions struct {
	plugins, intervals int
	tags               string
	compare            bool
}

func parseReporterFlags(args []string) (reporterOptions, error) {
	var o reporterOptions
	fs := flag.NewFlagSet("reporter", flag.ContinueOnError)
	fs.IntVar(&o.plugins, "plugins", 2, "KMS v2 plugins the reporter probes")
	fs.IntVar(&o.intervals, "intervals", 3, "reporter intervals counted (at the minimum --interval of 5s): one tick at start, one per interval")
	fs.StringVar(&o.tags, "tags", reporterTags, `build tags of the binary measured: the default is the image's reporter build, "incluster" the image's other binary, "" the provider's release binary`)
	fs.BoolVar(&o.compare, "compare", false, `also measure the provider build ("") and the in-cluster build ("incluster"), in the same run on the same API server`)
	if err := parseFlags(fs, args, reporterUsage); err != nil {
		return o, err
	}
	return o, atLeast1(intFlag{"plugins", o.plugins}, intFlag{"intervals", o.intervals})
}

// run measures one `report` process of the binary built with -tags, as the
// DaemonSet runs it (secure /metrics, scraped with a token): its memory
// (VmRSS, RssAnon, RssFile of /proc/<pid>/status), the binary's size and
// its API requests per interval; with -compare, the same for the other
// builds, one after the other.
func (o reporterOptions) run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "kh-bench-reporter-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	_, _ = fmt.Fprintf(out, "Reporter benchmark: %d CPUs, %s, %s\n\n", goruntime.NumCPU(), goruntime.Version(), time.Now().UTC().Format(time.RFC3339))
	builds := []string{o.tags}
	if o.compare {
		builds = []string{"", "incluster", reporterTags}
		if !slices.Contains(builds, o.tags) {
			builds = append(builds, o.tags)
		}
	}
	bins := make([]string, len(builds))
	for i, tags := range builds {
		if bins[i], err = buildBinary(ctx, filepath.Join(dir, fmt.Sprintf("build-%d", i)), tags); err != nil {
			return err
		}
	}
	env, err := testenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Stop()
	cfg := env.RESTConfig()
	cl := install.Clients{Core: kubernetes.NewForConfigOrDie(cfg), Dynamic: dynamic.NewForConfigOrDie(cfg)}
	c := reporterinstall.DefaultConfig("kube-system", "reporterbench")
	if err := reporterinstall.InstallCRD(ctx, cl, c); err != nil {
		return err
	}
	if err := reporterinstall.CreateTarget(ctx, cl, c); err != nil {
		return err
	}
	for i, tags := range builds {
		st, err := os.Stat(bins[i])
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(out, "binary -tags %q: %.1f MiB (CGO_ENABLED=0 -trimpath -ldflags \"-s -w\")\n", tags, float64(st.Size())/(1<<20))
		m, err := measureReporter(ctx, bins[i], env, filepath.Join(dir, fmt.Sprintf("sockets-%d", i)), o.plugins, o.intervals, true)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(out, m)
	}
	return nil
}

// buildBinary builds the provider's main package with tags (static, as
// the image's binary and the release archives are built).
func buildBinary(ctx context.Context, dir, tags string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "terraform-provider-kmshealth")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", tags, "-ldflags", "-s -w -X main.version=bench", "-o", bin, ".")
	cmd.Dir = devenv.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags %q: %w\n%s", tags, err, out)
	}
	return bin, nil
}

// measureReporter runs one `report` process of bin probing plugins real KMS
// v2 plugins for intervals intervals (at the minimum --interval), and
// returns what it cost: API requests per tick and the process's memory.
// With secure, /metrics is served as the DaemonSet serves it (HTTPS,
// TokenReview + SubjectAccessReview) and scraped with env's admin token.
func measureReporter(ctx context.Context, bin string, env *testenv.Env, dir string, plugins, intervals int, secure bool) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var args []string
	for i := 1; i <= plugins; i++ {
		p, err := kmstest.Start(filepath.Join(dir, fmt.Sprintf("kms-%d.sock", i)), "kek")
		if err != nil {
			return "", err
		}
		defer p.Stop()
		args = append(args, fmt.Sprintf("--kms-socket=unix:///var/run/kmsplugin/kms-%d.sock", i))
	}
	args = append(args, "--kubeconfig="+env.Kubeconfig, "--node-name=bench-node", "--interval="+interval.String(),
		"--read-timeout=2s", "--write-timeout=3s", fmt.Sprintf("--metrics-secure=%t", secure))
	var log devenv.SyncBuffer
	start := time.Now()
	p, err := devenv.StartReport(ctx, bin, &log, dir, args...)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, log.String())
	}
	defer p.Stop()
	if secure {
		p.MetricsURL = strings.Replace(p.MetricsURL, "http://", "https://", 1)
		p.MetricsToken = env.Token
	}
	// The reporter ticks at start and then once per interval (plus jitter):
	// wait until it has ticked through the intervals.
	const writes = "kmshealth_reporter_writes_total"
	want := float64(intervals + 1)
	if err := waitMetrics(ctx, p, fmt.Sprintf("%s (ok + dropped) = %v", writes, want), interval/10, time.Duration(intervals+2)*interval*2,
		func(m map[string]float64) bool {
			return m[writes+`{result="ok"}`]+m[writes+`{result="dropped"}`] >= want
		}); err != nil {
		return "", fmt.Errorf("%w\n%s", err, log.String())
	}
	window := time.Since(start)
	samples, err := p.Samples()
	if err != nil {
		return "", err
	}
	ok := sum(samples, writes, map[string]string{"result": "ok"})
	ticks := ok + sum(samples, writes, map[string]string{"result": "dropped"})
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
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "one reporter process, %d plugins, --interval=%s, --metrics-secure=%t, %.0f ticks (%.0f written) in %s\n",
		plugins, interval, secure, ticks, ok, window.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "    API requests per interval: %.2f PATCH (%.0f PATCH / %.0f ticks); other requests: %.0f\n", patches/max(ticks, 1), patches, ticks, others)
	fmt.Fprintf(&b, "    reporter RSS: %s\n", rss)
	return b.String(), nil
}
