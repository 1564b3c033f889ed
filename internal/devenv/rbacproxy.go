package devenv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// RBACProxySidecar is the kube-rbac-proxy sidecar a
// kmshealth_rbac_proxy_sidecar applied, as the API server holds it.
type RBACProxySidecar struct {
	Image          string
	Args           []string // the container's args
	Config         string   // config.yaml of the resource's ConfigMap
	ServiceAccount string   // the workload's pods run as this one
}

// AppliedRBACProxy reads the sidecar in t's pod template and the config
// file of its ConfigMap.
func AppliedRBACProxy(ctx context.Context, cs kubernetes.Interface, t rbacproxy.Target) (*RBACProxySidecar, error) {
	w, err := rbacproxy.GetWorkload(ctx, cs, t)
	if err != nil {
		return nil, err
	}
	var ctr *corev1.Container
	for i := range w.Template.Spec.InitContainers {
		if w.Template.Spec.InitContainers[i].Name == rbacproxy.ContainerName {
			ctr = &w.Template.Spec.InitContainers[i]
		}
	}
	if ctr == nil {
		return nil, fmt.Errorf("%s has no %s sidecar", t, rbacproxy.ContainerName)
	}
	cm, err := cs.CoreV1().ConfigMaps(t.Namespace).Get(ctx, rbacproxy.ObjectName(t), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &RBACProxySidecar{Image: ctr.Image, Args: ctr.Args, Config: cm.Data[rbacproxy.ConfigFileKey], ServiceAccount: w.ServiceAccount()}, nil
}

// RBACProxyArgs turns the sidecar's args into those of kube-rbac-proxy
// run as a local process: exactly the applied arguments, with only the
// config file's path (configFile) and the listen host (the pod's 0.0.0.0
// becomes 127.0.0.1) substituted, plus --kubeconfig (what a pod has from
// its ServiceAccount). It also returns the listen address and the address
// of the health endpoint, which the proxy serves on the listen host. A
// TLS certificate from a Secret or a plain HTTP listener is refused: this
// serves the proxy's self-signed default only.
func RBACProxyArgs(applied []string, configFile, kubeconfig string) (args []string, listen, health string, err error) {
	const secure = "--secure-listen-address=0.0.0.0:"
	var healthPort string
	for _, a := range applied {
		switch {
		case strings.HasPrefix(a, secure):
			listen = "127.0.0.1:" + strings.TrimPrefix(a, secure)
			a = "--secure-listen-address=" + listen
		case a == "--config-file="+rbacproxy.ConfigFilePath:
			a = "--config-file=" + configFile
		case strings.HasPrefix(a, "--proxy-endpoints-port="):
			healthPort = strings.TrimPrefix(a, "--proxy-endpoints-port=")
		case strings.HasPrefix(a, "--tls-cert-file="), strings.HasPrefix(a, "--tls-private-key-file="), strings.HasPrefix(a, "--insecure-listen-address="):
			return nil, "", "", fmt.Errorf("argument %s: only the self-signed secure listener runs as a local process", a)
		case strings.HasPrefix(a, "--kubeconfig="):
			return nil, "", "", fmt.Errorf("argument %s: a sidecar takes its ServiceAccount's in-cluster credentials", a)
		}
		args = append(args, a)
	}
	if listen == "" || healthPort == "" {
		return nil, "", "", fmt.Errorf("the applied args %q have no %s<port> or --proxy-endpoints-port", applied, secure)
	}
	return append(args, "--kubeconfig="+kubeconfig), listen, "127.0.0.1:" + healthPort, nil
}

// RBACProxyOptions say how to run an applied sidecar locally.
type RBACProxyOptions struct {
	Bin     string            // kube-rbac-proxy, e.g. Tool("kube-rbac-proxy")
	Sidecar *RBACProxySidecar // what was applied (AppliedRBACProxy)
	// The API server and a token of Sidecar.ServiceAccount, the identity
	// the proxy's TokenReviews and SubjectAccessReviews are made as.
	Server string
	CAPEM  []byte
	Token  string
	Dir    string    // where the config file and the kubeconfig are written
	Out    io.Writer // the proxy's log, besides RBACProxy.Output; may be nil
}

// RBACProxy is kube-rbac-proxy running as a local process.
type RBACProxy struct {
	*Process
	Args      []string    // its arguments (RBACProxyArgs)
	URL       string      // https://<listen address>
	HealthURL string      // https://<health address>/healthz
	Output    *SyncBuffer // its log so far
}

// rbacProxyClient trusts the proxy's self-signed certificate: loopback only.
var rbacProxyClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback, the proxy's self-signed default
}}

// StartRBACProxy runs the sidecar as a local process (RBACProxyArgs) and
// returns once its health endpoint answers 200. Stop ends it.
func StartRBACProxy(ctx context.Context, o RBACProxyOptions) (*RBACProxy, error) {
	configFile := filepath.Join(o.Dir, rbacproxy.ConfigFileKey)
	if err := os.WriteFile(configFile, []byte(o.Sidecar.Config), 0o600); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(o.Dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: o.Server, CertificateAuthorityData: o.CAPEM}
	kc.AuthInfos[o.Sidecar.ServiceAccount] = &clientcmdapi.AuthInfo{Token: o.Token}
	kc.Contexts["sidecar"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: o.Sidecar.ServiceAccount}
	kc.CurrentContext = "sidecar"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, err
	}
	args, listen, health, err := RBACProxyArgs(o.Sidecar.Args, configFile, kubeconfig)
	if err != nil {
		return nil, err
	}
	out := &SyncBuffer{}
	cmd := exec.Command(o.Bin, args...)
	if o.Out != nil {
		cmd.Stdout = io.MultiWriter(out, o.Out)
	} else {
		cmd.Stdout = out
	}
	cmd.Stderr = cmd.Stdout
	p, err := StartCommand(cmd)
	if err != nil {
		return nil, err
	}
	proxy := &RBACProxy{Process: p, Args: args, URL: "https://" + listen, HealthURL: "https://" + health + rbacproxy.HealthPath, Output: out}
	// A process offers no watch for its readiness: poll, bounded.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if !p.Running() {
			return false, errors.New("kube-rbac-proxy exited")
		}
		code, _, err := request(ctx, http.MethodGet, proxy.HealthURL, "")
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: try again
		}
		return code == http.StatusOK, nil
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("kube-rbac-proxy %q not healthy at %s: %w\n%s", args, proxy.HealthURL, err, out.String())
	}
	return proxy, nil
}

// Do sends method path to the proxy's listener with token (none when
// empty), and returns the status and the body.
func (p *RBACProxy) Do(ctx context.Context, method, path, token string) (int, []byte, error) {
	return request(ctx, method, p.URL+path, token)
}

func request(ctx context.Context, method, url, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := rbacProxyClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
