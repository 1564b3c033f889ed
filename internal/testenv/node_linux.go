package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/gobuild"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/image"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// The project image the node runs: built from this checkout by `make
// image`'s own program, named in a registry that does not exist, so it is
// only ever found imported, never pulled.
const (
	nodeImageRepository = "kmshealth.test/terraform-provider-kmshealth"
	nodeImageVersion    = "0.0.0-node"
)

// Node is one real kubelet node, with the controllers that make pods of
// Deployments and DaemonSets and the proxy that makes Services reach them.
type Node struct {
	Name string
	// Image is the project's in-cluster image, built from this checkout by
	// `make image`'s program and imported into containerd. Pods name it with
	// pull policy IfNotPresent or Never: the node has no registry.
	Image string
	// ImageTarball is that image's OCI layout tarball.
	ImageTarball string
	// ContainerdSocket is the node's containerd (CRI) socket.
	ContainerdSocket string
	// StartTime is how long the node took from nothing to Ready, images
	// included.
	StartTime time.Duration

	env   *Env
	dir   string
	procs []*proc // in start order
}

// Node starts this package's node on first use and returns it. Only a
// package whose TestMain is MainWithNode has one.
func (e *Env) Node(ctx context.Context) (*Node, error) {
	if !e.forNode {
		return nil, errors.New("no node in this package: its TestMain must be testenv.MainWithNode")
	}
	e.nodeOnce.Do(func() {
		e.node = &Node{Name: NodeName, env: e, dir: filepath.Join(e.Dir, "node")}
		start := time.Now()
		if e.nodeErr = e.node.start(ctx); e.nodeErr != nil {
			e.node.stop()
			e.nodeErr = fmt.Errorf("start the node (logs in %s): %w", e.node.dir, e.nodeErr)
			return
		}
		e.node.StartTime = time.Since(start)
	})
	return e.node, e.nodeErr
}

func (n *Node) path(name string) string { return filepath.Join(n.dir, name) }

func (n *Node) start(ctx context.Context) error {
	if isolated == nil {
		return errors.New("the node runs only in its own namespaces (testenv.MainWithNode)")
	}
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return err
	}
	moduleDir := devenv.Root()
	// The project image, exactly as `make image` builds it, and the sandbox.
	n.Image = nodeImageRepository + ":" + nodeImageVersion
	n.ImageTarball = n.path("image.oci.tar")
	if out, err := goCommand(ctx, moduleDir, "run", "./internal/cmd/image",
		"-repository", nodeImageRepository, "-version", nodeImageVersion, "-out", n.ImageTarball).CombinedOutput(); err != nil {
		return fmt.Errorf("make image: %w: %s", err, out)
	}
	pauseTar, serverTar, upstreamTar := n.path("pause.oci.tar"), n.path("tls-server.oci.tar"), n.path("http-upstream.oci.tar")
	if err := buildProgramImage(ctx, moduleDir, "pause", SandboxImage, "65535", pauseTar); err != nil {
		return err
	}
	if err := buildProgramImage(ctx, moduleDir, "tlsserver", TLSServerImage, "65532", serverTar); err != nil {
		return err
	}
	if err := buildProgramImage(ctx, moduleDir, "httpupstream", HTTPUpstreamImage, "65532", upstreamTar); err != nil {
		return err
	}
	// kube-rbac-proxy as its release image lays it out (distroless's
	// nonroot user, the binary in /usr/local/bin), under the release's own
	// name: the sidecar's default image runs the binary tools/install.sh
	// built from the same wrapper module.
	proxyBinary, err := RBACProxyBinary()
	if err != nil {
		return err
	}
	proxyTar := n.path("kube-rbac-proxy.oci.tar")
	if err := packageBinary(proxyBinary, "usr/local/bin/kube-rbac-proxy", rbacproxy.DefaultImage, "65532:65532", proxyTar); err != nil {
		return fmt.Errorf("package kube-rbac-proxy as %s: %w", rbacproxy.DefaultImage, err)
	}

	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	for _, tarball := range []string{pauseTar, serverTar, upstreamTar, proxyTar, n.ImageTarball} {
		if out, err := exec.CommandContext(ctx, "ctr", "-a", n.ContainerdSocket, "-n", "k8s.io", "images", "import", tarball).CombinedOutput(); err != nil {
			return fmt.Errorf("ctr images import %s: %w: %s", tarball, err, out)
		}
	}
	if err := n.startKubelet(); err != nil {
		return err
	}
	e := n.env
	for _, c := range []struct {
		log  string
		args []string
	}{
		{"kube-controller-manager.log", []string{
			"kube-controller-manager",
			"--kubeconfig=" + e.Kubeconfig,
			"--authentication-kubeconfig=" + e.Kubeconfig,
			"--authorization-kubeconfig=" + e.Kubeconfig,
			"--service-account-private-key-file=" + filepath.Join(e.Dir, "sa.key"),
			"--root-ca-file=" + filepath.Join(e.Dir, "ca.crt"),
			"--cluster-cidr=" + PodCIDR,
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
			"--v=1",
		}},
		{"kube-scheduler.log", []string{
			"kube-scheduler",
			"--kubeconfig=" + e.Kubeconfig,
			"--authentication-kubeconfig=" + e.Kubeconfig,
			"--authorization-kubeconfig=" + e.Kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--v=1",
		}},
		{"kube-proxy.log", []string{
			"kube-proxy",
			"--kubeconfig=" + e.Kubeconfig,
			"--proxy-mode=iptables",
			"--cluster-cidr=" + PodCIDR,
			"--hostname-override=" + NodeName,
			// conntrack tables are the machine's; the node's network
			// namespace may not resize them.
			"--conntrack-max-per-core=0",
			"--conntrack-tcp-timeout-established=0",
			"--conntrack-tcp-timeout-close-wait=0",
			"--v=1",
		}},
	} {
		cmd, err := e.spawnProgram(filepath.Join("node", c.log), e.binary, c.args...)
		if err != nil {
			return err
		}
		n.procs = append(n.procs, cmd)
	}
	if err := n.waitReady(ctx, 3*time.Minute); err != nil {
		return err
	}
	// The node runs this machine's API server: it is a control-plane node,
	// labelled as kubeadm labels one (kubelet may not label itself so).
	patch := []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`)
	_, err = e.Clientset().CoreV1().Nodes().Patch(ctx, NodeName, ktypes.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// startContainerd runs containerd with its own root, state, socket and CNI
// configuration: pods on the bridge, addresses from PodCIDR, no masquerade.
func (n *Node) startContainerd(ctx context.Context) error {
	n.ContainerdSocket = n.path("containerd.sock")
	cniDir := n.path("cni")
	if err := os.MkdirAll(cniDir, 0o700); err != nil {
		return err
	}
	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "kmshealth-node",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": %q
    }
  }]
}
`, BridgeName, PodCIDR, BridgeAddress, n.path("ipam"))
	if err := os.WriteFile(filepath.Join(cniDir, "10-kmshealth.conflist"), []byte(cni), 0o600); err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # The sandbox runs without CAP_SYS_RESOURCE: it must not try to lower
  # its oom_score_adj below its parent's.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  # Per-registry hosts.toml files (MirrorRegistry writes them), read at
  # every pull: a registry with none is pulled from itself, which in the
  # test bed's network namespace fails (no route off the machine).
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
`, n.path("containerd/root"), n.path("containerd/state"), n.ContainerdSocket, SandboxImage, cniDir, n.path("registry-hosts"))
	if err := os.WriteFile(n.path("containerd.toml"), []byte(config), 0o600); err != nil {
		return err
	}
	cmd, err := n.env.spawnProgram(filepath.Join("node", "containerd.log"), "containerd", "--config", n.path("containerd.toml"))
	if err != nil {
		return fmt.Errorf("%w (containerd comes from Debian: apt-get install containerd runc containernetworking-plugins, or `bash tools/install.sh node-packages`)", err)
	}
	n.procs = append(n.procs, cmd)
	// containerd offers no readiness signal but its API answering.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if exec.CommandContext(ctx, "ctr", "-a", n.ContainerdSocket, "version").Run() == nil {
			return nil
		}
		if state, exited := cmd.exited(); exited {
			return fmt.Errorf("containerd exited: %s: %s", state, n.env.logTail("node/containerd.log"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd not answering on %s after 30s: %s", n.ContainerdSocket, n.env.logTail("node/containerd.log"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MirrorRegistry makes containerd pull images named in registry (e.g.
// ghcr.io) from mirror first, a plain-HTTP registry in the test bed (e.g.
// http://10.244.0.1:5000), by the unchanged reference: an image pinned by
// digest is pulled by that digest, exactly as a release names it. A miss
// falls back to registry itself, which the bed cannot reach: the pull
// fails. It takes effect at the next pull.
func (n *Node) MirrorRegistry(registry, mirror string) error {
	dir := filepath.Join(n.path("registry-hosts"), registry)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "https://"+registry, mirror)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o600); err != nil {
		return fmt.Errorf("mirror %s at %s: %w", registry, mirror, err)
	}
	return nil
}

// startKubelet runs kubelet as the node's own identity (system:node:<name>,
// checked by the Node authorizer), on cgroup v1 or v2 with the cgroupfs
// driver under the node's cgroup root, with image garbage collection off:
// an image it removed could not be pulled again.
func (n *Node) startKubelet() error {
	e := n.env
	cert, err := newCert(e.ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + NodeName, Organization: []string{"system:nodes"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["node"] = &clientcmdapi.Cluster{Server: e.Host, CertificateAuthorityData: e.CAPEM}
	kc.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert.cert, ClientKeyData: cert.key}
	kc.Contexts["node"] = &clientcmdapi.Context{Cluster: "node", AuthInfo: "kubelet"}
	kc.CurrentContext = "node"
	if err := clientcmd.WriteToFile(*kc, n.path("kubelet.kubeconfig")); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: %s
failCgroupV1: false
failSwapOn: false
podLogsDir: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
readOnlyPort: 0
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
serializeImagePulls: false
fileCheckFrequency: 1s
syncFrequency: 10s
`, n.ContainerdSocket, isolated.cgroupRoot, n.path("pod-logs"), filepath.Join(e.Dir, "ca.crt"))
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	cmd, err := e.spawnProgram(filepath.Join("node", "kubelet.log"), e.binary,
		"kubelet",
		"--config="+n.path("kubelet.yaml"),
		"--kubeconfig="+n.path("kubelet.kubeconfig"),
		"--root-dir="+n.path("kubelet"),
		"--cert-dir="+n.path("kubelet-pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+BridgeAddress,
		"--v=1",
	)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, cmd)
	return nil
}

// waitReady watches the Node until kubelet reports it Ready.
func (n *Node) waitReady(ctx context.Context, limit time.Duration) error {
	client := n.env.Clientset()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", NodeName))
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		node, ok := ev.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready after %s: %w; kubelet log: %s", NodeName, limit, err, n.env.logTail("node/kubelet.log"))
	}
	return nil
}

// stop ends the node's processes, newest first. Their containers end with
// the node's PID namespace.
func (n *Node) stop() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		stop(n.procs[i])
	}
	n.procs = nil
}

func goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// RBACProxyBinary returns the kube-rbac-proxy binary the node packages as
// rbacproxy.DefaultImage: $KMSHEALTH_KUBE_RBAC_PROXY when set
// (scripts/test-acc.sh sets it), else whatever tools/install.sh builds or
// has cached.
func RBACProxyBinary() (string, error) {
	if p := os.Getenv("KMSHEALTH_KUBE_RBAC_PROXY"); p != "" {
		return p, nil
	}
	script := filepath.Join(devenv.Root(), "tools", "install.sh")
	out, err := exec.Command("bash", script, "kube-rbac-proxy").Output()
	if err != nil {
		return "", fmt.Errorf("build kube-rbac-proxy with %s (or set KMSHEALTH_KUBE_RBAC_PROXY): %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// buildProgramImage builds ./internal/testenv/<program> statically (the
// checkout's build, internal/gobuild) and packages it as an image named
// ref, entrypoint /<program>, run as user, written as a layout tarball to
// out.
func buildProgramImage(ctx context.Context, moduleDir, program, ref, user, out string) error {
	err := gobuild.Binary(ctx, moduleDir, "testenv-"+program+"-"+runtime.GOOS+"-"+runtime.GOARCH, "./internal/testenv/"+program,
		[]string{"CGO_ENABLED=0"}, []string{"-trimpath", "-ldflags=-s -w"},
		func(binary string) error { return packageBinary(binary, program, ref, user, out) })
	if err != nil {
		return fmt.Errorf("build the %s program: %w", program, err)
	}
	return nil
}

// packageBinary packages the static linux binary at binaryPath as a
// one-layer OCI image named ref: the file at inImage (a relative path, its
// folders made too), owned by root, mode 0755, which is the entrypoint,
// run as user. It is written as a layout tarball to out with
// internal/image, as `make image` writes the project's image.
func packageBinary(binaryPath, inImage, ref, user, out string) error {
	data, err := os.ReadFile(binaryPath)
	if err != nil {
		return err
	}
	if err := image.CheckBinary(data, runtime.GOARCH); err != nil {
		return fmt.Errorf("%s: %w", binaryPath, err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	dirs := strings.Split(inImage, "/")
	for i := 1; i < len(dirs); i++ {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(dirs[:i], "/") + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: inImage, Mode: 0o755, Size: int64(len(data))}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		RootFS:       v1.RootFS{Type: "layers"},
		Config:       v1.Config{Entrypoint: []string{"/" + inImage}, User: user},
	}); err != nil {
		return err
	}
	if img, err = mutate.Append(img, mutate.Addendum{Layer: l, MediaType: types.OCILayer}); err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := image.WriteLayout(f, tag, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// NodeLog is the tail of one of the node's logs (kubelet, containerd,
// kube-controller-manager, kube-scheduler, kube-proxy), for failure messages.
func (n *Node) NodeLog(component string) string {
	return n.env.logTail(filepath.Join("node", component+".log"))
}

// PodLogs returns what the containers of a pod wrote, read from kubelet's
// pod log directory (the test bed's kube-apiserver has no route to kubelet's
// log endpoint it trusts).
func (n *Node) PodLogs(namespace, pod string) string {
	matches, _ := filepath.Glob(filepath.Join(n.path("pod-logs"), namespace+"_"+pod+"_*", "*", "*.log"))
	var b strings.Builder
	for _, m := range matches {
		data, _ := os.ReadFile(m)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "==> %s <==\n%s\n", m, data)
	}
	return b.String()
}

// Process is a container's main process as the kernel sees it: in the
// node's PID namespace, with its credentials, capabilities, seccomp mode,
// root mount and memory.
type Process struct {
	PID        int
	UID, GID   string // real uid and gid (first fields of Uid:/Gid:)
	CapEff     string // effective capabilities, hex
	CapBnd     string // bounding set, hex
	NoNewPrivs bool
	Seccomp    int    // 0 none, 1 strict, 2 filter
	RootRO     bool   // its / is mounted read-only
	VmRSS      uint64 // bytes, from /proc/<pid>/status
	// WorkingSet is its container cgroup's memory usage less inactive file
	// pages, in bytes: what kubelet and the metrics API report.
	WorkingSet uint64
}

// ContainerProcess finds the main process of the container named container
// in pod (which must be running) and reads what the kernel says of it.
func (n *Node) ContainerProcess(ctx context.Context, pod *corev1.Pod, container string) (*Process, error) {
	var id string
	// A native sidecar (an init container that keeps running) is found
	// like any other container.
	for _, s := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if s.Name == container {
			id = strings.TrimPrefix(s.ContainerID, "containerd://")
		}
	}
	if id == "" {
		return nil, fmt.Errorf("pod %s/%s has no running container %q", pod.Namespace, pod.Name, container)
	}
	out, err := exec.CommandContext(ctx, "ctr", "-a", n.ContainerdSocket, "-n", "k8s.io", "tasks", "ls").Output()
	if err != nil {
		return nil, fmt.Errorf("ctr tasks ls: %w", err)
	}
	p := &Process{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			p.PID, err = strconv.Atoi(f[1])
			if err != nil {
				return nil, fmt.Errorf("ctr tasks ls: pid %q: %w", f[1], err)
			}
		}
	}
	if p.PID == 0 {
		return nil, fmt.Errorf("container %s of pod %s/%s has no task in containerd", id, pod.Namespace, pod.Name)
	}
	proc := func(name string) (string, error) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.PID, name))
		return string(b), err
	}
	status, err := proc("status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(status, "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "Uid":
			p.UID = f[0]
		case "Gid":
			p.GID = f[0]
		case "CapEff":
			p.CapEff = f[0]
		case "CapBnd":
			p.CapBnd = f[0]
		case "NoNewPrivs":
			p.NoNewPrivs = f[0] == "1"
		case "Seccomp":
			p.Seccomp, _ = strconv.Atoi(f[0])
		case "VmRSS":
			kb, _ := strconv.ParseUint(f[0], 10, 64)
			p.VmRSS = kb * 1024
		}
	}
	mounts, err := proc("mountinfo")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(mounts, "\n") {
		// id parent major:minor root mountpoint options ...
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/" {
			p.RootRO = strings.HasPrefix(f[5], "ro,") || f[5] == "ro"
		}
	}
	cgroups, err := proc("cgroup")
	if err != nil {
		return nil, err
	}
	p.WorkingSet, err = workingSet(cgroups)
	return p, err
}

// workingSet reads the memory cgroup named in a /proc/<pid>/cgroup text:
// usage less inactive file pages, on cgroup v1 or v2.
func workingSet(procCgroup string) (uint64, error) {
	for _, line := range strings.Split(procCgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var usageFile, inactiveKey, dir string
		switch {
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, usageFile, inactiveKey = filepath.Join("/sys/fs/cgroup/memory", f[2]), "memory.usage_in_bytes", "total_inactive_file"
		case f[0] == "0" && f[1] == "":
			if _, err := os.Stat("/sys/fs/cgroup/memory.stat"); err != nil {
				continue // v2 mounted beside v1 hierarchies (hybrid): not the memory controller
			}
			dir, usageFile, inactiveKey = filepath.Join("/sys/fs/cgroup", f[2]), "memory.current", "inactive_file"
		default:
			continue
		}
		usageText, err := os.ReadFile(filepath.Join(dir, usageFile))
		if err != nil {
			return 0, err
		}
		usage, err := strconv.ParseUint(strings.TrimSpace(string(usageText)), 10, 64)
		if err != nil {
			return 0, err
		}
		stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return 0, err
		}
		for _, l := range strings.Split(string(stat), "\n") {
			if k, v, ok := strings.Cut(l, " "); ok && k == inactiveKey {
				inactive, _ := strconv.ParseUint(v, 10, 64)
				if inactive < usage {
					return usage - inactive, nil
				}
				return 0, nil
			}
		}
		return usage, nil
	}
	return 0, fmt.Errorf("no memory cgroup in %q", procCgroup)
}
