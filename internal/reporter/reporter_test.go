package reporter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

var (
	env    *testenv.Env
	binary string // the real provider binary, run in report and reconcile mode
)

func TestMain(m *testing.M) {
	testenv.MainWithProvider(m, func(e *testenv.Env, bin string) { env, binary = e, bin })
}

// interval is the shortest the reporter accepts; staleness is 4 × it.
const (
	interval  = 5 * time.Second
	staleness = 4 * interval
)

// node is one simulated control-plane node: a Node object, a socket folder
// with one KMS v2 plugin (kms-1.sock) and a reporter process that sees the
// folder as /var/run/kmsplugin.
type node struct {
	name     string
	dir      string
	plugin   *kmstest.Plugin
	reporter *devenv.Process
	log      *devenv.SyncBuffer
}

func dyn(t testing.TB) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// installCRD applies the KMSHealth CRD, waits until it is established and
// creates the target object.
func installCRD(t *testing.T, target kmshealth.Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := install.Clients{Core: env.Clientset(), Dynamic: dyn(t)}
	c := reporterinstall.DefaultConfig("kube-system", "reporter-test")
	c.Target = target
	if err := reporterinstall.InstallCRD(ctx, cl, c); err != nil {
		t.Fatal(err)
	}
	if err := reporterinstall.CreateTarget(ctx, cl, c); err != nil {
		t.Fatal(err)
	}
}

func startNode(t *testing.T, name, kek string, target kmshealth.Target, extraArgs ...string) *node {
	t.Helper()
	ctx := context.Background()
	_, err := env.Clientset().CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "kh-"+name+"-") // not t.TempDir: unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // last: after the processes below stopped
	n := &node{name: name, dir: dir, log: &devenv.SyncBuffer{}}
	if n.plugin, err = kmstest.Start(filepath.Join(dir, "kms-1.sock"), kek); err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--kubeconfig=" + env.Kubeconfig, "--node-name=" + name,
		"--kms-socket=unix:///var/run/kmsplugin/kms-1.sock",
		"--interval=" + interval.String(), "--read-timeout=2s", "--write-timeout=3s",
		"--target=" + target.String(),
	}, extraArgs...)
	n.reporter, err = devenv.StartReport(ctx, binary, n.log, dir, args...)
	if err != nil {
		t.Fatalf("start reporter %s: %v\n%s", name, err, n.log)
	}
	t.Cleanup(func() {
		n.reporter.Stop()
		n.plugin.Stop()
		if t.Failed() {
			t.Logf("reporter %s log:\n%s", name, n.log)
		}
	})
	return n
}

// waitFor watches the target until pred holds for its conditions.
func waitFor(t *testing.T, target kmshealth.Target, timeout time.Duration, what string, pred func(h kmshealth.Health, conds map[string]metav1.Condition) bool) map[string]metav1.Condition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last map[string]metav1.Condition
	err := kube.WaitFor(ctx, dyn(t).Resource(target.GVR()), target.Name, func(u *unstructured.Unstructured) (bool, error) {
		conds := kmshealth.Conditions(u)
		last = map[string]metav1.Condition{}
		for _, c := range conds {
			last[c.Type] = c
		}
		h := kmshealth.Evaluate(conds, kmshealth.EvalOptions{Now: time.Now(), MaxStaleness: staleness})
		return pred(h, last), nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v\nlast conditions: %s", what, timeout, err, describe(last))
	}
	return last
}

func describe(conds map[string]metav1.Condition) string {
	var b strings.Builder
	for _, c := range conds {
		fmt.Fprintf(&b, "\n  %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func condType(n *node) string { return kmshealth.ReporterConditionType(n.name) }

// TestReportersAndAggregator runs three reporter "nodes" and the reconciler
// as processes of the real binary against the test API server and walks
// through what a platform team sees: healthy, a plugin turning unhealthy, a
// plugin down, a key rotation in progress, a reporter gone stale, a Node
// removed, and an API server restart.
func TestReportersAndAggregator(t *testing.T) {
	ctx := context.Background()
	target := kmshealth.DefaultTarget()
	installCRD(t, target)
	recLog := &devenv.SyncBuffer{}
	rec, err := devenv.StartReconcile(ctx, binary, recLog, env.Token, "--kubeconfig="+env.Kubeconfig, "--leader-elect=false",
		"--kms-max-staleness="+staleness.String())
	if err != nil {
		t.Fatalf("start reconciler: %v\n%s", err, recLog)
	}
	t.Cleanup(func() {
		rec.Stop()
		if t.Failed() {
			t.Logf("reconciler log:\n%s", recLog)
		}
	})
	nodes := []*node{startNode(t, "cp-1", "kek-a", target), startNode(t, "cp-2", "kek-a", target), startNode(t, "cp-3", "kek-a", target)}
	healthy := func(h kmshealth.Health, c map[string]metav1.Condition) bool {
		return h.RotationReady && len(h.Nodes) == len(nodes) && c[kmshealth.DegradedCondition].Status == metav1.ConditionFalse
	}

	start := time.Now()
	c := waitFor(t, target, 30*time.Second, "three healthy nodes, KMSPluginsDegraded=False", healthy)
	t.Logf("all nodes healthy and rolled up %s after the reporters started", time.Since(start).Round(time.Millisecond))
	if got := c[kmshealth.DegradedCondition].Reason; got != kmshealth.ReasonAsExpected {
		t.Errorf("KMSPluginsDegraded reason %q, want AsExpected", got)
	}

	t.Run("unhealthy plugin", func(t *testing.T) {
		start := time.Now()
		nodes[1].plugin.SetHealthz("kms backend unreachable")
		c := waitFor(t, target, interval+interval/2+3*time.Second, "cp-2 False/Unhealthy within one interval", func(_ kmshealth.Health, c map[string]metav1.Condition) bool {
			return c[condType(nodes[1])].Status == metav1.ConditionFalse && c[kmshealth.DegradedCondition].Status == metav1.ConditionTrue
		})
		t.Logf("unhealthy plugin reported and rolled up after %s", time.Since(start).Round(time.Millisecond))
		if got := c[condType(nodes[1])].Reason; got != kmshealth.ReasonUnhealthy {
			t.Errorf("cp-2 reason %q, want Unhealthy", got)
		}
		d := c[kmshealth.DegradedCondition]
		if d.Reason != kmshealth.ReasonUnhealthy || !strings.Contains(d.Message, "cp-2") || !strings.Contains(d.Message, "kms backend unreachable") {
			t.Errorf("KMSPluginsDegraded %s/%s %q: want Unhealthy naming cp-2 and the healthz", d.Status, d.Reason, d.Message)
		}
		nodes[1].plugin.SetHealthz("ok")
		waitFor(t, target, 2*interval, "cp-2 healthy again", healthy)
	})

	t.Run("plugin down", func(t *testing.T) {
		sock := nodes[2].plugin.Socket()
		nodes[2].plugin.Stop()
		c := waitFor(t, target, 2*interval, "cp-3 Unknown/Error, rolled up", func(_ kmshealth.Health, c map[string]metav1.Condition) bool {
			return c[condType(nodes[2])].Status == metav1.ConditionUnknown && c[kmshealth.DegradedCondition].Status == metav1.ConditionTrue
		})
		cond := c[condType(nodes[2])]
		plugins, err := kmshealth.ParseMessage(cond.Message)
		if err != nil {
			t.Fatal(err)
		}
		if cond.Reason != kmshealth.ReasonError || len(plugins) != 1 || plugins[0].Status != kmshealth.StatusError || plugins[0].Detail == "" || plugins[0].KEKID != "" {
			t.Errorf("cp-3 condition %s %q: want Error with the RPC error in detail and no kekID", cond.Reason, cond.Message)
		}
		if d := c[kmshealth.DegradedCondition]; d.Status != metav1.ConditionTrue || d.Reason != kmshealth.ReasonError {
			t.Errorf("KMSPluginsDegraded %s/%s, want True/Error", d.Status, d.Reason)
		}
		if nodes[2].plugin, err = kmstest.Start(sock, "kek-a"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, target, 2*interval, "cp-3 healthy again", healthy)
	})

	t.Run("key rotation in progress", func(t *testing.T) {
		nodes[0].plugin.SetKeyID("kek-b")
		waitFor(t, target, 2*interval, "rotation_ready false while cp-1 alone has kek-b", func(h kmshealth.Health, _ map[string]metav1.Condition) bool {
			return h.Healthy && !h.RotationReady && strings.Contains(strings.Join(h.Problems, ";"), "keyID 1")
		})
		for _, n := range nodes[1:] {
			n.plugin.SetKeyID("kek-b")
		}
		waitFor(t, target, 2*interval, "rotation_ready once all agree on kek-b", func(h kmshealth.Health, c map[string]metav1.Condition) bool {
			return healthy(h, c) && h.ActiveKEKIDs["1"] == "kek-b"
		})
	})

	t.Run("one write per node per interval", func(t *testing.T) {
		// A request is counted when it is sent and its write when the
		// response is in: read the figures between two writes, when every
		// PATCH sent has a result (ok or dropped). A PATCH without one
		// within a tick is a failure too.
		const (
			patchSeries = `kmshealth_kube_api_requests_total{resource="kmshealths",verb="PATCH"}`
			okSeries    = `kmshealth_reporter_writes_total{result="ok"}`
		)
		var m map[string]float64
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, interval, true, func(context.Context) (bool, error) {
			var err error
			if m, err = nodes[0].reporter.Metrics(); err != nil {
				return false, err
			}
			return m[patchSeries] == m[okSeries]+m[`kmshealth_reporter_writes_total{result="dropped"}`], nil
		})
		if err != nil {
			t.Fatalf("cp-1's metrics: want every PATCH sent to have a result (ok or dropped) within %s: %v (last scrape %v)", interval, err, m)
		}
		patches := m[patchSeries]
		writes := m[okSeries]
		var others float64
		for series, v := range m {
			if strings.HasPrefix(series, "kmshealth_kube_api_requests_total{") && !strings.Contains(series, `verb="PATCH"`) {
				others += v
			}
		}
		elapsed := time.Since(start)
		// Ticks run every interval plus up to 10% jitter plus the tick itself.
		lo, hi := float64(elapsed/(interval+interval/10+time.Second)), float64(elapsed/interval)+1
		t.Logf("reporter cp-1: %v PATCH, %v ok writes, %v other requests in %s", patches, writes, others, elapsed.Round(time.Second))
		if patches != writes || others != 0 || patches < lo || patches > hi {
			t.Errorf("want exactly one PATCH per tick (%v..%v) and no other request; got %v PATCH, %v writes, %v others", lo, hi, patches, writes, others)
		}
	})

	t.Run("reporter stops: stale", func(t *testing.T) {
		nodes[2].reporter.Stop()
		start := time.Now()
		c := waitFor(t, target, staleness+3*interval, "KMSPluginsDegraded True/Stale", func(_ kmshealth.Health, c map[string]metav1.Condition) bool {
			d := c[kmshealth.DegradedCondition]
			return d.Status == metav1.ConditionTrue && d.Reason == kmshealth.ReasonStale
		})
		t.Logf("stale after %s (max staleness %s)", time.Since(start).Round(time.Millisecond), staleness)
		if d := c[kmshealth.DegradedCondition]; !strings.Contains(d.Message, "cp-3") {
			t.Errorf("KMSPluginsDegraded message %q does not name cp-3", d.Message)
		}
	})

	t.Run("node deleted: its condition is removed", func(t *testing.T) {
		if err := env.Clientset().CoreV1().Nodes().Delete(ctx, "cp-3", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, target, 15*time.Second, "cp-3's condition gone, rollup healthy", func(h kmshealth.Health, c map[string]metav1.Condition) bool {
			_, present := c[condType(nodes[2])]
			return !present && len(h.Nodes) == 2 && c[kmshealth.DegradedCondition].Status == metav1.ConditionFalse
		})
		removed, err := rec.Metric("kmshealth_kms_orphan_conditions_removed_total")
		if err != nil || removed != 1 {
			t.Errorf("orphan counter %v (%v), want 1", removed, err)
		}
	})

	t.Run("API server restart", func(t *testing.T) {
		err := env.RestartAPIServer(ctx, func() { time.Sleep(2 * interval) })
		if err != nil {
			t.Fatal(err)
		}
		back := time.Now()
		for _, n := range nodes[:2] {
			if !n.reporter.Running() {
				t.Fatalf("reporter %s exited during the outage", n.name)
			}
		}
		waitFor(t, target, 3*interval, "fresh reports after the restart", func(h kmshealth.Health, c map[string]metav1.Condition) bool {
			if !h.Healthy || len(h.Nodes) != 2 {
				return false
			}
			for _, n := range h.Nodes {
				if n.LastChecked.Before(back.Add(-time.Second)) {
					return false
				}
			}
			return true
		})
		dropped, err := nodes[0].reporter.Metric(`kmshealth_reporter_writes_total{result="dropped"}`)
		if err != nil || dropped < 1 {
			t.Errorf("dropped writes during the outage: %v (%v), want at least 1", dropped, err)
		}
	})
}

// TestReporterMetricsNeedToken: the reporter's /metrics, as the installer
// turns it on, is served over HTTPS only to callers whose RBAC allows it.
func TestReporterMetricsNeedToken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plugin, err := kmstest.Start(filepath.Join(dir, "kms-1.sock"), "k-1")
	if err != nil {
		t.Fatal(err)
	}
	defer plugin.Stop()
	var log devenv.SyncBuffer
	p, err := devenv.StartReport(ctx, binary, &log, dir, "--kubeconfig="+env.Kubeconfig, "--node-name=metrics-1",
		"--kms-socket=unix:///var/run/kmsplugin/kms-1.sock", "--metrics-secure=true") // the last --metrics-secure wins
	if err != nil {
		t.Fatalf("start reporter: %v\n%s", err, log.String())
	}
	defer p.Stop()
	url := strings.Replace(p.MetricsURL, "http://", "https://", 1)
	// /metrics listens right after /healthz, which StartReport waited for.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, _, err := devenv.Scrape(url, "")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("/metrics not served over HTTPS: %v\n%s", err, log.String())
	}
	testenv.MetricsAccess(t, env.Clientset(), url, "reporter-metrics", "kmshealth_reporter_")
}
