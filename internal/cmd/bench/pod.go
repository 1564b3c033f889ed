package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const podUsage = "pod [-corruptions=50] [-apiservices=200]   (root, Linux: runs on the test bed's node)"

// podNamespace is where the bench installs the reconciler pod.
const podNamespace = "kmshealth-bench"

type podOptions struct {
	corruptions int
	apiservices int
}

func parsePodFlags(args []string) (podOptions, error) {
	var o podOptions
	fs := flag.NewFlagSet("pod", flag.ContinueOnError)
	fs.IntVar(&o.corruptions, "corruptions", 50, "out-of-band corruptions to time")
	fs.IntVar(&o.apiservices, "apiservices", 200, "managed APIServices for the memory figures")
	if err := parseFlags(fs, args, podUsage); err != nil {
		return o, err
	}
	return o, atLeast1(intFlag{"corruptions", o.corruptions}, intFlag{"apiservices", o.apiservices})
}

// run measures the reconciler as it runs in production, a pod of the
// project's image on the test bed's real node, installed as
// kmshealth_reconciler installs it, and prints figures (no pass/fail):
//
//	(a) drift-restore latency over -corruptions out-of-band overwrites,
//	    the pod restoring;
//	(b) the pod's memory with -apiservices managed: its container cgroup's
//	    working set and its process's VmRSS;
//	(c) restore latency and VmRSS of the provider build of the same source
//	    run as a host process on the same APIServices, in the same run,
//	    once the pod is gone.
func (o podOptions) run(ctx context.Context, out io.Writer) error {
	// Runs the whole bench again inside the node's namespaces; only that
	// copy returns here.
	if err := testenv.Isolate(); err != nil {
		return err
	}
	env, err := testenv.StartForNode(ctx)
	if err != nil {
		return err
	}
	defer env.Stop()
	node, err := env.Node(ctx)
	if err != nil {
		return err
	}
	cfg := env.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	b := &reconcileBench{o: reconcileOptions{corruptions: o.corruptions, apiservices: o.apiservices}, env: env,
		core: kubernetes.NewForConfigOrDie(cfg), agg: aggregator.NewForConfigOrDie(cfg)}
	version, _ := b.core.Discovery().ServerVersion()
	_, _ = fmt.Fprintf(out, "pod benchmark: the reconciler as a pod of %s on a real kubelet (node Ready in %s), kube-apiserver %s, %d CPUs, %s, %s\n\n",
		node.Image, node.StartTime.Round(time.Second), version, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))

	good := newCA("good")
	names := make([]string, o.apiservices)
	sources := make(map[string]cabundle.Source, o.apiservices)
	for i := range names {
		name, src, err := b.managed(ctx, fmt.Sprintf("p%03d", i), good)
		if err != nil {
			return err
		}
		names[i], sources[name] = name, src
	}
	c := reconcilerinstall.Config{
		Namespace: podNamespace, Name: reconcilerinstall.DefaultName, CreateNamespace: true,
		Image: node.Image, Replicas: 1, CABundles: sources, Resources: reconcilerinstall.DefaultResources(),
	}
	clients := install.Clients{Core: b.core, Dynamic: dynamic.NewForConfigOrDie(cfg)}
	start := time.Now()
	if err := reconcilerinstall.Apply(ctx, clients, c); err != nil {
		return err
	}
	if err := reconcilerinstall.WaitForRollout(ctx, clients, c.Namespace, c.Name, nil); err != nil {
		return err
	}
	if err := b.waitLeader(ctx, c.Namespace, reconcilerinstall.LeaseName); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "installed with %d managed APIServices, pod Ready and leading in %s\n\n", o.apiservices, time.Since(start).Round(100*time.Millisecond))

	// (a) restore latency: the first corruption also proves the pod has
	// synced; it counts like the others.
	lat, err := b.timeRestores(ctx, names[0], good, func() error { return nil })
	if err != nil {
		return fmt.Errorf("%w; pod logs:\n%s", err, node.PodLogs(c.Namespace, "*"))
	}
	_, _ = fmt.Fprintf(out, "(a) drift restore by the pod, %d corruptions of one managed APIService (from the corrupting write's response to the watch event of the restored bundle)\n", len(lat))
	_, _ = fmt.Fprintf(out, "    %s\n\n", lat.Summary())

	// (b) memory, pod and host process.
	pods, err := b.core.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(c.SelectorLabels()).String()})
	if err != nil {
		return err
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning {
			pod = &pods.Items[i]
		}
	}
	if pod == nil {
		return fmt.Errorf("no running reconciler pod in %s", c.Namespace)
	}
	proc, err := node.ContainerProcess(ctx, pod, reconcilerinstall.ContainerName)
	if err != nil {
		return err
	}
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	_, _ = fmt.Fprintf(out, "(b) pod memory with %d managed APIServices: working set %.1f MiB (container cgroup: usage less inactive file), VmRSS %.1f MiB (the in-cluster build)\n\n",
		o.apiservices, mib(proc.WorkingSet), mib(proc.VmRSS))

	// (c) the same, the provider build of the same source as a host process
	// on the same APIServices, once the pod is gone.
	if err := reconcilerinstall.Delete(ctx, clients, c.Namespace, c.Name, false); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kmshealth-podbench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if b.bin, err = devenv.BuildProvider(ctx, dir, "bench"); err != nil {
		return err
	}
	if err := b.record(ctx, sources); err != nil {
		return err
	}
	p, err := b.start(ctx)
	if err != nil {
		return err
	}
	defer p.Stop()
	hostLat, err := b.restoreLatency(ctx, p, names[0], good)
	if err != nil {
		return err
	}
	hostRSS, err := devenv.StatusMiB(p.Cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "(c) the provider build as a host process, same APIServices, same run: restore %s; VmRSS %.1f MiB (pod/host VmRSS %.2f)\n",
		hostLat.Summary(), hostRSS, mib(proc.VmRSS)/hostRSS)
	return nil
}
