// Command bench is `make bench`: it measures the provider and the in-cluster
// modes on real parts (the real test control plane of package testenv, the
// real binary run as a process) and prints figures, not pass/fail;
// BENCHMARKS.md records them.
//
//	go run ./internal/cmd/bench plan      [-resources=50] [-runs=7] [-cli=terraform,tofu]
//	go run ./internal/cmd/bench reconcile [-corruptions=50] [-apiservices=200] [-idle=60s] [-unrelated=5000]
//	go run ./internal/cmd/bench kms       [-plugins=3] [-cycles=500] [-intervals=6] [-nodes=100] [-rounds=200] [-flips=20]
//	go run ./internal/cmd/bench tlsprofile [-changes=50]
//	go run ./internal/cmd/bench pod       [-corruptions=50] [-apiservices=200]   (root, Linux)
//	go run ./internal/cmd/bench reporter  [-plugins=2] [-intervals=3] [-tags=reportonly,grpcnotrace] [-compare]   (root, Linux)
//	go run ./internal/cmd/bench peer      [-counts=1,200] [-rounds=3] [-corruptions=30] [-bin=path]
//	go run ./internal/cmd/bench reencrypt [-secrets=10000] [-concurrency=8] [-page=500]
//	go run ./internal/cmd/bench all
//
// plan (plan.go) times no-op Terraform and OpenTofu plans; reconcile
// (reconcile.go) the reconcile mode's drift restore, idle requests and
// memory; kms (kms.go) the KMS health probe, reporter, aggregator and data
// source; tlsprofile (tlsprofile.go) a cluster TLS profile change reaching
// a rollout target; pod (pod.go) the reconciler as a pod on the test bed's
// node; reporter (reporter.go) one `report` process of the image's
// reporter build (or of other builds), as the DaemonSet runs it: memory,
// binary size and API requests per interval; peer (peer.go) ours beside
// cert-manager's cainjector on the same objects: RSS and restore latency;
// all runs plan, reconcile,
// tlsprofile and kms in turn with their default flags, each on its own
// control plane. Every subcommand reads Prometheus metrics with
// devenv's one parser and summarises timings with devenv.Latencies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

const usage = `usage: go run ./internal/cmd/bench <subcommand> [flags]
  ` + planUsage + `
  ` + reconcileUsage + `
  ` + kmsUsage + `
  ` + podUsage + `
  ` + tlsProfileUsage + `
  ` + reporterUsage + `
  ` + peerUsage + `
  ` + reencryptUsage + `
  all  (plan, reconcile, tlsprofile and kms in turn, default flags)`

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	run, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		cancel()
		os.Exit(1)
	}
}

// runner is one subcommand with its flags parsed and validated.
type runner func(ctx context.Context, out io.Writer) error

// subcommands parse their flags (validated before anything starts, so bad
// flags fail in milliseconds) and return what to run.
var subcommands = map[string]func(args []string) (runner, error){
	"plan": func(args []string) (runner, error) {
		o, err := parsePlanFlags(args)
		return o.run, err
	},
	"reconcile": func(args []string) (runner, error) {
		o, err := parseReconcileFlags(args)
		return o.run, err
	},
	"kms": func(args []string) (runner, error) {
		o, err := parseKMSFlags(args)
		return o.run, err
	},
	"tlsprofile": func(args []string) (runner, error) {
		o, err := parseTLSProfileFlags(args)
		return o.run, err
	},
	"pod": func(args []string) (runner, error) {
		o, err := parsePodFlags(args)
		return o.run, err
	},
	"reporter": func(args []string) (runner, error) {
		o, err := parseReporterFlags(args)
		return o.run, err
	},
	"peer": func(args []string) (runner, error) {
		o, err := parsePeerFlags(args)
		return o.run, err
	},
	"reencrypt": func(args []string) (runner, error) {
		o, err := parseReencryptFlags(args)
		return o.run, err
	},
	"all": parseAll,
}

// parseArgs picks the subcommand named by args[0] and parses the rest as
// its flags; anything unknown is an error.
func parseArgs(args []string) (runner, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("missing subcommand\n%s", usage)
	}
	parse, ok := subcommands[args[0]]
	if !ok {
		return nil, fmt.Errorf("unknown subcommand %q\n%s", args[0], usage)
	}
	return parse(args[1:])
}

// parseAll takes no flags and runs every subcommand with its defaults.
func parseAll(args []string) (runner, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("all takes no flags or arguments, got %q\n%s", args, usage)
	}
	plan, err1 := parsePlanFlags(nil)
	reconcile, err2 := parseReconcileFlags(nil)
	kms, err3 := parseKMSFlags(nil)
	tls, err4 := parseTLSProfileFlags(nil)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	runs := []runner{plan.run, reconcile.run, tls.run, kms.run}
	return func(ctx context.Context, out io.Writer) error {
		for i, r := range runs {
			if i > 0 {
				_, _ = fmt.Fprintln(out)
			}
			if err := r(ctx, out); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// parseFlags parses args into fs: unknown flags and positional arguments
// are errors, which carry the subcommand's usage line.
func parseFlags(fs *flag.FlagSet, args []string, usage string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\nusage: go run ./internal/cmd/bench %s", err, usage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q\nusage: go run ./internal/cmd/bench %s", fs.Args(), usage)
	}
	return nil
}

// intFlag is an integer flag's name and value, for atLeast1.
type intFlag struct {
	name  string
	value int
}

// atLeast1 reports every integer flag that is not positive.
func atLeast1(flags ...intFlag) error {
	var errs []error
	for _, f := range flags {
		if f.value < 1 {
			errs = append(errs, fmt.Errorf("-%s=%d: want at least 1", f.name, f.value))
		}
	}
	return errors.Join(errs...)
}

// waitMetrics scrapes p (once per every, for at most timeout) until done
// holds for its metrics: a process offers no watch of its own metrics. On
// timeout the error shows the kmshealth_* series of the last scrape.
func waitMetrics(ctx context.Context, p *devenv.Process, what string, every, timeout time.Duration, done func(map[string]float64) bool) error {
	var last map[string]float64
	var scrapeErr error
	err := wait.PollUntilContextTimeout(ctx, every, timeout, true, func(context.Context) (bool, error) {
		m, err := p.Metrics() // an error is retried: the next scrape may succeed
		if scrapeErr = err; err == nil {
			last = m
		}
		return err == nil && done(m), nil
	})
	if err == nil {
		return nil
	}
	if scrapeErr != nil {
		return fmt.Errorf("%s: not within %s: %w (last scrape: %w)", what, timeout, err, scrapeErr)
	}
	var series []string
	for k, v := range last {
		if strings.HasPrefix(k, "kmshealth_") {
			series = append(series, fmt.Sprintf("%s %v", k, v))
		}
	}
	slices.Sort(series)
	return fmt.Errorf("%s: not within %s: %w; kmshealth series: %s", what, timeout, err, strings.Join(series, ", "))
}

// sleep waits for d unless ctx ends first: a measurement window or a
// settling pause, never in place of waiting on something observable.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newCA returns a fresh self-signed CA certificate in PEM, valid for a year.
func newCA(cn string) []byte { return testpki.MustCertPEM(cn, testpki.Options{}) }
