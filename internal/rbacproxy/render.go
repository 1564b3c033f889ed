package rbacproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// The proxy's config file, in kube-rbac-proxy v0.19.1's own shape: the
// JSON names below are its keys (it decodes YAML through encoding/json).
type proxyConfigFile struct {
	// Always present, even empty: a file without it makes the proxy
	// dereference a nil config and panic at startup.
	Authorization proxyAuthorization `json:"authorization"`
}

type proxyAuthorization struct {
	Rewrites           *proxyRewrites           `json:"rewrites,omitempty"`
	ResourceAttributes *proxyResourceAttributes `json:"resourceAttributes,omitempty"`
}

type proxyResourceAttributes struct {
	Namespace   string `json:"namespace,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"` // not "group": the proxy would ignore it and check the core group
	APIVersion  string `json:"apiVersion,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
}

type proxyRewrites struct {
	ByQueryParameter *proxyName `json:"byQueryParameter,omitempty"`
	ByHTTPHeader     *proxyName `json:"byHttpHeader,omitempty"`
}

type proxyName struct {
	Name string `json:"name"`
}

// ConfigFile renders the proxy's --config-file: YAML with a top-level
// authorization key, keys in a fixed order, so equal Configs give equal
// bytes (and ConfigHash).
func (c Config) ConfigFile() ([]byte, error) {
	c = c.Defaulted()
	var file proxyConfigFile
	if ra := c.Authorization.ResourceAttributes; ra != nil {
		file.Authorization.ResourceAttributes = &proxyResourceAttributes{
			Namespace: ra.Namespace, APIGroup: ra.APIGroup, APIVersion: ra.APIVersion,
			Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
		}
	}
	if rw := c.Authorization.Rewrites; rw != nil {
		file.Authorization.Rewrites = &proxyRewrites{}
		if rw.ByQueryParameter != "" {
			file.Authorization.Rewrites.ByQueryParameter = &proxyName{rw.ByQueryParameter}
		}
		if rw.ByHTTPHeader != "" {
			file.Authorization.Rewrites.ByHTTPHeader = &proxyName{rw.ByHTTPHeader}
		}
	}
	body, err := yaml.Marshal(file)
	if err != nil {
		return nil, fmt.Errorf("render the kube-rbac-proxy config file of %s: %w", c.Target, err)
	}
	header := fmt.Sprintf("# kube-rbac-proxy config for %s, written by kmshealth: change the kmshealth_rbac_proxy_sidecar resource, not this file.\n", c.Target)
	return append([]byte(header), body...), nil
}

// ConfigHash is the hex sha256 of ConfigFile: the value of
// ConfigHashAnnotation on the pod template, so a config change rolls the
// pods (the proxy reads its config file only at startup).
func (c Config) ConfigHash() (string, error) {
	file, err := c.ConfigFile()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(file)
	return hex.EncodeToString(sum[:]), nil
}

// Args are the sidecar's arguments, in a fixed order.
func (c Config) Args() []string {
	c = c.Defaulted()
	var args []string
	if c.InsecureListen {
		args = append(args, fmt.Sprintf("--insecure-listen-address=0.0.0.0:%d", c.ListenPort))
	} else {
		args = append(args,
			fmt.Sprintf("--secure-listen-address=0.0.0.0:%d", c.ListenPort),
			// Serves /healthz on the secure address's host: 0.0.0.0, so
			// kubelet reaches it.
			fmt.Sprintf("--proxy-endpoints-port=%d", c.HealthPort))
	}
	args = append(args,
		fmt.Sprintf("--upstream=http://127.0.0.1:%d/", c.UpstreamPort),
		"--config-file="+ConfigFilePath)
	if !c.InsecureListen {
		if c.TLS.SecretName != "" {
			args = append(args,
				"--tls-cert-file="+TLSDir+"/"+TLSCertKey,
				"--tls-private-key-file="+TLSDir+"/"+TLSPrivateKeyKey)
		}
		args = append(args, "--tls-min-version="+c.TLS.MinVersion)
		if len(c.TLS.CipherSuites) > 0 {
			args = append(args, "--tls-cipher-suites="+strings.Join(c.TLS.CipherSuites, ","))
		}
	}
	if len(c.IgnorePaths) > 0 {
		args = append(args, "--ignore-paths="+strings.Join(c.IgnorePaths, ","))
	}
	if len(c.AllowPaths) > 0 {
		args = append(args, "--allow-paths="+strings.Join(c.AllowPaths, ","))
	}
	return append(args, fmt.Sprintf("--v=%d", LogVerbosity))
}
