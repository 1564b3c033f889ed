package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"time"
)

// StorageVersionMigration (KEP-4192) in the Kubernetes the bed runs
// (tools/kube-testserver: k8s.io/kubernetes v1.35): the API
// storagemigration.k8s.io/v1beta1 is beta and off by default, served only
// with the feature gate on and the group version enabled; its controller
// runs in kube-controller-manager behind the same gate and needs the
// garbage collector's dependency graph (it rewrites what the collector's
// informers list), so the collector runs beside it.
const (
	svmFeatureGate   = "StorageVersionMigrator"
	svmRuntimeConfig = "storagemigration.k8s.io/v1beta1=true"
	svmControllers   = "garbage-collector-controller,storage-version-migrator-controller"
)

// StartStorageVersionMigrator starts a kube-controller-manager that runs
// only the storage version migrator (and the garbage collector it needs),
// and returns once its /healthz answers ok; StopStorageVersionMigrator (or
// Stop) ends it. The bed's API server always serves the API; without this
// controller StorageVersionMigrations are accepted and never progress, as
// on a cluster whose kube-controller-manager lacks the feature gate.
//
// While it runs, the garbage collector deletes objects whose owners are
// gone, as in a real cluster. Tests that start it must not run in parallel
// with tests that need it stopped.
func (e *Env) StartStorageVersionMigrator(ctx context.Context) error {
	e.migratorMu.Lock()
	defer e.migratorMu.Unlock()
	if e.migrator != nil {
		return errors.New("the storage version migrator is already running")
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	cmd, err := e.spawn("kube-controller-manager-svm.log", "kube-controller-manager",
		"--kubeconfig="+e.Kubeconfig,
		"--authentication-kubeconfig="+e.Kubeconfig,
		"--authorization-kubeconfig="+e.Kubeconfig,
		"--controllers="+svmControllers,
		"--feature-gates="+svmFeatureGate+"=true",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]),
		"--v=2")
	if err != nil {
		return err
	}
	if err := waitHealthz(ctx, cmd, "https://127.0.0.1:"+strconv.Itoa(ports[0])+"/healthz", 60*time.Second); err != nil {
		stop(cmd)
		return fmt.Errorf("storage version migrator: %w; log: %s", err, e.logTail("kube-controller-manager-svm.log"))
	}
	e.migrator = cmd
	return nil
}

// StopStorageVersionMigrator stops what StartStorageVersionMigrator
// started; without it running it does nothing.
func (e *Env) StopStorageVersionMigrator() {
	e.migratorMu.Lock()
	defer e.migratorMu.Unlock()
	stop(e.migrator)
	e.migrator = nil
}

// waitHealthz polls a control-plane component's /healthz on its own
// serving certificate (loopback only; the path is allowed without
// authentication) until it answers ok: the component offers no watch for
// its own readiness.
func waitHealthz(ctx context.Context, cmd *exec.Cmd, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{
		Timeout: 5 * time.Second,
		// The component's self-signed loopback certificate.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback, self-signed
	}
	var last error
	for {
		last = healthzOnce(ctx, client, url)
		if last == nil {
			return nil
		}
		if cmd.ProcessState != nil {
			return fmt.Errorf("exited: %s", cmd.ProcessState)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ok after %s (last: %w)", url, limit, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func healthzOnce(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}
