package kube

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Connection is a client configuration and, for error messages, where its
// parts came from: which settings chose the server, the proxy and the
// credentials.
type Connection struct {
	REST *rest.Config
	// Server is the API server URL requests go to.
	Server string
	// ServerFrom says which settings chose Server, e.g. "the host
	// attribute" or "the server of cluster "c" of context "x" in kubeconfig
	// "/k" (KUBE_CONFIG_PATH environment variable)".
	ServerFrom string
	// Proxy is the proxy requests go through and why; "" for none.
	Proxy string
	// Credentials lists the credentials requests carry and where each came
	// from; "none" when requests are anonymous.
	Credentials []string
	// InCluster: the configuration is the pod's ServiceAccount.
	InCluster bool
}

// describe names where attribute's value came from, in words: "host
// attribute" or "KUBE_HOST environment variable".
func (c Config) describe(attribute string) string {
	if slices.Contains(c.fromEnv, attribute) {
		return EnvVar(attribute) + " environment variable"
	}
	return attribute + " attribute"
}

// kubeconfigChoice is what was picked from the kubeconfig file(s) and why,
// for messages. Zero when no kubeconfig is configured.
type kubeconfigChoice struct {
	files       string // `kubeconfig "/k" (config_path attribute)`
	context     string
	contextFrom string
	clusterName string
	clusterFrom string
	userName    string
	userFrom    string
}

func (c Config) kubeconfigChoice(kubeconfig *clientcmdapi.Config) kubeconfigChoice {
	var k kubeconfigChoice
	switch {
	case c.ConfigPath != "":
		k.files = fmt.Sprintf("kubeconfig %q (%s)", c.ConfigPath, c.describe("config_path"))
	case len(c.ConfigPaths) > 0:
		quoted := make([]string, len(c.ConfigPaths))
		for i, p := range c.ConfigPaths {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		k.files = fmt.Sprintf("kubeconfigs %s (%s)", strings.Join(quoted, ", "), c.describe("config_paths"))
	default:
		return k
	}
	k.context, k.contextFrom = kubeconfig.CurrentContext, "the current context"
	if c.ConfigContext != "" {
		k.context, k.contextFrom = c.ConfigContext, "chosen by the "+c.describe("config_context")
	}
	if ctx, ok := kubeconfig.Contexts[k.context]; ok {
		k.clusterName, k.userName = ctx.Cluster, ctx.AuthInfo
	}
	if c.ConfigContextCluster != "" {
		k.clusterName, k.clusterFrom = c.ConfigContextCluster, "chosen by the "+c.describe("config_context_cluster")
	}
	if c.ConfigContextAuthInfo != "" {
		k.userName, k.userFrom = c.ConfigContextAuthInfo, "chosen by the "+c.describe("config_context_auth_info")
	}
	return k
}

// cluster describes the kubeconfig cluster in use and how it was chosen.
func (k kubeconfigChoice) cluster() string {
	return k.entry("cluster", k.clusterName, k.clusterFrom)
}

// user describes the kubeconfig user in use and how it was chosen.
func (k kubeconfigChoice) user() string {
	return k.entry("user", k.userName, k.userFrom)
}

func (k kubeconfigChoice) entry(what, name, from string) string {
	s := fmt.Sprintf("%s %q", what, name)
	if from != "" {
		s += " (" + from + ")"
	}
	return s + fmt.Sprintf(" of context %q (%s) in %s", k.context, k.contextFrom, k.files)
}

// credentials lists the credentials cfg carries and where each came from.
func (c Config) credentials(cfg *rest.Config, k kubeconfigChoice) []string {
	from := func(attribute string, explicit bool) string {
		if explicit {
			return "from the " + c.describe(attribute)
		}
		return "of the kubeconfig " + k.user()
	}
	var creds []string
	if cfg.ExecProvider != nil {
		origin := "from the exec block"
		if c.Exec == nil {
			origin = from("", false)
		}
		creds = append(creds, fmt.Sprintf("exec plugin %q %s", cfg.ExecProvider.Command, origin))
	}
	if cfg.AuthProvider != nil {
		creds = append(creds, fmt.Sprintf("auth provider %q %s", cfg.AuthProvider.Name, from("", false)))
	}
	if cfg.BearerToken != "" || cfg.BearerTokenFile != "" {
		what := "bearer token"
		if c.Token == "" && cfg.BearerTokenFile != "" {
			what = fmt.Sprintf("bearer token file %q", cfg.BearerTokenFile)
		}
		creds = append(creds, what+" "+from("token", c.Token != ""))
	}
	if cfg.Username != "" || cfg.Password != "" {
		creds = append(creds, fmt.Sprintf("basic auth as %q %s", cfg.Username, from("username", c.Username != "" || c.Password != "")))
	}
	if len(cfg.CertData) > 0 || cfg.CertFile != "" {
		what := "client certificate"
		if len(cfg.CertData) == 0 {
			what = fmt.Sprintf("client certificate file %q", cfg.CertFile)
		}
		creds = append(creds, what+certSummary(cfg.CertData)+" "+from("client_certificate", c.ClientCertificate != ""))
	}
	if len(creds) == 0 {
		creds = append(creds, "none: requests are anonymous")
	}
	return creds
}

// certSummary is " (subject …, valid until …)" of the first certificate in
// pemData, or "" when there is none.
func certSummary(pemData []byte) string {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return ""
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" (subject %q, valid until %s)", cert.Subject.String(), cert.NotAfter.UTC().Format(time.RFC3339))
}

// proxyOrigin says which proxy requests to cfg.Host go through, and why.
func (c Config) proxyOrigin(cfg *rest.Config, kubeconfig *clientcmdapi.Config, k kubeconfigChoice) string {
	if c.ProxyURL != "" {
		return fmt.Sprintf("%s (%s)", redactURL(c.ProxyURL), c.describe("proxy_url"))
	}
	if cl, ok := kubeconfig.Clusters[k.clusterName]; ok && cl.ProxyURL != "" && k.files != "" {
		return fmt.Sprintf("%s (proxy-url of the kubeconfig %s)", redactURL(cl.ProxyURL), k.cluster())
	}
	return environmentProxy(cfg.Host)
}

// environmentProxy is the proxy HTTPS_PROXY/HTTP_PROXY/NO_PROXY choose for
// server (client-go's default when no proxy is configured), or "".
func environmentProxy(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return ""
	}
	p, err := http.ProxyFromEnvironment(&http.Request{URL: u})
	if err != nil || p == nil {
		return ""
	}
	return p.Redacted() + " (HTTPS_PROXY/HTTP_PROXY environment variables; NO_PROXY does not exclude the server)"
}

// redactURL hides the password of a URL with user information.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

// parseError is the reason of a url.Parse error without the URL itself,
// which may carry a password.
func parseError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
