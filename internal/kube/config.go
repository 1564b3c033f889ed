// Package kube turns the provider's connection settings into a client-go
// *rest.Config. The attribute names and KUBE_* environment variables are the
// ones users know from the hashicorp/kubernetes Terraform provider.
package kube

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Exec mirrors the provider's exec block: a client-go credential plugin.
type Exec struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

// Config is the provider's connection configuration after environment
// defaults are applied. Empty strings and nil mean "not set".
type Config struct {
	Host                 string
	Token                string
	ClusterCACertificate string // PEM
	ClientCertificate    string // PEM
	ClientKey            string // PEM
	Insecure             bool
	TLSServerName        string
	ConfigPath           string
	ConfigPaths          []string
	ConfigContext        string
	Exec                 *Exec
}

// FromEnv returns a Config holding the KUBE_* environment defaults. getenv is
// os.Getenv in production; tests pass a map lookup.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Host:                 getenv("KUBE_HOST"),
		Token:                getenv("KUBE_TOKEN"),
		ClusterCACertificate: getenv("KUBE_CLUSTER_CA_CERT_DATA"),
		ClientCertificate:    getenv("KUBE_CLIENT_CERT_DATA"),
		ClientKey:            getenv("KUBE_CLIENT_KEY_DATA"),
		TLSServerName:        getenv("KUBE_TLS_SERVER_NAME"),
		ConfigPath:           getenv("KUBE_CONFIG_PATH"),
		ConfigContext:        getenv("KUBE_CTX"),
	}
	if v := getenv("KUBE_INSECURE"); v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("environment variable KUBE_INSECURE=%q is not a boolean, set it to true or false: %w", v, err)
		}
		c.Insecure = insecure
	}
	for _, p := range filepath.SplitList(getenv("KUBE_CONFIG_PATHS")) {
		if p != "" {
			c.ConfigPaths = append(c.ConfigPaths, p)
		}
	}
	return c, nil
}

// Merge returns c with every unset field taken from defaults, so explicit
// provider attributes win over the environment. config_path and config_paths
// are one setting: if c names either, neither is taken from defaults, so an
// explicit config_path is not turned into a conflict by KUBE_CONFIG_PATHS.
// Insecure cannot be unset by c, only turned on by either side.
func (c Config) Merge(defaults Config) Config {
	m := c
	m.Host = cmp.Or(c.Host, defaults.Host)
	m.Token = cmp.Or(c.Token, defaults.Token)
	m.ClusterCACertificate = cmp.Or(c.ClusterCACertificate, defaults.ClusterCACertificate)
	m.ClientCertificate = cmp.Or(c.ClientCertificate, defaults.ClientCertificate)
	m.ClientKey = cmp.Or(c.ClientKey, defaults.ClientKey)
	m.Insecure = c.Insecure || defaults.Insecure
	m.TLSServerName = cmp.Or(c.TLSServerName, defaults.TLSServerName)
	m.ConfigContext = cmp.Or(c.ConfigContext, defaults.ConfigContext)
	m.Exec = cmp.Or(c.Exec, defaults.Exec)
	if c.ConfigPath == "" && len(c.ConfigPaths) == 0 {
		m.ConfigPath, m.ConfigPaths = defaults.ConfigPath, defaults.ConfigPaths
	}
	return m
}

// IsEmpty reports whether nothing at all was configured: no host, no
// kubeconfig path, no exec plugin, no token and no certificates.
func (c Config) IsEmpty() bool {
	return c.Host == "" && c.ConfigPath == "" && len(c.ConfigPaths) == 0 && c.Exec == nil &&
		c.Token == "" && c.ClusterCACertificate == "" && c.ClientCertificate == "" && c.ClientKey == ""
}

// RESTConfig validates c and builds a client configuration from the
// kubeconfig file(s), if any, with the explicit settings layered on top. It
// never falls back to ~/.kube/config, KUBECONFIG, localhost or the in-cluster
// service account. The result has QPS 50, Burst 100 and the given user agent.
func (c Config) RESTConfig(userAgent string) (*rest.Config, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Host != "" {
		host, err := serverURL(c.Host)
		if err != nil {
			return nil, err
		}
		c.Host = host
	}
	rules := &clientcmd.ClientConfigLoadingRules{} // no paths: never ~/.kube/config or KUBECONFIG
	if c.ConfigPath != "" {
		p, err := existingPath("config_path", c.ConfigPath)
		if err != nil {
			return nil, err
		}
		rules.ExplicitPath = p
	}
	for _, raw := range c.ConfigPaths { // validate made sure only one of the two is set
		p, err := existingPath("config_paths", raw)
		if err != nil {
			return nil, err
		}
		rules.Precedence = append(rules.Precedence, p)
	}
	// Not NewNonInteractiveDeferredLoadingClientConfig: it silently switches to
	// the in-cluster service account when the result has no server.
	kubeconfig, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes client configuration: %w", err)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*kubeconfig, c.ConfigContext, c.overrides(), rules).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no Kubernetes API server found: set host, or a config_path/config_paths whose context (config_context) names a cluster with a server: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = 50, 100, userAgent // client-go defaults (5/10) are too low
	return cfg, nil
}

// validate reports the configuration mistakes client-go would either accept
// silently or reject with a message that does not name the attribute.
func (c Config) validate() error {
	switch {
	case c.IsEmpty():
		return errors.New("no Kubernetes connection configured: set host (with token, client_certificate/client_key or exec) or config_path/config_paths in the provider block, or the KUBE_HOST / KUBE_CONFIG_PATH environment variables")
	case c.ConfigPath != "" && len(c.ConfigPaths) > 0:
		return errors.New("config_path and config_paths are both set (in the provider block or via KUBE_CONFIG_PATH / KUBE_CONFIG_PATHS): set only one of them")
	case c.Insecure && c.ClusterCACertificate != "":
		return errors.New("insecure and cluster_ca_certificate are mutually exclusive: remove insecure (or KUBE_INSECURE) to verify the server with the CA, or remove cluster_ca_certificate to skip verification")
	case c.ConfigContext != "" && c.ConfigPath == "" && len(c.ConfigPaths) == 0:
		return fmt.Errorf("config_context %q needs a kubeconfig: set config_path or config_paths (or KUBE_CONFIG_PATH), or remove config_context", c.ConfigContext)
	}
	return nil
}

// serverURL validates host and gives a bare "host[:port]" the https scheme.
// Left to client-go, a scheme-less host means plain http, and client-go then
// silently drops the token, client certificate and exec credentials.
func serverURL(host string) (string, error) {
	server := host
	if !strings.Contains(host, "://") {
		server = "https://" + host
	}
	u, err := url.Parse(server)
	if err == nil && (u.Scheme != "https" && u.Scheme != "http" || u.Hostname() == "") {
		err = errors.New("want https://host[:port] or host[:port]")
	}
	if err != nil {
		return "", fmt.Errorf("host %q is not a valid Kubernetes API server URL, use e.g. https://203.0.113.10:6443: %w", host, err)
	}
	return server, nil
}

// existingPath expands a leading "~/" and checks that the file exists, naming
// attribute in the error.
func existingPath(attribute, path string) (string, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s %q: cannot expand ~, use an absolute path: %w", attribute, path, err)
		}
		path = filepath.Join(home, rest)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s: kubeconfig file %q cannot be used, point %s at an existing, readable file: %w", attribute, path, attribute, err)
	}
	return path, nil
}

// overrides layers the explicit settings over whatever the kubeconfig says.
func (c Config) overrides() *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{CurrentContext: c.ConfigContext}
	o.ClusterInfo.Server = c.Host
	o.ClusterInfo.CertificateAuthorityData = []byte(c.ClusterCACertificate)
	o.ClusterInfo.InsecureSkipTLSVerify = c.Insecure
	o.ClusterInfo.TLSServerName = c.TLSServerName
	o.AuthInfo.Token = c.Token
	o.AuthInfo.ClientCertificateData = []byte(c.ClientCertificate)
	o.AuthInfo.ClientKeyData = []byte(c.ClientKey) // empty slices do not override the kubeconfig
	if c.Exec != nil {
		exec := &clientcmdapi.ExecConfig{
			APIVersion:      c.Exec.APIVersion,
			Command:         c.Exec.Command,
			Args:            c.Exec.Args,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		for _, name := range slices.Sorted(maps.Keys(c.Exec.Env)) {
			exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: name, Value: c.Exec.Env[name]})
		}
		o.AuthInfo.Exec = exec
	}
	return o
}

// Lazy builds the client configuration on first use only, once, and is safe
// for concurrent callers. A failure is remembered and returned to every
// caller, so a provider without a reachable configuration fails only when a
// resource actually needs the cluster.
type Lazy struct {
	build func() (*rest.Config, error)
}

// NewLazy returns a Lazy that builds c.RESTConfig(userAgent) on first use.
func NewLazy(c Config, userAgent string) *Lazy {
	return &Lazy{build: sync.OnceValues(func() (*rest.Config, error) {
		return c.RESTConfig(userAgent)
	})}
}

// RESTConfig returns the shared client configuration, building it on the
// first call. Every caller gets the same pointer: treat it as read-only and
// use rest.CopyConfig before changing anything.
func (l *Lazy) RESTConfig() (*rest.Config, error) {
	return l.build()
}
