package reporter_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
)

// TestReporterStartsWithoutAPIServer runs the real binary against an API
// server address where nothing listens: it must start, stay healthy, keep
// probing its plugin and drop (not queue) each write.
func TestReporterStartsWithoutAPIServer(t *testing.T) {
	dir, err := os.MkdirTemp("", "kh-offline-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	plugin, err := kmstest.Start(filepath.Join(dir, "kms-1.sock"), "kek-a")
	if err != nil {
		t.Fatal(err)
	}
	defer plugin.Stop()

	// A port that was free a moment ago: connections are refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String()
	_ = l.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, deadAddr)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	var log devenv.SyncBuffer
	p, err := devenv.StartReport(context.Background(), binary, &log, dir,
		"--kubeconfig="+kubeconfig, "--node-name=offline-1",
		"--kms-socket=unix:///var/run/kmsplugin/kms-1.sock",
		"--interval=5s", "--read-timeout=2s", "--write-timeout=3s")
	if err != nil {
		t.Fatalf("start: %v\n%s", err, log.String())
	}
	defer p.Stop()
	// Two ticks: the first runs at start, the next after 5–5.5 s. Wait
	// until the second write has been dropped.
	var m map[string]float64
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("reporter exited without an API server:\n%s", log.String())
		}
		var err error
		m, err = p.Metrics()
		return err == nil && m[`kmshealth_reporter_writes_total{result="dropped"}`] >= 2, nil
	})
	if err != nil {
		t.Fatalf("two dropped writes: %v (metrics %v)", err, m)
	}
	dropped, ok := m[`kmshealth_reporter_writes_total{result="dropped"}`], m[`kmshealth_reporter_writes_total{result="ok"}`]
	if ok != 0 {
		t.Errorf("writes: %v dropped, %v ok; want none ok without an API server", dropped, ok)
	}
	if h := m[`kmshealth_reporter_plugin_healthy{key_id="1"}`]; h != 1 {
		t.Errorf("plugin_healthy = %v, want 1: probing must go on without the API server", h)
	}
	// One PATCH attempt per tick, each dropped: none queued or retried.
	if patches := m[`kmshealth_kube_api_requests_total{resource="kmshealths",verb="PATCH"}`]; patches != dropped {
		t.Errorf("%v PATCH attempts for %v dropped writes, want one each (no retries)", patches, dropped)
	}
}
