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
	Host                  string
	Username              string // basic auth
	Password              string // basic auth
	Token                 string
	ClusterCACertificate  string // PEM
	ClientCertificate     string // PEM
	ClientKey             string // PEM
	Insecure              bool
	InsecureSet           bool // Insecure was given explicitly: an explicit false beats KUBE_INSECURE=true in Merge
	TLSServerName         string
	ProxyURL              string
	ConfigPath            string
	ConfigPaths           []string
	ConfigContext         string
	ConfigContextAuthInfo string // kubeconfig user to use instead of the context's
	ConfigContextCluster  string // kubeconfig cluster to use instead of the context's
	Exec                  *Exec
	// Pod is the pod Terraform may be running in (FromEnv fills it). Its
	// ServiceAccount is used when no setting names an API server.
	Pod Pod

	// fromEnv lists the attributes whose value came from their KUBE_*
	// environment variable rather than the provider block, for messages.
	fromEnv []string
}

// EnvVar returns the KUBE_* environment variable that gives attribute its
// default, as in the hashicorp/kubernetes provider, or "" when it has none.
func EnvVar(attribute string) string {
	switch attribute {
	case "host":
		return "KUBE_HOST"
	case "username":
		return "KUBE_USER"
	case "password":
		return "KUBE_PASSWORD"
	case "token":
		return "KUBE_TOKEN"
	case "cluster_ca_certificate":
		return "KUBE_CLUSTER_CA_CERT_DATA"
	case "client_certificate":
		return "KUBE_CLIENT_CERT_DATA"
	case "client_key":
		return "KUBE_CLIENT_KEY_DATA"
	case "insecure":
		return "KUBE_INSECURE"
	case "tls_server_name":
		return "KUBE_TLS_SERVER_NAME"
	case "proxy_url":
		return "KUBE_PROXY_URL"
	case "config_path":
		return "KUBE_CONFIG_PATH"
	case "config_paths":
		return "KUBE_CONFIG_PATHS"
	case "config_context":
		return "KUBE_CTX"
	case "config_context_auth_info":
		return "KUBE_CTX_AUTH_INFO"
	case "config_context_cluster":
		return "KUBE_CTX_CLUSTER"
	}
	return ""
}

// stringSetting is one string attribute of a Config and where it lives.
type stringSetting struct {
	attribute string
	value     *string
}

// stringSettings lists c's string attributes, as pointers into c.
func (c *Config) stringSettings() []stringSetting {
	return []stringSetting{
		{"host", &c.Host}, {"username", &c.Username}, {"password", &c.Password}, {"token", &c.Token},
		{"cluster_ca_certificate", &c.ClusterCACertificate}, {"client_certificate", &c.ClientCertificate},
		{"client_key", &c.ClientKey}, {"tls_server_name", &c.TLSServerName}, {"proxy_url", &c.ProxyURL},
		{"config_path", &c.ConfigPath}, {"config_context", &c.ConfigContext},
		{"config_context_auth_info", &c.ConfigContextAuthInfo}, {"config_context_cluster", &c.ConfigContextCluster},
	}
}

// FromEnv returns a Config holding the KUBE_* environment defaults and the
// pod Terraform runs in, if any. getenv is os.Getenv in production; tests
// pass a map lookup.
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	for _, s := range c.stringSettings() {
		if *s.value = getenv(EnvVar(s.attribute)); *s.value != "" {
			c.fromEnv = append(c.fromEnv, s.attribute)
		}
	}
	if v := getenv("KUBE_INSECURE"); v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("environment variable KUBE_INSECURE=%q is not a boolean, set it to true or false: %w", v, err)
		}
		if c.Insecure = insecure; insecure {
			c.fromEnv = append(c.fromEnv, "insecure")
		}
	}
	for _, p := range filepath.SplitList(getenv("KUBE_CONFIG_PATHS")) {
		if p != "" {
			c.ConfigPaths = append(c.ConfigPaths, p)
		}
	}
	if len(c.ConfigPaths) > 0 {
		c.fromEnv = append(c.fromEnv, "config_paths")
	}
	c.Pod = Pod{ServiceHost: getenv("KUBERNETES_SERVICE_HOST"), ServicePort: getenv("KUBERNETES_SERVICE_PORT")}
	return c, nil
}

// Merge returns c with every unset field taken from defaults, the KUBE_*
// environment, so explicit provider attributes win over the environment.
// config_path and config_paths are one setting: if c names either, neither
// is taken from defaults, so an explicit config_path is not turned into a
// conflict by KUBE_CONFIG_PATHS. Insecure is taken from defaults unless c
// sets it explicitly (InsecureSet). The pod is always the environment's.
func (c Config) Merge(defaults Config) Config {
	m := c
	m.fromEnv = slices.Clone(c.fromEnv)
	explicitPaths := c.ConfigPath != "" || len(c.ConfigPaths) > 0
	own, fallback := m.stringSettings(), defaults.stringSettings()
	for i, s := range own {
		if *s.value != "" || *fallback[i].value == "" || (s.attribute == "config_path" && explicitPaths) {
			continue
		}
		*s.value = *fallback[i].value
		m.fromEnv = append(m.fromEnv, s.attribute)
	}
	if !explicitPaths && len(defaults.ConfigPaths) > 0 {
		m.ConfigPaths = defaults.ConfigPaths
		m.fromEnv = append(m.fromEnv, "config_paths")
	}
	if !c.InsecureSet && !c.Insecure && defaults.Insecure {
		m.Insecure = true
		m.fromEnv = append(m.fromEnv, "insecure")
	}
	m.Exec = cmp.Or(c.Exec, defaults.Exec)
	m.Pod = cmp.Or(c.Pod, defaults.Pod)
	return m
}

// IsEmpty reports whether no connection setting at all is set (the pod
// Terraform may run in is not a setting).
func (c Config) IsEmpty() bool {
	return len(c.set()) == 0
}

// set names, for messages, every connection setting that is set: the
// attribute, or the KUBE_* variable it came from.
func (c Config) set() []string {
	var names []string
	for _, s := range c.stringSettings() {
		if *s.value != "" {
			names = append(names, c.origin(s.attribute))
		}
	}
	if len(c.ConfigPaths) > 0 {
		names = append(names, c.origin("config_paths"))
	}
	if c.Insecure {
		names = append(names, c.origin("insecure"))
	}
	if c.Exec != nil {
		names = append(names, "exec")
	}
	return names
}

// origin names where attribute's value came from: the attribute itself
// (the provider block) or its KUBE_* environment variable.
func (c Config) origin(attribute string) string {
	if slices.Contains(c.fromEnv, attribute) {
		return EnvVar(attribute)
	}
	return attribute
}

// namesServer reports whether a setting chooses the API server: host or a
// kubeconfig. Without one, only the pod's in-cluster configuration can.
func (c Config) namesServer() bool {
	return c.Host != "" || c.ConfigPath != "" || len(c.ConfigPaths) > 0
}

// RESTConfig is Connect without the description of where things came from.
func (c Config) RESTConfig(userAgent string) (*rest.Config, error) {
	conn, err := c.Connect(userAgent)
	if err != nil {
		return nil, err
	}
	return conn.REST, nil
}

// Connect validates c and builds a client configuration: from the
// kubeconfig file(s), if any, with the explicit settings layered on top;
// or, when no setting names an API server and Terraform runs in a pod,
// from the pod's ServiceAccount (as hashicorp/kubernetes does). It never
// reads ~/.kube/config or KUBECONFIG and never falls back to localhost.
// The result has QPS 50, Burst 100 and the given user agent.
func (c Config) Connect(userAgent string) (*Connection, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	build := c.fromSettings
	if !c.namesServer() {
		build = c.inCluster
	}
	conn, err := build()
	if err != nil {
		return nil, err
	}
	conn.REST.QPS, conn.REST.Burst, conn.REST.UserAgent = 50, 100, userAgent // client-go defaults (5/10) are too low
	return conn, nil
}

// fromSettings builds the configuration from host and/or the kubeconfig.
func (c Config) fromSettings() (*Connection, error) {
	if c.Host != "" {
		host, err := serverURL(c.origin("host"), c.Host)
		if err != nil {
			return nil, err
		}
		c.Host = host
	}
	rules := &clientcmd.ClientConfigLoadingRules{} // no paths: never ~/.kube/config or KUBECONFIG
	if c.ConfigPath != "" {
		p, err := existingPath(c.origin("config_path"), c.ConfigPath)
		if err != nil {
			return nil, err
		}
		rules.ExplicitPath = p
	}
	for _, raw := range c.ConfigPaths { // validate made sure only one of the two is set
		p, err := existingPath(c.origin("config_paths"), raw)
		if err != nil {
			return nil, err
		}
		rules.Precedence = append(rules.Precedence, p)
	}
	// Not NewNonInteractiveDeferredLoadingClientConfig: it silently switches to
	// the in-cluster service account whenever the result has no server.
	kubeconfig, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes client configuration: %w", err)
	}
	kc := c.kubeconfigChoice(kubeconfig)
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*kubeconfig, c.ConfigContext, c.overrides(), rules).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no Kubernetes API server found: %s has no server; set host, or point config_context (or config_context_cluster) at a cluster with a server: %w", kc.cluster(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes client configuration: %w", err)
	}
	conn := &Connection{REST: cfg, Server: cfg.Host}
	if c.Host != "" {
		conn.ServerFrom = "the " + c.describe("host")
		if kc.files != "" {
			conn.ServerFrom += " (it overrides the kubeconfig's server)"
		}
	} else {
		conn.ServerFrom = "the server of " + kc.cluster()
	}
	conn.Proxy = c.proxyOrigin(cfg, kubeconfig, kc)
	conn.Credentials = c.credentials(cfg, kc)
	return conn, nil
}

// validate reports the configuration mistakes client-go would either accept
// silently or reject with a message that does not name the attribute.
func (c Config) validate() error {
	needsKubeconfig := []string{"config_context", "config_context_auth_info", "config_context_cluster"}
	for _, attr := range needsKubeconfig {
		if v := c.get(attr); v != "" && c.ConfigPath == "" && len(c.ConfigPaths) == 0 {
			return fmt.Errorf("%s %q needs a kubeconfig: set config_path or config_paths (or KUBE_CONFIG_PATH / KUBE_CONFIG_PATHS), or remove %s", c.origin(attr), v, c.origin(attr))
		}
	}
	switch {
	case c.ConfigPath != "" && len(c.ConfigPaths) > 0:
		return fmt.Errorf("config_path and config_paths are both set (as %s and %s): set only one of them", c.origin("config_path"), c.origin("config_paths"))
	case c.Insecure && c.ClusterCACertificate != "":
		return fmt.Errorf("insecure and cluster_ca_certificate are mutually exclusive (set as %s and %s): remove insecure to verify the server with the CA, or remove cluster_ca_certificate to skip verification", c.origin("insecure"), c.origin("cluster_ca_certificate"))
	case (c.Username != "" || c.Password != "") && c.Token != "":
		basic := c.origin("username")
		if c.Username == "" {
			basic = c.origin("password")
		}
		return fmt.Errorf("basic auth (%s) and a bearer token (%s) are both set, and a request can carry only one: remove one of them", basic, c.origin("token"))
	case c.Exec != nil && (c.Exec.Command == "" || c.Exec.APIVersion == ""):
		return errors.New("exec needs both command and api_version: set them in the exec block (e.g. api_version = \"client.authentication.k8s.io/v1\"), or remove the block")
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		err = parseError(err)
		if err == nil && (!slices.Contains([]string{"http", "https", "socks5"}, u.Scheme) || u.Host == "") {
			err = errors.New("want http://, https:// or socks5:// and a host")
		}
		if err != nil {
			return fmt.Errorf("%s %q is not a usable proxy URL, use e.g. http://proxy.example.com:3128: %w", c.origin("proxy_url"), redactURL(c.ProxyURL), err)
		}
	}
	return nil
}

// get returns the string attribute named attribute.
func (c Config) get(attribute string) string {
	for _, s := range c.stringSettings() {
		if s.attribute == attribute {
			return *s.value
		}
	}
	return ""
}

// serverURL validates host and gives a bare "host[:port]" the https scheme.
// Left to client-go, a scheme-less host means plain http, and client-go then
// silently drops the token, client certificate and exec credentials.
func serverURL(name, host string) (string, error) {
	server := host
	if !strings.Contains(host, "://") {
		server = "https://" + host
	}
	u, err := url.Parse(server)
	if err == nil && (u.Scheme != "https" && u.Scheme != "http" || u.Hostname() == "") {
		err = errors.New("want https://host[:port] or host[:port]")
	}
	if err != nil {
		return "", fmt.Errorf("%s %q is not a valid Kubernetes API server URL, use e.g. https://203.0.113.10:6443: %w", name, host, err)
	}
	return server, nil
}

// existingPath expands a leading "~/" and checks that the file exists, naming
// the setting in the error.
func existingPath(name, path string) (string, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s %q: cannot expand ~, use an absolute path: %w", name, path, err)
		}
		path = filepath.Join(home, rest)
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s: kubeconfig file %q cannot be used, point %s at an existing, readable file: %w", name, path, name, err)
	}
	return path, nil
}

// overrides layers the explicit settings over whatever the kubeconfig says.
// Unlike hashicorp/kubernetes, proxy_url overrides the kubeconfig cluster's
// proxy-url too: every explicit setting wins.
func (c Config) overrides() *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{CurrentContext: c.ConfigContext}
	o.Context.AuthInfo = c.ConfigContextAuthInfo
	o.Context.Cluster = c.ConfigContextCluster
	o.ClusterInfo.Server = c.Host
	o.ClusterInfo.CertificateAuthorityData = []byte(c.ClusterCACertificate)
	o.ClusterInfo.InsecureSkipTLSVerify = c.Insecure
	o.ClusterInfo.TLSServerName = c.TLSServerName
	o.ClusterInfo.ProxyURL = c.ProxyURL
	o.AuthInfo.Token = c.Token
	o.AuthInfo.Username = c.Username
	o.AuthInfo.Password = c.Password
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
	build func() (*Connection, error)
}

// NewLazy returns a Lazy that builds c.Connect(userAgent) on first use.
func NewLazy(c Config, userAgent string) *Lazy {
	return &Lazy{build: sync.OnceValues(func() (*Connection, error) {
		return c.Connect(userAgent)
	})}
}

// Connection returns the shared connection, building it on the first call.
func (l *Lazy) Connection() (*Connection, error) {
	return l.build()
}

// RESTConfig returns the shared client configuration, building it on the
// first call. Every caller gets the same pointer: treat it as read-only and
// use rest.CopyConfig before changing anything.
func (l *Lazy) RESTConfig() (*rest.Config, error) {
	conn, err := l.build()
	if err != nil {
		return nil, err
	}
	return conn.REST, nil
}
