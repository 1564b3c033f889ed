package kube

import (
	"cmp"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
)

// DefaultServiceAccountDir is where kubelet mounts a pod's ServiceAccount
// token and the cluster CA (the paths rest.InClusterConfig reads).
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Pod is what Kubernetes gives every pod to reach its own API server: the
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT environment variables
// and the ServiceAccount files kubelet mounts.
type Pod struct {
	ServiceHost string // KUBERNETES_SERVICE_HOST
	ServicePort string // KUBERNETES_SERVICE_PORT
	// ServiceAccountDir holds the files token and ca.crt;
	// DefaultServiceAccountDir when empty. Tests point it elsewhere.
	ServiceAccountDir string
}

// Detected reports whether the environment says this runs in a pod: both
// variables set, the same test as client-go's rest.InClusterConfig.
func (p Pod) Detected() bool {
	return p.ServiceHost != "" && p.ServicePort != ""
}

func (p Pod) file(name string) string {
	return filepath.Join(cmp.Or(p.ServiceAccountDir, DefaultServiceAccountDir), name)
}

// inCluster is the configuration when no setting names an API server. In
// a pod it is the pod's ServiceAccount, as with hashicorp/kubernetes (whose
// client-go loader falls back to rest.InClusterConfig when the merged
// configuration is empty); a token setting replaces the ServiceAccount
// token, as it does there. Settings the in-cluster configuration cannot
// honour are an error here, where hashicorp/kubernetes ignores them or
// falls back to localhost. Outside a pod it is the error that says what to
// configure.
func (c Config) inCluster() (*Connection, error) {
	set := c.set()
	if !c.Pod.Detected() {
		if len(set) == 0 {
			return nil, errors.New("no Kubernetes connection configured: set host (with token, client_certificate/client_key or exec) or config_path/config_paths in the provider block, " +
				"or the KUBE_HOST / KUBE_CONFIG_PATH environment variables; inside a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT set) the pod's ServiceAccount is used")
		}
		return nil, fmt.Errorf("no Kubernetes API server found: %s set, but neither host nor config_path/config_paths (nor KUBE_HOST / KUBE_CONFIG_PATH / KUBE_CONFIG_PATHS); "+
			"set host, or a config_path/config_paths whose context names a cluster with a server", strings.Join(set, ", "))
	}
	if extra := slices.DeleteFunc(set, func(s string) bool { return s == c.origin("token") }); len(extra) > 0 {
		return nil, fmt.Errorf("%s set, but neither host nor config_path/config_paths: running in a pod (KUBERNETES_SERVICE_HOST=%s), the provider then uses the pod's ServiceAccount, "+
			"which takes nothing but a token; set host (e.g. https://kubernetes.default.svc) to use %s, or remove it", strings.Join(extra, ", "), c.Pod.ServiceHost, strings.Join(extra, ", "))
	}
	cfg := &rest.Config{Host: "https://" + net.JoinHostPort(c.Pod.ServiceHost, c.Pod.ServicePort)}
	conn := &Connection{
		REST: cfg, Server: cfg.Host, InCluster: true,
		ServerFrom: fmt.Sprintf("the pod's KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT environment variables (in-cluster: neither host nor config_path/config_paths is set, nor %s)",
			"KUBE_HOST / KUBE_CONFIG_PATH / KUBE_CONFIG_PATHS"),
	}
	if c.Token != "" {
		cfg.BearerToken = c.Token
		conn.Credentials = []string{"bearer token from the " + c.describe("token") + ", instead of the pod's ServiceAccount token"}
	} else {
		tokenFile := c.Pod.file("token")
		token, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("running in a pod (KUBERNETES_SERVICE_HOST=%s) without a readable ServiceAccount token (%w): mount one (automountServiceAccountToken: true), "+
				"or configure host and credentials, or config_path", c.Pod.ServiceHost, err)
		}
		// The file as well: client-go re-reads it, so a projected token that
		// kubelet rotates keeps working.
		cfg.BearerToken, cfg.BearerTokenFile = string(token), tokenFile
		conn.Credentials = []string{fmt.Sprintf("the pod's ServiceAccount token %q", tokenFile)}
	}
	caFile := c.Pod.file("ca.crt")
	if pem, err := os.ReadFile(caFile); err == nil && x509.NewCertPool().AppendCertsFromPEM(pem) {
		cfg.CAFile = caFile
	} else {
		// As rest.InClusterConfig: without a usable CA file, the system roots.
		conn.ServerFrom += fmt.Sprintf("; no usable %s, so the system's root CAs verify the server", caFile)
	}
	conn.Proxy = environmentProxy(cfg.Host)
	return conn, nil
}
