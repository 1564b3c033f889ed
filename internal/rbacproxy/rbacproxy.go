// Package rbacproxy is pattern 3: kube-rbac-proxy as a native sidecar in
// front of a workload's HTTP API. It validates what the user asked for,
// renders the proxy's config file and arguments, and builds the apply
// configurations kmshealth owns (the config ConfigMap, the
// system:auth-delegator binding, the sidecar in the pod template, the
// Service port and the NetworkPolicy), each holding only kmshealth's
// fields, for server-side apply under FieldManager. It also compares a
// live pod template with the desired sidecar. The Terraform resource and
// the reconciler both call it, so the two always write the same fields.
//
// Only cluster.go talks to the API server (read, check, apply in order,
// compare, uninstall), and for the objects kmshealth owns outright it
// declares them to package install rather than writing them itself;
// everything else is pure.
package rbacproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Names shared with the provider, the reconciler, the docs and the tests.
const (
	// FieldManager owns every field this package builds, whoever writes
	// it: kmshealth_rbac_proxy_sidecar and the reconciler's re-injection.
	FieldManager = kube.FieldManager

	// DefaultImage is the kube-rbac-proxy release the end-to-end tests build
	// (tools/kube-rbac-proxy) and run, so the default is the tested one;
	// its release is DefaultVersion.
	DefaultImage = "quay.io/brancz/kube-rbac-proxy:" + DefaultVersion
	// DefaultListenPort is where the proxy serves the protected API.
	DefaultListenPort int32 = 8443
	// DefaultHealthPort serves the proxy's own /healthz over HTTPS
	// (--proxy-endpoints-port), unauthenticated, for kubelet probes. It is
	// the port kube-rbac-proxy's own end-to-end manifests use.
	DefaultHealthPort int32 = 8643
	// DefaultTLSMinVersion is passed explicitly, so a change of the proxy's
	// own default can never loosen a deployed sidecar.
	DefaultTLSMinVersion = "VersionTLS12"
	// LogVerbosity is the proxy's klog level: 2 logs every denied request
	// with its reason, which is what an operator needs from a security proxy.
	LogVerbosity = 2

	// ContainerName is the sidecar's name in spec.template.spec.initContainers.
	ContainerName = "kmshealth-rbac-proxy"
	// ConfigVolumeName and TLSVolumeName are the sidecar's pod volumes.
	ConfigVolumeName = "kmshealth-rbac-proxy-config"
	TLSVolumeName    = "kmshealth-rbac-proxy-tls"
	// ListenPortName, InsecurePortName and HealthPortName name the sidecar's
	// container ports (at most 15 characters, unlikely to clash with the
	// workload's own port names).
	ListenPortName   = "krp-https"
	InsecurePortName = "krp-http"
	HealthPortName   = "krp-health"
	// ServicePortName names the port added to the Service.
	ServicePortName = "kmshealth-rbac-proxy"

	// ConfigDir is where the config volume is mounted; ConfigFileKey is the
	// ConfigMap key (and file name) of the proxy's config file.
	ConfigDir      = "/etc/kmshealth-rbac-proxy/config"
	ConfigFileKey  = "config.yaml"
	ConfigFilePath = ConfigDir + "/" + ConfigFileKey
	// TLSDir is where the TLS Secret is mounted; it must hold the
	// kubernetes.io/tls keys TLSCertKey and TLSPrivateKeyKey.
	TLSDir           = "/etc/kmshealth-rbac-proxy/tls"
	TLSCertKey       = "tls.crt"
	TLSPrivateKeyKey = "tls.key"
	// HealthPath is the proxy's health endpoint on HealthPort.
	HealthPath = "/healthz"

	// RecordKey is the ConfigMap key of the record: the defaulted Config as
	// JSON, from which the reconciler re-injects the sidecar.
	RecordKey = "record.json"

	// ConfigHashAnnotation on the pod template carries ConfigHash, so a
	// config change rolls the pods.
	ConfigHashAnnotation = "kmshealth.io/rbac-proxy-config-hash"
	// ForLabel marks every object this package builds with the workload it
	// is for ("deployment.web"; shortened with a hash when too long): the
	// reconciler lists the config ConfigMaps by this label.
	ForLabel = "kmshealth.io/rbac-proxy-for"
	// TargetAnnotation names the workload exactly ("Deployment/ns/web").
	TargetAnnotation = "kmshealth.io/rbac-proxy-target"
	// ManagedByLabel/ManagedByValue mark objects kmshealth created and may delete.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kmshealth"

	// AuthDelegatorClusterRole lets the pod's ServiceAccount create
	// TokenReviews and SubjectAccessReviews.
	AuthDelegatorClusterRole = "system:auth-delegator"
)

// Kind is the kind of the protected workload.
type Kind = kube.WorkloadKind

// The kinds that can be protected.
const (
	KindDeployment  = kube.KindDeployment
	KindStatefulSet = kube.KindStatefulSet
	KindDaemonSet   = kube.KindDaemonSet
)

// Kinds lists the kinds that can be protected.
func Kinds() []Kind { return kube.WorkloadKinds() }

// Target names the protected workload; its String is "Kind/namespace/name".
type Target = kube.Workload

// Config is one protected workload: what the user asked for. Zero values
// mean the defaults (see Defaulted). JSON field names are the names
// field errors name, and the record's encoding.
type Config struct {
	Target Target `json:"target"`
	// UpstreamPort is the port in the pod the proxy fronts, proxied as
	// http://127.0.0.1:<port>/; the upstream should listen on loopback only.
	UpstreamPort int32  `json:"upstreamPort"`
	ListenPort   int32  `json:"listenPort,omitempty"` // default DefaultListenPort
	HealthPort   int32  `json:"healthPort,omitempty"` // default DefaultHealthPort
	Image        string `json:"image,omitempty"`      // default DefaultImage
	// ProxyVersion is the kube-rbac-proxy release the image is built from,
	// for an image whose tag does not say it (a digest only, a mirror's
	// own tags); empty means the tag's release. Its flag set (FlagSets)
	// is what the arguments are checked against.
	ProxyVersion string    `json:"proxyVersion,omitempty"`
	Resources    Resources `json:"resources,omitzero"`

	Authorization Authorization `json:"authorization,omitzero"`
	// IgnorePaths are served without authentication or authorization;
	// AllowPaths are the only paths served (others get 404). path.Match
	// patterns; at most one of the two.
	IgnorePaths []string `json:"ignorePaths,omitempty"`
	AllowPaths  []string `json:"allowPaths,omitempty"`

	TLS TLS `json:"tls,omitzero"`
	// InsecureListen serves plain HTTP on ListenPort instead of HTTPS
	// (deprecated upstream; see Warnings).
	InsecureListen bool `json:"insecureListen,omitempty"`

	// ServiceAccountName is the pod's ServiceAccount ("default" when the
	// pod template names none): the sidecar authenticates with its token,
	// so it is the one bound to system:auth-delegator.
	ServiceAccountName string `json:"serviceAccountName"`
	// ServiceName, when set, gets the proxy port.
	ServiceName   string        `json:"serviceName,omitempty"`
	NetworkPolicy NetworkPolicy `json:"networkPolicy,omitzero"`
}

// Resources are the sidecar's requests and limits: resource name →
// quantity ("cpu": "10m", "memory": "32Mi").
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Authorization is what each request is authorized as. Without
// ResourceAttributes the proxy sends a non-resource SubjectAccessReview
// (the request path and the verb from the HTTP method).
type Authorization struct {
	ResourceAttributes *ResourceAttributes `json:"resourceAttributes,omitempty"`
	// Rewrites fill "{{ .Value }}" in ResourceAttributes from the request.
	Rewrites *Rewrites `json:"rewrites,omitempty"`
}

// ResourceAttributes are the SubjectAccessReview's resource attributes.
// With Rewrites, each field is a Go text/template over {{ .Value }}.
type ResourceAttributes struct {
	Namespace   string `json:"namespace,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
}

// Rewrites name where {{ .Value }} comes from: every value of the query
// parameter and of the header, each authorized on its own.
type Rewrites struct {
	ByQueryParameter string `json:"byQueryParameter,omitempty"` // the parameter's name
	ByHTTPHeader     string `json:"byHTTPHeader,omitempty"`     // the header's name
}

// TLS configures the proxy's HTTPS listener.
type TLS struct {
	// SecretName is a kubernetes.io/tls Secret in the workload's namespace;
	// empty means the proxy's own in-memory self-signed certificate.
	SecretName string `json:"secretName,omitempty"`
	// MinVersion is VersionTLS10..VersionTLS13 (default
	// DefaultTLSMinVersion); CipherSuites are IANA names, as a TLS profile
	// resolves them (empty: Go's defaults).
	MinVersion   string   `json:"minVersion,omitempty"`
	CipherSuites []string `json:"cipherSuites,omitempty"`
}

// NetworkPolicy admits traffic to the workload's pods only on the proxy
// port, from pods matching both selectors (a missing selector does not
// restrict; neither admits every source, still subject to RBAC).
type NetworkPolicy struct {
	Enabled               bool                  `json:"enabled,omitempty"`
	FromNamespaceSelector *metav1.LabelSelector `json:"fromNamespaceSelector,omitempty"`
	FromPodSelector       *metav1.LabelSelector `json:"fromPodSelector,omitempty"`
}

// Defaulted returns c with the defaults filled in. Every function of this
// package applies it first, so callers need not.
func (c Config) Defaulted() Config {
	if c.ListenPort == 0 {
		c.ListenPort = DefaultListenPort
	}
	if c.HealthPort == 0 {
		c.HealthPort = DefaultHealthPort
	}
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.TLS.MinVersion == "" && !c.InsecureListen {
		c.TLS.MinVersion = DefaultTLSMinVersion
	}
	// Empty and absent are the same, so the record does not depend on
	// which one a caller passes.
	if len(c.Resources.Requests) == 0 {
		c.Resources.Requests = nil
	}
	if len(c.Resources.Limits) == 0 {
		c.Resources.Limits = nil
	}
	return c
}

// ObjectName names the config ConfigMap and the NetworkPolicy (both in the
// workload's namespace): "kmshealth-rbac-proxy-<kind>-<name>".
func ObjectName(t Target) string {
	return shorten("kmshealth-rbac-proxy-"+strings.ToLower(string(t.Kind))+"-"+t.Name, 253)
}

// ClusterRoleBindingName names the workload's system:auth-delegator
// binding: "kmshealth-rbac-proxy:<namespace>:<kind>:<name>". One binding
// per workload, so destroying one protection never unbinds another's
// ServiceAccount.
func ClusterRoleBindingName(t Target) string {
	return shorten("kmshealth-rbac-proxy:"+t.Namespace+":"+strings.ToLower(string(t.Kind))+":"+t.Name, 253)
}

// ForLabelValue is ForLabel's value for t: "<kind>.<name>", shortened to
// a valid label value when longer than 63 characters.
func ForLabelValue(t Target) string {
	return shorten(strings.ToLower(string(t.Kind))+"."+t.Name, 63)
}

// labels and annotations every object of ours carries.
func ourLabels(t Target) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, ForLabel: ForLabelValue(t)}
}

func ourAnnotations(t Target) map[string]string {
	return map[string]string{TargetAnnotation: t.String()}
}

// shorten keeps s when it fits in max, else cuts it and appends a hash of
// the whole, so distinct long names stay distinct and end alphanumeric.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	head := strings.TrimRight(s[:max-len(suffix)], "-_.:")
	return head + suffix
}
