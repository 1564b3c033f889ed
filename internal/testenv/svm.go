package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
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
// Stop) ends it.
//
// The migrator starts a migration only once the garbage collector's
// informer has seen the resourceVersion the migration runs up to; on a
// resource nobody writes, that is the informer's next watch bookmark,
// about a minute later (41-82 s measured here). So that tests do not wait
// for it, the bed writes the Secret or ConfigMap default/
// kmshealth-testenv-svm-nudge (data "uid": the migration's UID) as soon as
// a migration of secrets or configmaps is queued, as a cluster where the
// resource is written would; migrations of other resources take their
// natural time. The bed's API server always serves the API; without this
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
	ports, err := devenv.FreePorts(1)
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
	nudgeCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.nudgeQueuedMigrations(nudgeCtx) }()
	e.stopNudger = func() { cancel(); <-done }
	return nil
}

// StopStorageVersionMigrator stops what StartStorageVersionMigrator
// started; without it running it does nothing.
func (e *Env) StopStorageVersionMigrator() {
	e.migratorMu.Lock()
	defer e.migratorMu.Unlock()
	if e.stopNudger != nil {
		e.stopNudger()
		e.stopNudger = nil
	}
	stop(e.migrator)
	e.migrator = nil
}

// svmNudgeName is the object nudgeQueuedMigrations writes.
const svmNudgeName = "kmshealth-testenv-svm-nudge"

// nudgeQueuedMigrations writes one Secret or ConfigMap whenever a migration
// of that resource is queued (status.resourceVersion set, no condition
// yet), until ctx ends; see StartStorageVersionMigrator. It follows the
// migrations by a watch that is resumed when the server ends it and
// restarted from a fresh list when its resourceVersion is too old.
func (e *Env) nudgeQueuedMigrations(ctx context.Context) {
	client, err := kubernetes.NewForConfig(e.RESTConfig())
	if err != nil {
		return
	}
	svms := client.StoragemigrationV1beta1().StorageVersionMigrations()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return svms.Watch(ctx, o)
	}}
	nudged := map[types.UID]bool{}
	for ctx.Err() == nil {
		list, err := svms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return // the API server is gone (the bed is stopping)
		}
		for i := range list.Items {
			e.nudge(ctx, client, &list.Items[i], nudged)
		}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
		if err != nil {
			return
		}
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*svmv1beta1.StorageVersionMigration); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				e.nudge(ctx, client, s, nudged)
			}
		}
		w.Stop()
	}
}

// nudge writes the nudge object of s's resource once per migration, when
// s is queued and is a migration of Secrets or ConfigMaps.
func (e *Env) nudge(ctx context.Context, client kubernetes.Interface, s *svmv1beta1.StorageVersionMigration, nudged map[types.UID]bool) {
	r := s.Spec.Resource
	if nudged[s.UID] || s.Status.ResourceVersion == "" || len(s.Status.Conditions) > 0 || r.Group != "" {
		return
	}
	meta := metav1.ObjectMeta{Name: svmNudgeName, Namespace: metav1.NamespaceDefault}
	data := map[string]string{"uid": string(s.UID)}
	var err error
	switch r.Resource {
	case "secrets":
		secrets := client.CoreV1().Secrets(meta.Namespace)
		obj := &corev1.Secret{ObjectMeta: meta, StringData: data}
		if _, err = secrets.Update(ctx, obj, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			_, err = secrets.Create(ctx, obj, metav1.CreateOptions{})
		}
	case "configmaps":
		cms := client.CoreV1().ConfigMaps(meta.Namespace)
		obj := &corev1.ConfigMap{ObjectMeta: meta, Data: data}
		if _, err = cms.Update(ctx, obj, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, obj, metav1.CreateOptions{})
		}
	default:
		return
	}
	// A failed nudge only costs the migration its natural delay.
	nudged[s.UID] = err == nil
}

// errExited is waitHealthz's error for a component that exited before it
// answered.
var errExited = errors.New("exited")

// waitHealthz polls a control-plane component's /healthz on its own
// serving certificate (loopback only; the path is allowed without
// authentication) until it answers ok: the component offers no watch for
// its own readiness.
func waitHealthz(ctx context.Context, p *proc, url string, limit time.Duration) error {
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
		if state, exited := p.exited(); exited {
			return fmt.Errorf("%w: %s", errExited, state)
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
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" { // etcd ends it with a newline
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}
