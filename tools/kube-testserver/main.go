// Command kube-testserver is the test bed's cluster: a real etcd, a real
// kube-apiserver and, for the node tests, the real kubelet,
// kube-controller-manager, kube-scheduler and kube-proxy, in one binary built
// from the Go module proxy so tests and the demo need nothing but Go.
//
//	kube-testserver etcd --data-dir=DIR --listen-client-url=URL --listen-peer-url=URL
//	kube-testserver kube-apiserver|kubelet|kube-controller-manager|kube-scheduler|kube-proxy [flags]
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // CronJob time zones, as in kube-controller-manager's main

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// commands are the Kubernetes components this binary can be, each exactly
// as its own main builds it. The node's (kubelet, kube-proxy) are added on
// Linux only, the one place the test bed runs a node (node_linux.go).
var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-testserver etcd|kube-apiserver|kubelet|kube-controller-manager|kube-scheduler|kube-proxy [flags]")
		os.Exit(2)
	}
	mode, args := os.Args[1], os.Args[2:]
	if mode == "etcd" {
		if err := runEtcd(args); err != nil {
			fmt.Fprintln(os.Stderr, "etcd:", err)
			os.Exit(1)
		}
		return
	}
	newCommand, ok := commands[mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown mode %q: want etcd, kube-apiserver, kubelet, kube-controller-manager, kube-scheduler or kube-proxy\n", mode)
		os.Exit(2)
	}
	cmd := newCommand()
	cmd.SetArgs(args)
	os.Exit(cli.Run(cmd))
}

func runEtcd(args []string) error {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory (required)")
	clientURL := fs.String("listen-client-url", "http://127.0.0.1:2379", "client URL to listen on")
	peerURL := fs.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dataDir == "" {
		return fmt.Errorf("--data-dir is required")
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		return fmt.Errorf("--listen-client-url: %w", err)
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		return fmt.Errorf("--listen-peer-url: %w", err)
	}

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.Name = "kmshealth-test"
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true // test data only; fsync dominates latency on shared disks

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	<-e.Server.ReadyNotify()
	fmt.Fprintln(os.Stderr, "etcd ready on", client.String())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		fmt.Fprintln(os.Stderr, "etcd: stopping on", s)
		return nil
	case err := <-e.Err():
		return err
	}
}
