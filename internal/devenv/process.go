package devenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Process is a running `terraform-provider-kmshealth reconcile` or
// `report`, for the demo, the benchmarks and the integration tests.
type Process struct {
	Cmd        *exec.Cmd
	MetricsURL string // http(s)://127.0.0.1:<port>/metrics
	HealthURL  string // http://127.0.0.1:<port>
	// MetricsToken is the bearer token Metrics presents: the reconciler
	// serves /metrics only to callers RBAC allows (TokenReview +
	// SubjectAccessReview).
	MetricsToken string
	done         chan struct{}
}

// StartReconcile runs bin in reconcile mode with args plus metrics and
// health addresses on free loopback ports, writing its log to out, and
// returns once /readyz answers ok (caches synced). /metrics is served over
// HTTPS to token, as in a cluster.
func StartReconcile(ctx context.Context, bin string, out io.Writer, token string, args ...string) (*Process, error) {
	p, err := start(ctx, out, "/readyz", func(metrics, health string) []string {
		return append([]string{bin, "reconcile", "--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health}, args...)
	})
	if err != nil {
		return nil, err
	}
	p.MetricsURL = strings.Replace(p.MetricsURL, "http://", "https://", 1)
	p.MetricsToken = token
	// The metrics server starts after the health probes, once its
	// certificate is made; it offers no readiness of its own.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, _, err := Scrape(p.MetricsURL, "")
		return err == nil, nil
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("reconcile: /metrics not served within 30s: %w", err)
	}
	return p, nil
}

// StartReport runs bin in report mode as one control-plane node: in its own
// mount namespace with socketDir bind-mounted over /var/run/kmsplugin, so
// every node keeps the production socket paths (root on Linux required: see
// MountNamespaces). It returns once /healthz answers. /metrics is plain
// HTTP on loopback, for the tests, the bench and the demo to scrape without
// a token; a test that wants it secure passes --metrics-secure=true in
// args (the last one wins).
func StartReport(ctx context.Context, bin string, out io.Writer, socketDir string, args ...string) (*Process, error) {
	if err := os.MkdirAll("/var/run/kmsplugin", 0o755); err != nil {
		return nil, fmt.Errorf("mount point for the reporters' sockets: %w", err)
	}
	return start(ctx, out, "/healthz", func(metrics, health string) []string {
		return append([]string{"unshare", "--mount", "--propagation", "private", "--",
			"sh", "-c", `mount --bind "$0" /var/run/kmsplugin && exec "$@"`, socketDir,
			bin, "report", "--metrics-bind-address=" + metrics, "--metrics-secure=false", "--health-probe-bind-address=" + health}, args...)
	})
}

// StartReportInDir runs bin in report mode as one control-plane node that
// probes every kms-<keyID>.sock in socketDir (--socket-dir): no namespace,
// no root, on any OS. It returns once /healthz answers.
func StartReportInDir(ctx context.Context, bin string, out io.Writer, socketDir string, args ...string) (*Process, error) {
	return start(ctx, out, "/healthz", func(metrics, health string) []string {
		return append([]string{bin, "report", "--socket-dir=" + socketDir,
			"--metrics-bind-address=" + metrics, "--metrics-secure=false", "--health-probe-bind-address=" + health}, args...)
	})
}

// MountNamespaces reports whether StartReport can work here: Linux, root,
// and an `unshare --mount` that may bind-mount (a container without
// CAP_SYS_ADMIN is root but may not). When it cannot, why says what is
// missing, in words that fit "<why>, so no mount namespaces".
func MountNamespaces(ctx context.Context) (ok bool, why string) {
	if runtime.GOOS != "linux" {
		return false, "not Linux (" + runtime.GOOS + ")"
	}
	if uid := os.Geteuid(); uid != 0 {
		return false, fmt.Sprintf("not root (uid %d)", uid)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return false, "unshare not found in PATH"
	}
	// The probe binds a scratch directory over itself inside a private
	// namespace: the mount ends with the process and touches nothing else.
	dir, err := os.MkdirTemp("", "kmsh-ns-")
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = os.Remove(dir) }()
	out, err := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "--", "mount", "--bind", dir, dir).CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return false, fmt.Sprintf("unshare --mount failed (%s)", msg)
		}
		return false, fmt.Sprintf("unshare --mount failed (%v)", err)
	}
	return true, ""
}

func start(ctx context.Context, out io.Writer, readyPath string, argv func(metrics, health string) []string) (*Process, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	metrics, health := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	args := argv(metrics, health)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := StartCommand(cmd)
	if err != nil {
		return nil, err
	}
	p.MetricsURL, p.HealthURL = "http://"+metrics+"/metrics", "http://"+health
	// The process offers no watch for its own readiness.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.HealthURL + readyPath); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited: %s", args[0], cmd.ProcessState)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.Stop()
	return nil, fmt.Errorf("%s not ready within 60s", strings.Join(args, " "))
}

// StartCommand starts cmd as a Process, without waiting for it to be
// ready; Stop ends it. On Linux the process never outlives whoever started
// it (see ChildAttr).
func StartCommand(cmd *exec.Cmd) (*Process, error) {
	cmd.SysProcAttr = ChildAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Stop sends SIGTERM (the reconciler releases its Lease) and kills the
// process if it has not exited after 15 s.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Running reports whether the process is still alive.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// metricsClient trusts the self-signed certificate a mode makes for
// /metrics: tests and benchmarks on loopback only.
var metricsClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback, self-signed
}}

// Scrape fetches url with token (none when empty) and returns the HTTP
// status and body.
func Scrape(url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// Metrics returns every series on /metrics: name{labels} -> value, labels
// in the exposition's order (sorted by name).
func (p *Process) Metrics() (map[string]float64, error) {
	body, err := p.scrape()
	if err != nil {
		return nil, err
	}
	return ParseMetrics(body)
}

// Samples returns every series on /metrics with its labels apart, for
// callers that group series by a label's value.
func (p *Process) Samples() ([]Sample, error) {
	body, err := p.scrape()
	if err != nil {
		return nil, err
	}
	return ParseSamples(body)
}

func (p *Process) scrape() ([]byte, error) {
	code, body, err := Scrape(p.MetricsURL, p.MetricsToken)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", p.MetricsURL, code, bytes.TrimSpace(body))
	}
	return body, nil
}

// Metric returns one series (name plus labels exactly as exposed, e.g.
// `kmshealth_reconcile_errors_total{controller="cabundle",reason="apply"}`),
// 0 when absent.
func (p *Process) Metric(series string) (float64, error) {
	m, err := p.Metrics()
	return m[series], err
}

// FreePorts returns n distinct loopback TCP ports, free at the time of
// the call. Each is held until all are chosen: a port closed at once may be
// handed out again by the next bind to port 0 (it was once, and a test got
// one port for two listeners).
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("find a free loopback port"), err)
		}
		defer func() { _ = l.Close() }()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
