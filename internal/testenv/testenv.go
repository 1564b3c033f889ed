// Package testenv starts the real control plane every cluster test and the
// demo run against: etcd and kube-apiserver (the kube-testserver binary built
// by tools/install.sh from the Go module proxy) on free loopback ports, RBAC
// on, token and client-certificate authentication, Secrets and ConfigMaps
// encrypted at rest through a real KMS v2 plugin (package kmstest) on a unix
// socket, storagemigration.k8s.io served, and kube-controller-manager's
// namespace controller. StartStorageVersionMigrator runs the storage version
// migrator on demand; MainWithNode adds a real node (kubelet, every
// controller, the scheduler and kube-proxy).
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
)

// KMSProviderName is the name of the KMS v2 provider in the
// EncryptionConfiguration; etcd values carry it after "k8s:enc:kms:v2:".
const KMSProviderName = "kmshealth-test"

// stopGrace bounds how long a process may take to exit after SIGTERM before
// it is killed.
const stopGrace = 10 * time.Second

// Env is one running control plane.
type Env struct {
	Dir          string // scratch directory: certificates, logs, etcd data, kubeconfig
	Kubeconfig   string // kubeconfig file for the system:masters Token
	Host         string // https://127.0.0.1:<port>
	CAPEM        []byte
	ClientCert   []byte // a system:masters client certificate and its key
	ClientKey    []byte
	Token        string // a system:masters bearer token (token auth file)
	EtcdEndpoint string
	KMS          *kmstest.Plugin // the plugin the API server encrypts EncryptedResources with

	binary    string
	apiArgs   []string
	etcd      *proc
	apiserver *proc

	controllers     *proc // kube-controller-manager, namespace controller only (no node)
	controllersPort int

	migratorMu sync.Mutex
	migrator   *proc  // kube-controller-manager running the storage version migrator, on demand
	stopNudger func() // ends nudgeQueuedMigrations

	ca       *keyPair
	forNode  bool // started by MainWithNode, in the node's namespaces
	lean     bool // started by a test binary: see leanAPIServerArgs
	nodeOnce sync.Once
	node     *Node
	nodeErr  error
}

// Binary returns the kube-testserver path: $KMSHEALTH_KUBE_TESTSERVER when
// set (the Makefile sets it), else whatever tools/install.sh builds or has
// cached.
func Binary() (string, error) {
	if p := os.Getenv("KMSHEALTH_KUBE_TESTSERVER"); p != "" {
		return p, nil
	}
	script := filepath.Join(devenv.Root(), "tools", "install.sh")
	out, err := exec.Command("bash", script, "kube-testserver").Output()
	if err != nil {
		return "", fmt.Errorf("build kube-testserver with %s: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Start brings up etcd, the KMS plugin and kube-apiserver and returns once
// /readyz answers ok. Call Stop when done, also on error paths of the caller.
func Start(ctx context.Context) (*Env, error) {
	return start(ctx, false)
}

func start(ctx context.Context, forNode bool) (*Env, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	// unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "kmsh-")
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, binary: bin, forNode: forNode, lean: testing.Testing()}
	if err := e.start(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) start(ctx context.Context) error {
	p, err := writePKI(e.Dir)
	if err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	e.CAPEM, e.ClientCert, e.ClientKey, e.Token = p.ca.cert, p.admin.cert, p.admin.key, p.adminToken
	e.ca = p.ca

	ports, err := devenv.FreePorts(4)
	if err != nil {
		return err
	}
	if err := e.startEtcd(ctx, ports[:2]); err != nil {
		return err
	}

	if e.KMS, err = kmstest.Start(filepath.Join(e.Dir, "kms.sock"), "1"); err != nil {
		return err
	}
	encCfg := filepath.Join(e.Dir, "encryption.yaml")
	if err := os.WriteFile(encCfg, []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [%s]
  providers:
  - kms:
      apiVersion: v2
      name: %s
      endpoint: %s
      timeout: 5s
  - identity: {}
`, strings.Join(EncryptedResources, ", "), KMSProviderName, e.KMS.Endpoint())), 0o600); err != nil {
		return err
	}

	f := func(name string) string { return filepath.Join(e.Dir, name) }
	// Without a node the API server is on loopback only, and the
	// `kubernetes` Service has no endpoints (none can be a loopback
	// address). For a node it listens on every interface of the node's
	// network namespace (loopback and the pods' bridge, nothing else) and
	// advertises the bridge address, which pods reach through the Service.
	bind, advertise, endpoints, authz := "127.0.0.1", "127.0.0.1", "none", "RBAC"
	if e.forNode {
		bind, advertise, endpoints, authz = "0.0.0.0", BridgeAddress, "lease", "Node,RBAC"
	}
	e.apiArgs = []string{
		"kube-apiserver",
		"--etcd-servers=" + e.EtcdEndpoint,
		"--bind-address=" + bind,
		"--advertise-address=" + advertise,
		"--tls-cert-file=" + f("serving.crt"),
		"--tls-private-key-file=" + f("serving.key"),
		"--client-ca-file=" + f("ca.crt"),
		"--token-auth-file=" + f("tokens.csv"),
		"--authorization-mode=" + authz,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.saKeyFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--encryption-provider-config=" + encCfg,
		// StorageVersionMigration is served (beta, off by default); its
		// controller runs only on demand (StartStorageVersionMigrator).
		"--feature-gates=" + svmFeatureGate + "=true",
		"--runtime-config=" + svmRuntimeConfig,
		"--allow-privileged=true",
		"--endpoint-reconciler-type=" + endpoints,
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
	if e.lean {
		e.apiArgs = append(e.apiArgs, leanAPIServerArgs()...)
	}
	if err := e.startFirstAPIServer(ctx, ports[2]); err != nil {
		return err
	}
	if err := e.writeKubeconfig(); err != nil {
		return err
	}
	if e.forNode {
		return nil // the node starts every controller (Env.Node)
	}
	// Without a node, the one controller whose absence clients would see:
	// the namespace controller, which empties and removes deleted
	// namespaces (else they stay Terminating). No other controller runs, so
	// tests can play the Deployment and DaemonSet controllers themselves.
	e.controllersPort = ports[3]
	return e.startControllers(ctx)
}

// startEtcd starts etcd on a client and a peer port and waits until it
// answers /readyz, so that kube-apiserver never starts against an etcd
// that is not there. One that exits while starting is started again on
// ports picked anew (onFreePorts), as kube-apiserver is: make test starts
// a dozen control planes within seconds, and one of them lost its etcd
// port so (2026-12-06, a trial of an earlier-starting pool). A retry
// starts from an empty data directory.
func (e *Env) startEtcd(ctx context.Context, ports []int) error {
	return onFreePorts(ports, func(ports []int) error {
		e.EtcdEndpoint = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		if err := os.RemoveAll(filepath.Join(e.Dir, "etcd")); err != nil {
			return err
		}
		var err error
		e.etcd, err = e.spawn("etcd.log", "etcd",
			"--data-dir="+filepath.Join(e.Dir, "etcd"),
			"--listen-client-url="+e.EtcdEndpoint,
			fmt.Sprintf("--listen-peer-url=http://127.0.0.1:%d", ports[1]))
		if err != nil {
			return err
		}
		if err := waitHealthz(ctx, e.etcd, e.EtcdEndpoint+"/readyz", 60*time.Second); err != nil {
			stop(e.etcd)
			return fmt.Errorf("etcd: %w; log: %s", err, e.logTail("etcd.log"))
		}
		return nil
	})
}

// startControllers starts kube-controller-manager with the namespace
// controller and waits until it answers /healthz. Once running it rides
// out an API server outage, but it exits when the API server is down
// while it starts: without the wait, a test that restarts the API server
// first thing would leave the package without a namespace controller.
//
// One that exits while starting is started again, twice at most, on a
// port picked anew: its port was free when start picked it, seconds
// before (etcd and kube-apiserver start first), and on a machine running
// several control planes and thousands of loopback connections, another
// process can bind it meanwhile. An exit at start failed a whole package
// once (make test, 2026-12-02, the provider main shard under OpenTofu),
// and its log was gone with the scratch directory: the error now carries
// the log's tail.
func (e *Env) startControllers(ctx context.Context) error {
	return onFreePorts([]int{e.controllersPort}, func(ports []int) error {
		e.controllersPort = ports[0]
		if err := e.startControllersOnce(ctx); err != nil {
			return fmt.Errorf("kube-controller-manager (namespace controller): %w; log: %s", err, e.logTail("kube-controller-manager.log"))
		}
		return nil
	})
}

// onFreePorts calls start with ports and, while start fails because the
// component exited while starting (errExited), again with as many ports
// picked anew, three calls at most: a port was free when it was picked,
// and another process can bind it before the component does.
func onFreePorts(ports []int, start func(ports []int) error) error {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := start(ports)
		if err == nil || !errors.Is(err, errExited) || attempt == attempts {
			return err
		}
		fresh, perr := devenv.FreePorts(len(ports))
		if perr != nil {
			return errors.Join(err, perr)
		}
		ports = fresh
	}
}

func (e *Env) startControllersOnce(ctx context.Context) error {
	var err error
	e.controllers, err = e.spawn("kube-controller-manager.log", "kube-controller-manager",
		"--kubeconfig="+e.Kubeconfig,
		"--authentication-kubeconfig="+e.Kubeconfig,
		"--authorization-kubeconfig="+e.Kubeconfig,
		"--controllers=namespace",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(e.controllersPort),
		"--v=1")
	if err != nil {
		return err
	}
	return waitHealthz(ctx, e.controllers, "https://127.0.0.1:"+strconv.Itoa(e.controllersPort)+"/healthz", 60*time.Second)
}

// startFirstAPIServer starts kube-apiserver on port the first time, and
// again on a port picked anew when it exits while starting (onFreePorts),
// as kube-controller-manager is (startControllers). scripts/test-acc.sh starts seven control planes
// within a second, and one of them lost its port so (make test,
// 2026-12-06, the isolated shard under Terraform 1.5.7: "bind: address
// already in use"). Once started, the API server keeps its port: a
// restart (RestartAPIServer) binds the port its clients know.
func (e *Env) startFirstAPIServer(ctx context.Context, port int) error {
	args := e.apiArgs
	return onFreePorts([]int{port}, func(ports []int) error {
		e.Host = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		e.apiArgs = append(slices.Clip(args), "--secure-port="+strconv.Itoa(ports[0]))
		return e.startAPIServer(ctx)
	})
}

func (e *Env) startAPIServer(ctx context.Context) error {
	var err error
	if e.apiserver, err = e.spawn("apiserver.log", e.apiArgs...); err != nil {
		return err
	}
	return e.waitReady(ctx, 120*time.Second)
}

// RestartAPIServer stops kube-apiserver (etcd and the KMS plugin stay up)
// and starts it again on the same port, for tests of clients that must ride
// out an API server outage. down runs while the server is down.
func (e *Env) RestartAPIServer(ctx context.Context, down func()) error {
	stop(e.apiserver)
	if down != nil {
		down()
	}
	if err := e.startAPIServer(ctx); err != nil {
		return err
	}
	if e.controllers == nil {
		return nil // a node's controllers are the node's
	}
	// Started again whatever its state: one that was itself starting when
	// the API server went away has exited.
	stop(e.controllers)
	return e.startControllers(ctx)
}

// RESTConfig returns a fresh admin client configuration. It and the
// Kubeconfig authenticate with the system:masters bearer token, not the
// client certificate (ClientCert, for tests of certificate authentication):
// kube-apiserver verifies a client certificate's chain on every request,
// which was 6 % of a provider test shard's kube-apiserver CPU (pprof, 200 s
// of the shard at -parallel 1), and looks a token up in a map.
func (e *Env) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            e.Host,
		BearerToken:     e.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.CAPEM},
		QPS:             200,
		Burst:           400,
	}
}

// Clientset returns an admin clientset.
func (e *Env) Clientset() *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(e.RESTConfig())
}

// Stop terminates every process (SIGTERM, then SIGKILL after a bound) and
// removes the scratch directory.
func (e *Env) Stop() {
	if e.node != nil {
		e.node.stop()
	}
	e.StopStorageVersionMigrator()
	stop(e.controllers)
	stop(e.apiserver)
	if e.KMS != nil {
		e.KMS.Stop()
	}
	stop(e.etcd)
	if os.Getenv("KMSHEALTH_KEEP_TESTENV") == "" {
		_ = os.RemoveAll(e.Dir)
	}
}

func (e *Env) spawn(logName string, args ...string) (*proc, error) {
	return e.spawnProgram(logName, e.binary, args...)
}

// proc is a control-plane or node process the test bed started: its
// command and a channel closed once it has exited (cmd.Wait returned).
// Whether it still runs is read from done, never from cmd.ProcessState,
// which the goroutine waiting for it writes.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// exited reports whether p has exited and, if so, how.
func (p *proc) exited() (string, bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.String(), true
	default:
		return "", false
	}
}

// spawnProgram starts path with args, its output appended to logName in
// the scratch directory.
func (e *Env) spawnProgram(logName, path string, args ...string) (*proc, error) {
	logFile, err := os.OpenFile(filepath.Join(e.Dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if e.lean && path == e.binary {
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	}
	// The control plane never outlives the test process that started it
	// (on Linux; see devenv.ChildAttr).
	cmd.SysProcAttr = devenv.ChildAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s %s: %w", path, args[0], err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(p.done) }()
	return p, nil
}

// stop sends p SIGTERM and waits for it to exit, stopGrace at most, then
// kills it.
func stop(p *proc) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls /readyz: the API server offers no watch for its own
// readiness.
func (e *Env) waitReady(ctx context.Context, limit time.Duration) error {
	client, err := kubernetes.NewForConfig(e.RESTConfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		if state, exited := e.apiserver.exited(); exited {
			return fmt.Errorf("kube-apiserver %w: %s; log: %s", errExited, state, e.logTail("apiserver.log"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %s (last: %w); log: %s", limit, last, e.logTail("apiserver.log"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *Env) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.Dir, name))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (e *Env) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kmshealth-test"] = &clientcmdapi.Cluster{Server: e.Host, CertificateAuthorityData: e.CAPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: e.Token} // see RESTConfig
	cfg.Contexts["kmshealth-test"] = &clientcmdapi.Context{Cluster: "kmshealth-test", AuthInfo: "admin"}
	cfg.CurrentContext = "kmshealth-test"
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	return clientcmd.WriteToFile(*cfg, e.Kubeconfig)
}
