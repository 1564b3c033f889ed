// Package reconcilerinstall installs the in-cluster reconciler
// (`terraform-provider-kmshealth reconcile`): its ServiceAccount, its
// least-privilege RBAC, its record of what to keep, the Deployment, a
// PodDisruptionBudget and the metrics Service. It is a declaration over
// package install: Build is pure (a Config in, apply configurations out),
// Declare lists them with the rules that are the reconciler's own, and
// install's Observe, Drift, Apply, Delete and WaitForRollout do the rest.
// The Terraform resource kmshealth_reconciler is glue over this package.
package reconcilerinstall

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// Names and values shared with the provider, the docs and the tests.
const (
	// DefaultName is the default name of the ServiceAccount and Deployment.
	DefaultName = "kmshealth-reconciler"
	// DefaultReplicas run behind leader election: one writes, one waits.
	DefaultReplicas = 2
	// ContainerName is the reconciler's container in the Deployment.
	ContainerName = "reconciler"
	// LeaseName is the reconcile mode's --leader-elect-lease-name default,
	// and the Lease of an installation named DefaultName (see Config.Lease).
	LeaseName = "kmshealth-reconciler"
	// MetricsPort serves /metrics (HTTPS, TokenReview + SubjectAccessReview),
	// HealthPort /healthz and /readyz.
	MetricsPort = 8443
	HealthPort  = 8081
	// RunAsUser is the distroless "nonroot" user.
	RunAsUser = 65532

	DefaultCPURequest    = "10m"
	DefaultMemoryRequest = "32Mi"
	DefaultMemoryLimit   = "256Mi" // MemoryLimitFor(MaxDocumentedKept, MaxDocumentedKept): sizing.go

	// NameValue (of install.NameLabel) and NamespaceLabel (= Config.Namespace)
	// are the reconciler's part of the labels that mark every object of one
	// installation (see install.Owner); install.ComponentLabel tells the
	// Roles apart.
	NameValue      = "kmshealth-reconciler"
	NamespaceLabel = "kmshealth.io/reconciler-namespace"
	// SourcesAnnotation on a sources Role lists the CA bundle sources
	// (Kind/namespace/name/key, comma-separated) it grants, keys included,
	// which RBAC resourceNames cannot hold.
	SourcesAnnotation = "kmshealth.io/ca-bundle-sources"

	ComponentReconciler    = "reconciler"
	ComponentLeaderElect   = "leader-election"
	ComponentMetrics       = "metrics"
	ComponentRecord        = "record"
	ComponentEvents        = "events"
	recordSuffix           = "-record"
	podSecurityEnforce     = "pod-security.kubernetes.io/enforce"
	podSecurityRestricted  = "restricted"
	maxNameLength          = validation.DNS1035LabelMaxLength - len(metricsSuffix)
	metricsSuffix          = "-metrics"
	leaderElectionSuffix   = "-leader-election"
	sourcesRolePrefix      = "kmshealth-reconciler-"
	clusterRolePrefix      = "kmshealth-reconciler:"
	podNamespaceEnv        = "POD_NAMESPACE"
	metricsPortName        = "metrics"
	healthPortName         = "health"
	hostnameTopologyKey    = "kubernetes.io/hostname"
	antiAffinityPreference = 100
)

// Config is one installation of the reconciler.
type Config struct {
	Namespace       string // where it runs; holds the Lease
	Name            string // ServiceAccount, Deployment, PodDisruptionBudget; prefix of the Service
	CreateNamespace bool   // create Namespace and delete it on Delete
	Image           string
	Replicas        int32
	// CABundles are the APIServices the reconciler keeps, each with its
	// CA bundle source: the record lists them, RBAC grants exactly these
	// APIServices and sources.
	CABundles map[string]cabundle.Source
	// WebhookCABundles are the webhook configurations and CRD conversion
	// webhooks the reconciler keeps, each with the webhooks it owns and
	// its CA bundle source: the record lists them, RBAC grants exactly
	// these objects and sources, and the admission policy lets it change
	// only their caBundles.
	WebhookCABundles []cabundle.Kept
	// KMSTarget is the object the KMS health reporters write to, where the
	// aggregator rolls their conditions up; the zero value means the
	// default KMSHealth object "cluster".
	KMSTarget kmshealth.Target
	// KMSMaxStaleness is how old a node's last KMS check may be (4 × the
	// reporters' probe interval); zero means the default.
	KMSMaxStaleness time.Duration
	// FieldManager is the server-side apply field manager the reconciler
	// writes caBundles as: the field_manager of the
	// kmshealth_apiservice_cabundle resources it keeps (default kmshealth),
	// so the two never take the field from each other.
	FieldManager string
	// TLSProfiles are the kmshealth_tls_profile_configmap ConfigMaps the
	// reconciler keeps (record entries tlsprofile.*), each with its rollout
	// targets: RBAC grants exactly these ConfigMaps and targets, and the
	// admission policies let it change only profile.json and the targets'
	// hash annotation.
	TLSProfiles []TLSProfile
	// RBACProxies are the kmshealth_rbac_proxy_sidecar workloads whose
	// sidecar the reconciler puts back (record entries rbacproxy.*), each
	// with the sidecar whole: RBAC grants exactly these workloads and their
	// config ConfigMaps, and the admission policy pins the sidecar it may
	// write to exactly this container and these volumes.
	RBACProxies []RBACProxy
	// AdmissionPolicy installs the ValidatingAdmissionPolicies under which
	// the reconciler's ServiceAccount may change only the fields it owns
	// (needs admissionregistration.k8s.io/v1, Kubernetes 1.30 or later).
	AdmissionPolicy bool
	// Monitoring, when set, adds the prometheus-operator objects
	// (monitoring.go).
	Monitoring *Monitoring
	// Resources are the container's requests and limits.
	install.Resources
}

// DefaultResources are the reconciler container's requests and limits.
func DefaultResources() install.Resources {
	return install.Resources{CPURequest: DefaultCPURequest, MemoryRequest: DefaultMemoryRequest, MemoryLimit: DefaultMemoryLimit}
}

// ValidateName checks an installation name: a DNS-1035 label short enough
// that "<name>-metrics" is a valid Service name.
func ValidateName(name string) []string {
	msgs := validation.IsDNS1035Label(name)
	if len(name) > maxNameLength {
		msgs = append(msgs, fmt.Sprintf("must be no more than %d characters, so that the Service %q is a valid name", maxNameLength, name+metricsSuffix))
	}
	return msgs
}

// Validate reports every problem at once; the provider checks the same at
// plan time, attribute by attribute.
func (c Config) Validate() error {
	var errs []error
	for _, m := range install.ValidateNamespace(c.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, m))
	}
	for _, m := range ValidateName(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", c.Name, m))
	}
	if err := install.ValidateImage(c.Image); err != nil {
		errs = append(errs, fmt.Errorf("image: %w", err))
	}
	if c.Replicas < 1 {
		errs = append(errs, fmt.Errorf("replicas %d: must be at least 1", c.Replicas))
	}
	errs = append(errs, c.validatePatterns()...)
	errs = append(errs, c.validateMonitoring()...)
	errs = append(errs, c.Resources.Validate()...)
	errs = append(errs, c.validateMemory()...)
	return errors.Join(errs...)
}

// ID is the import ID: <namespace>/<name>.
func (c Config) ID() string { return install.ImportID(c.Namespace, c.Name) }

// ParseID splits an import ID.
func ParseID(id string) (namespace, name string, err error) {
	return install.ParseID(id, "kmshealth-system/"+DefaultName, ValidateName)
}

// ServiceAccountName is the reconciler's ServiceAccount in Namespace.
func (c Config) ServiceAccountName() string { return c.Name }

// ClusterRoleName names the ClusterRole and its ClusterRoleBinding. The
// colons cannot occur in a namespace or name, so two installations never
// share it.
func (c Config) ClusterRoleName() string { return clusterRolePrefix + c.Namespace + ":" + c.Name }

// LeaderElectionRoleName names the Role and RoleBinding for the Lease.
func (c Config) LeaderElectionRoleName() string { return c.Name + leaderElectionSuffix }

// MetricsServiceName is the Service in front of /metrics.
func (c Config) MetricsServiceName() string { return c.Name + metricsSuffix }

// RecordName is the ConfigMap in Namespace that records what the
// reconciler keeps (--record-configmap).
func (c Config) RecordName() string { return c.Name + recordSuffix }

// owner is the installation namespace/name, whose labels mark its objects.
func owner(namespace, name string) install.Owner {
	return install.Owner{App: NameValue, NamespaceLabel: NamespaceLabel, Namespace: namespace, Name: name}
}

// Labels are on every object of the installation.
func (c Config) Labels(component string) map[string]string {
	return owner(c.Namespace, c.Name).Labels(component)
}

// SelectorLabels select the reconciler's pods.
func (c Config) SelectorLabels() map[string]string {
	return owner(c.Namespace, c.Name).SelectorLabels()
}
