package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const planUsage = "plan [-resources=50] [-runs=7] [-cli=terraform,tofu] [-reference=true]"

// planOptions are the flags of the plan subcommand.
type planOptions struct {
	resources int
	runs      int
	clis      []string
	// reference also times as many kubectl_manifest APIServices
	// (gavinbunney/kubectl) in the same loop, alternating with ours.
	reference bool
}

func parsePlanFlags(args []string) (planOptions, error) {
	var o planOptions
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.IntVar(&o.resources, "resources", 50, "number of kmshealth_apiservice_cabundle resources")
	fs.IntVar(&o.runs, "runs", 7, "timed plans per configuration")
	cli := fs.String("cli", "terraform,tofu", "comma-separated CLIs to run: terraform, tofu")
	fs.BoolVar(&o.reference, "reference", true, "also plan as many kubectl_manifest APIServices (gavinbunney/kubectl, tools/install.sh terraform-provider-kubectl), alternating with ours")
	if err := parseFlags(fs, args, planUsage); err != nil {
		return o, err
	}
	for c := range strings.SplitSeq(*cli, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.clis = append(o.clis, c)
		}
	}
	return o, o.Validate()
}

// Validate runs before anything starts, so bad flags fail in milliseconds.
func (o planOptions) Validate() error {
	if o.resources < 1 || o.resources > 1000 {
		return fmt.Errorf("-resources=%d: want 1..1000", o.resources)
	}
	if o.runs < 1 {
		return fmt.Errorf("-runs=%d: want at least 1", o.runs)
	}
	if len(o.clis) == 0 {
		return errors.New("-cli is empty: want terraform, tofu or both")
	}
	for _, c := range o.clis {
		if c != "terraform" && c != "tofu" {
			return fmt.Errorf("-cli: unknown CLI %q: want terraform or tofu", c)
		}
	}
	return nil
}

// row is one line of the result table.
type row struct {
	cli       string // e.g. "terraform 1.5.7"
	kind      string // the resource type planned, "" for the baseline
	resources int
	times     devenv.Latencies
	cpu       devenv.Latencies // CPU time of the CLI and its provider processes, per plan
	requests  string
}

// planBench holds what every CLI's measurement shares.
type planBench struct {
	o           planOptions
	env         *testenv.Env
	work        string // temporary root: provider binary and working directories
	providerDir string
	kubectlDir  string   // holds terraform-provider-kubectl, for the reference row
	bundles     []string // one CA PEM per resource
	log         io.Writer
}

// run measures the provider the way a user feels it, as the wall time of
// real Terraform and OpenTofu commands against the real test control plane.
//
// It creates -resources aggregated APIServices, applies one
// kmshealth_apiservice_cabundle per APIService (one resource block each,
// one CA per resource), then times -runs no-op `plan`s after one untimed
// warm-up. Each plan must be empty: a diff right after apply would be a bug.
// As a baseline it also times a plan of a configuration with the provider
// block and no resources, which is the CLI's and the provider's start-up.
// For one timed plan of each configuration it counts the requests the API
// server served, from its apiserver_request_total metric.
func (o planOptions) run(ctx context.Context, out io.Writer) error {
	b := &planBench{o: o, log: os.Stderr}
	load := loadAverage() // before we add our own
	b.logf("starting etcd, kube-apiserver and the KMS v2 plugin")
	env, err := testenv.Start(ctx)
	if err != nil {
		return fmt.Errorf("start test control plane: %w", err)
	}
	defer env.Stop()
	b.env = env
	server, err := env.Clientset().Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("read kube-apiserver version: %w", err)
	}

	b.logf("creating %d APIServices", o.resources)
	if err := b.createAPIServices(ctx); err != nil {
		return err
	}
	if b.work, err = os.MkdirTemp("", "kmshealth-bench-"); err != nil {
		return fmt.Errorf("create work directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(b.work) }()
	b.logf("building the provider")
	b.providerDir = filepath.Join(b.work, "bin")
	if _, err := devenv.BuildProvider(ctx, b.providerDir, "bench"); err != nil {
		return fmt.Errorf("build provider: %w", err)
	}
	if o.reference {
		b.logf("building (first use) or finding gavinbunney/kubectl: tools/install.sh terraform-provider-kubectl")
		kubectl, err := devenv.Tool("terraform-provider-kubectl")
		if err != nil {
			return fmt.Errorf("the reference provider (-reference=false leaves it out): %w", err)
		}
		b.kubectlDir = filepath.Dir(kubectl)
	}

	var rows []row
	for _, name := range o.clis {
		r, err := b.measureCLI(ctx, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, r...)
	}
	_, _ = fmt.Fprintf(out, "no-op plan, %d resources, %d runs (kube-apiserver %s, %s, %d CPUs, load average %s at start, %s at the end)\n",
		o.resources, o.runs, server.GitVersion, runtime.Version(), runtime.NumCPU(), load, loadAverage())
	return printTable(out, rows)
}

func (b *planBench) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// createAPIServices creates v1.g<i>.bench.example.com for every resource,
// pointing at a Service that need not exist (there is no kubelet), and one
// CA per resource. Everything goes when the control plane stops.
func (b *planBench) createAPIServices(ctx context.Context) error {
	agg, err := aggregator.NewForConfig(b.env.RESTConfig())
	if err != nil {
		return fmt.Errorf("aggregator client: %w", err)
	}
	port := int32(443)
	for i := range b.o.resources {
		group := fmt.Sprintf("g%d.bench.example.com", i)
		svc := &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: apiServiceName(i)},
			Spec: apiregv1.APIServiceSpec{
				Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
				Service: &apiregv1.ServiceReference{Namespace: "default", Name: fmt.Sprintf("api-g%d", i), Port: &port},
			},
		}
		if _, err := agg.ApiregistrationV1().APIServices().Create(ctx, svc, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
			return fmt.Errorf("create APIService %s: %w", svc.Name, err)
		}
		b.bundles = append(b.bundles, string(newCA(group+" CA")))
	}
	return nil
}

func apiServiceName(i int) string { return fmt.Sprintf("v1.g%d.bench.example.com", i) }

// measureCLI times the baseline (no resources) and the full configuration
// with one CLI, and with -reference the kubectl_manifest configuration in
// the same loop (ours, theirs, ours, …), and returns their rows.
func (b *planBench) measureCLI(ctx context.Context, name string) ([]row, error) {
	version, err := b.cliVersion(ctx, name)
	if err != nil {
		return nil, err
	}
	label := name + " " + version

	b.logf("%s: baseline, provider block and no resources", label)
	empty, err := b.newWorkdir(name, "empty", mainTF(b.env.Kubeconfig, nil))
	if err != nil {
		return nil, err
	}
	base, err := b.timePlans(ctx, empty)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	base[0].cli = label

	full, err := b.newWorkdir(name, "full", mainTF(b.env.Kubeconfig, b.bundles))
	if err != nil {
		return nil, err
	}
	full.kind, full.resources = "kmshealth_apiservice_cabundle", b.o.resources
	dirs := []*workdir{full}
	if b.o.reference {
		ref, err := b.newWorkdir(name, "kubectl", kubectlTF(b.env.Kubeconfig, b.bundles))
		if err != nil {
			return nil, err
		}
		ref.kind, ref.resources = "kubectl_manifest", b.o.resources
		dirs = append(dirs, ref)
	}
	for _, d := range dirs {
		b.logf("%s: apply %d %s (not timed)", label, d.resources, d.kind)
		if err := runCLI(ctx, d, 0, "apply", "-auto-approve", "-input=false"); err != nil {
			return nil, err
		}
	}
	b.logf("%s: %d no-op plans of each configuration, alternating", label, b.o.runs)
	rows, err := b.timePlans(ctx, dirs...)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].cli = label
	}
	for _, d := range dirs {
		b.logf("%s: destroy %s", label, d.kind)
		if err := runCLI(ctx, d, 0, "destroy", "-auto-approve", "-input=false"); err != nil {
			return nil, err
		}
	}
	return append(base, rows...), nil
}

// cliVersion returns the CLI's version number, e.g. "1.5.7".
func (b *planBench) cliVersion(ctx context.Context, name string) (string, error) {
	cli, err := b.newWorkdir(name, "version", mainTF(b.env.Kubeconfig, nil))
	if err != nil {
		return "", err
	}
	if err := runCLI(ctx, cli, 0, "version"); err != nil {
		return "", err
	}
	// First line: "Terraform v1.5.7" or "OpenTofu v1.12.6".
	first, _, _ := strings.Cut(cli.out.String(), "\n")
	_, v, ok := strings.Cut(first, " v")
	if !ok {
		return "", fmt.Errorf("%s version: unexpected output %q", name, first)
	}
	return strings.TrimSpace(v), nil
}

// workdir is a CLI set up to run in its own root module, with the output
// of its last command kept for error messages.
type workdir struct {
	*devenv.CLI
	out       *bytes.Buffer
	kind      string // resource type of its row, "" for none
	resources int
}

// newWorkdir writes root module main for CLI name into a fresh directory
// and returns the CLI set up to run there: our provider through
// devenv.NewCLI's dev_overrides and, with -reference, gavinbunney/kubectl
// beside it (no registry is reachable, so no `init` either).
func (b *planBench) newWorkdir(name, kind, main string) (*workdir, error) {
	dir := filepath.Join(b.work, name+"-"+kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create working directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o600); err != nil {
		return nil, fmt.Errorf("write main.tf: %w", err)
	}
	cli, err := devenv.NewCLI(name, dir, b.providerDir)
	if err != nil {
		return nil, fmt.Errorf("set up %s: %w", name, err)
	}
	if b.kubectlDir != "" {
		conf := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/kmshealth/kmshealth" = %[1]q
    "registry.opentofu.org/kmshealth/kmshealth" = %[1]q
    "registry.terraform.io/gavinbunney/kubectl" = %[2]q
    "registry.opentofu.org/gavinbunney/kubectl" = %[2]q
  }
  direct {}
}
`, b.providerDir, b.kubectlDir)
		if err := os.WriteFile(filepath.Join(dir, ".cli.tfrc"), []byte(conf), 0o600); err != nil {
			return nil, fmt.Errorf("write CLI configuration: %w", err)
		}
	}
	w := &workdir{CLI: cli, out: &bytes.Buffer{}}
	cli.Stdout = w.out
	return w, nil
}

// mainTF is a root module with one resource block per bundle, resource i
// owning the caBundle of APIService i. Separate blocks, not for_each, as in
// the kubectl_manifest reference.
func mainTF(kubeconfig string, bundles []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `terraform {
  required_providers {
    kmshealth = { source = "kmshealth/kmshealth" }
  }
}

provider "kmshealth" {
  config_path = %q
}
`, kubeconfig)
	for i, bundle := range bundles {
		fmt.Fprintf(&sb, "\nresource \"kmshealth_apiservice_cabundle\" \"r%d\" {\n  apiservice_name = %q\n  ca_bundle       = <<PEM\n%sPEM\n}\n",
			i, apiServiceName(i), bundle)
	}
	return sb.String()
}

// kubectlTF is the reference root module: one kubectl_manifest per bundle,
// each owning a whole APIService of its own (v1.k<i>.bench.example.com,
// the same spec as ours, its caBundle in the manifest), separate blocks.
func kubectlTF(kubeconfig string, bundles []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `terraform {
  required_providers {
    kubectl = { source = "gavinbunney/kubectl" }
  }
}

provider "kubectl" {
  config_path      = %q
  load_config_file = true
}
`, kubeconfig)
	for i, bundle := range bundles {
		fmt.Fprintf(&sb, `
resource "kubectl_manifest" "r%[1]d" {
  yaml_body = <<YAML
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.k%[1]d.bench.example.com
spec:
  group: k%[1]d.bench.example.com
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service:
    namespace: default
    name: api-k%[1]d
    port: 443
  caBundle: %[2]s
YAML
}
`, i, base64.StdEncoding.EncodeToString([]byte(bundle)))
	}
	return sb.String()
}

// timePlans runs one untimed warm-up plan in each of dirs, then b.o.runs
// timed rounds, each timing one plan in every dir in turn (alternating, so
// a change in the machine's load falls on all of them alike). Every plan
// must report no changes. The API server's request counters are read
// around each dir's first timed plan (outside the timed interval).
func (b *planBench) timePlans(ctx context.Context, dirs ...*workdir) ([]row, error) {
	args := []string{"plan", "-input=false", "-detailed-exitcode", "-lock=false"}
	rows := make([]row, len(dirs))
	for k, d := range dirs {
		rows[k].kind, rows[k].resources = d.kind, d.resources
		if err := runCLI(ctx, d, 0, args...); err != nil {
			return nil, err
		}
	}
	for i := range b.o.runs {
		for k, d := range dirs {
			var before requestCounts
			if i == 0 {
				var err error
				if before, err = b.scrape(ctx); err != nil {
					return nil, err
				}
			}
			cpu0, err := childrenCPU()
			if err != nil {
				return nil, err
			}
			start := time.Now()
			if err := runCLI(ctx, d, 0, args...); err != nil {
				return nil, err
			}
			rows[k].times = append(rows[k].times, time.Since(start))
			cpu1, err := childrenCPU()
			if err != nil {
				return nil, err
			}
			rows[k].cpu = append(rows[k].cpu, cpu1-cpu0)
			if i == 0 {
				after, err := b.scrape(ctx)
				if err != nil {
					return nil, err
				}
				rows[k].requests = after.sub(before).String()
			}
		}
	}
	return rows, nil
}

// runCLI runs the CLI and checks its exit code; on failure the error
// carries the end of the CLI's output.
func runCLI(ctx context.Context, cli *workdir, want int, args ...string) error {
	cli.out.Reset()
	code, err := cli.Run(ctx, args...)
	if err != nil {
		return err
	}
	if code != want {
		out := cli.out.String()
		if len(out) > 4000 {
			out = "…" + out[len(out)-4000:]
		}
		return fmt.Errorf("%s %s: exit code %d, want %d (2 means plan found changes right after apply: a bug); output:\n%s",
			cli.Name, strings.Join(args, " "), code, want, out)
	}
	return nil
}

// scrape reads the API server's request counters (apiserver_request_total).
func (b *planBench) scrape(ctx context.Context) (requestCounts, error) {
	body, err := b.env.Clientset().Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape kube-apiserver /metrics: %w", err)
	}
	samples, err := devenv.ParseSamples(body)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	return countRequests(samples, "apiserver_request_total"), nil
}

// childrenCPU is the user and system CPU time of this process's children
// that have ended and been waited for, with their own waited-for
// descendants: around one CLI command, the CLI's and its provider
// processes' CPU. Unlike wall time it does not grow with other work on a
// loaded machine (much), so it compares two providers more steadily.
func childrenCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// printTable prints min, p50 and max of every row's plans, in seconds,
// and for a kubectl_manifest row the ratio of our p50 (the row before it,
// timed in the same loop) to its p50.
func printTable(out io.Writer, rows []row) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "cli\tresources\tmin\tp50\tmax\tCPU p50\tAPI requests per plan")
	for _, r := range rows {
		lo, mid, hi := r.times.Percentile(0), r.times.Percentile(50), r.times.Percentile(100)
		what := "0"
		if r.kind != "" {
			what = fmt.Sprintf("%d %s", r.resources, r.kind)
		}
		cpu := "n/a"
		if len(r.cpu) > 0 {
			cpu = fmt.Sprintf("%.2fs", r.cpu.Percentile(50).Seconds())
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%.2fs\t%.2fs\t%.2fs\t%s\t%s\n", r.cli, what, lo.Seconds(), mid.Seconds(), hi.Seconds(), cpu, r.requests)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for i, r := range rows {
		if r.kind == "kubectl_manifest" && i > 0 {
			ours := rows[i-1]
			_, _ = fmt.Fprintf(out, "%s: %d %s / %d kubectl_manifest, alternating runs: wall p50 %.2f, CPU p50 %.2f\n",
				r.cli, ours.resources, ours.kind, r.resources,
				float64(ours.times.Percentile(50))/float64(r.times.Percentile(50)), float64(ours.cpu.Percentile(50))/float64(r.cpu.Percentile(50)))
		}
	}
	return nil
}

// loadAverage is the 1-minute load average, to tell a quiet machine's
// figures from a busy one's; "n/a" where /proc/loadavg does not exist.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	return strings.Fields(string(b) + " n/a")[0]
}
