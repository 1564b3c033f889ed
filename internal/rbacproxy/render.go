package rbacproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The proxy's config file, in the shape kube-rbac-proxy v0.19.0 to v0.22.1
// read (pkg/ is the same in both): the JSON names below are its keys (it
// decodes YAML through encoding/json).
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
	var out []string
	for _, a := range c.Defaulted().args() {
		out = append(out, "--"+a.flag+"="+a.value)
	}
	return out
}

// arg is one argument of the sidecar and the Config field it comes from
// (the field a flag its release does not take is reported at).
type arg struct{ flag, value, field string }

// args are Args with their fields; c is defaulted.
func (c Config) args() []arg {
	var args []arg
	if c.InsecureListen {
		args = append(args, arg{"insecure-listen-address", fmt.Sprintf("0.0.0.0:%d", c.ListenPort), "insecureListen"})
	} else {
		args = append(args,
			arg{"secure-listen-address", fmt.Sprintf("0.0.0.0:%d", c.ListenPort), "listenPort"},
			// Serves /healthz on the secure address's host: 0.0.0.0, so
			// kubelet reaches it.
			arg{"proxy-endpoints-port", fmt.Sprint(c.HealthPort), "healthPort"})
	}
	args = append(args,
		arg{"upstream", fmt.Sprintf("http://127.0.0.1:%d/", c.UpstreamPort), "upstreamPort"},
		arg{"config-file", ConfigFilePath, "authorization"})
	if !c.InsecureListen {
		if c.TLS.SecretName != "" {
			args = append(args,
				arg{"tls-cert-file", TLSDir + "/" + TLSCertKey, "tls.secretName"},
				arg{"tls-private-key-file", TLSDir + "/" + TLSPrivateKeyKey, "tls.secretName"})
		}
		args = append(args, arg{"tls-min-version", c.TLS.MinVersion, "tls.minVersion"})
		if len(c.TLS.CipherSuites) > 0 {
			args = append(args, arg{"tls-cipher-suites", strings.Join(c.TLS.CipherSuites, ","), "tls.cipherSuites"})
		}
	}
	if len(c.IgnorePaths) > 0 {
		args = append(args, arg{"ignore-paths", strings.Join(c.IgnorePaths, ","), "ignorePaths"})
	}
	if len(c.AllowPaths) > 0 {
		args = append(args, arg{"allow-paths", strings.Join(c.AllowPaths, ","), "allowPaths"})
	}
	return append(args, arg{"v", fmt.Sprint(LogVerbosity), "image"})
}

// fieldPath is the field.Path of a dotted Config field name.
func fieldPath(name string) *field.Path {
	parts := strings.Split(name, ".")
	return field.NewPath(parts[0], parts[1:]...)
}
