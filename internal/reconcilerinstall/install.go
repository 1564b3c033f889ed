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
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
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
	DefaultMemoryLimit   = "128Mi"

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
	ComponentSources       = "ca-bundle-sources"
	ComponentMetrics       = "metrics"
	ComponentRecord        = "record"
	ComponentEvents        = "events"
	ComponentTLSProfiles   = "tls-profiles"
	ComponentRBACProxies   = "rbac-proxies"
	recordSuffix           = "-record"
	podSecurityEnforce     = "pod-security.kubernetes.io/enforce"
	podSecurityRestricted  = "restricted"
	maxNameLength          = validation.DNS1035LabelMaxLength - len(metricsSuffix)
	metricsSuffix          = "-metrics"
	leaderElectionSuffix   = "-leader-election"
	sourcesRolePrefix      = "kmshealth-reconciler-"
	sourcesRoleSuffix      = "-sources"
	tlsProfilesRoleSuffix  = "-tls-profiles"
	rbacProxiesRoleSuffix  = "-rbac-proxies"
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
	// reconciler keeps (--tls-profile-configmaps), each with its rollout
	// targets: RBAC grants exactly these ConfigMaps and targets, and the
	// admission policies let it change only profile.json and the targets'
	// hash annotation.
	TLSProfiles []TLSProfile
	// RBACProxies are the kmshealth_rbac_proxy_sidecar workloads whose
	// sidecar the reconciler puts back (--rbac-proxy-configmaps), each
	// with the sidecar's image and arguments: RBAC grants exactly these
	// workloads and their config ConfigMaps, and the admission policy pins
	// the sidecar it may write to this image and these arguments.
	RBACProxies []RBACProxy
	// AdmissionPolicy installs the ValidatingAdmissionPolicies under which
	// the reconciler's ServiceAccount may change only the fields it owns
	// (needs admissionregistration.k8s.io/v1, Kubernetes 1.30 or later).
	AdmissionPolicy bool
	// Resources are the container's requests and limits.
	install.Resources
}

// TLSProfile is one profile ConfigMap and the workloads it rolls.
type TLSProfile struct {
	Namespace string              `json:"namespace"`
	Name      string              `json:"name"`
	Targets   []tlsprofile.Target `json:"rolloutTargets"`
}

// ID is <namespace>/<name>, as --tls-profile-configmaps takes it.
func (p TLSProfile) ID() string { return p.Namespace + "/" + p.Name }

// RBACProxy is one protected workload and the sidecar it carries.
type RBACProxy struct {
	Target rbacproxy.Target `json:"target"`
	Image  string           `json:"image"`
	Args   []string         `json:"args"`
}

// ConfigMapID is <namespace>/<name> of the workload's config ConfigMap,
// as --rbac-proxy-configmaps takes it.
func (p RBACProxy) ConfigMapID() string {
	return p.Target.Namespace + "/" + rbacproxy.ObjectName(p.Target)
}

// resource is the workload's apps/v1 resource.
func (p RBACProxy) resource() string { return strings.ToLower(string(p.Target.Kind)) + "s" }

// DefaultKMSMaxStaleness matches the reporters' default 30 s interval.
const DefaultKMSMaxStaleness = kmshealth.StalenessFactor * kmshealth.DefaultInterval

// kmsTarget is KMSTarget with the default filled in.
func (c Config) kmsTarget() kmshealth.Target {
	if c.KMSTarget == (kmshealth.Target{}) {
		return kmshealth.DefaultTarget()
	}
	return c.KMSTarget
}

// fieldManager is FieldManager with the default filled in.
func (c Config) fieldManager() string {
	if c.FieldManager == "" {
		return cabundle.DefaultFieldManager
	}
	return c.FieldManager
}

// kmsMaxStaleness is KMSMaxStaleness with the default filled in.
func (c Config) kmsMaxStaleness() time.Duration {
	if c.KMSMaxStaleness <= 0 {
		return DefaultKMSMaxStaleness
	}
	return c.KMSMaxStaleness
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
	for _, apiservice := range slices.Sorted(maps.Keys(c.CABundles)) {
		for _, m := range validation.IsDNS1123Subdomain(apiservice) {
			errs = append(errs, fmt.Errorf("ca_bundles: APIService name %q: %s", apiservice, m))
		}
		if s := c.CABundles[apiservice]; s.Validate() != nil {
			errs = append(errs, fmt.Errorf("ca_bundles[%q]: source %q: %w", apiservice, s, s.Validate()))
		}
	}
	errs = append(errs, c.validateWebhookCABundles()...)
	if c.KMSTarget != (kmshealth.Target{}) {
		if err := c.KMSTarget.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("kms_target: %w", err))
		}
	}
	if c.KMSMaxStaleness < 0 {
		errs = append(errs, fmt.Errorf("kms_max_staleness %s: must be positive", c.KMSMaxStaleness))
	}
	errs = append(errs, c.validateTLSProfiles()...)
	errs = append(errs, c.validateRBACProxies()...)
	errs = append(errs, c.Resources.Validate()...)
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

// SourcesRoleName names the Role and RoleBinding in each source namespace.
func (c Config) SourcesRoleName() string { return sourcesRolePrefix + c.Name + sourcesRoleSuffix }

// MetricsServiceName is the Service in front of /metrics.
func (c Config) MetricsServiceName() string { return c.Name + metricsSuffix }

// RecordName is the ConfigMap in Namespace that records what the
// reconciler keeps (--record-configmap).
func (c Config) RecordName() string { return c.Name + recordSuffix }

// Sources are the CA bundle sources, sorted, without duplicates.
func (c Config) Sources() []cabundle.Source {
	out := make([]cabundle.Source, 0, len(c.CABundles))
	for _, s := range c.CABundles {
		out = append(out, s)
	}
	for _, k := range c.WebhookCABundles {
		out = append(out, k.Source)
	}
	return sortedSources(out)
}

// WebhookNames are the kept objects of kind, sorted.
func (c Config) WebhookNames(kind string) []string {
	var out []string
	for _, k := range c.WebhookCABundles {
		if k.Target.Kind == kind {
			out = append(out, k.Target.Name)
		}
	}
	slices.Sort(out)
	return out
}

// validateWebhookCABundles checks each kept object: a kind kmshealth
// injects, valid names, webhooks only for a webhook configuration, a
// valid source, each object once.
func (c Config) validateWebhookCABundles() []error {
	var errs []error
	seen := map[string]bool{}
	for i, k := range c.WebhookCABundles {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("webhook_ca_bundles[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		t := k.Target
		if !slices.Contains(cabundle.WebhookKinds(), t.Kind) {
			bad("kind %q: must be one of %s", t.Kind, strings.Join(cabundle.WebhookKinds(), ", "))
		}
		for _, m := range validation.IsDNS1123Subdomain(t.Name) {
			bad("name %q: %s", t.Name, m)
		}
		if t.Kind == cabundle.KindCustomResourceDefinition && len(t.Webhooks) > 0 {
			bad("webhooks: a CustomResourceDefinition has one conversion webhook; remove webhooks")
		}
		for _, w := range t.Webhooks {
			for _, m := range validation.IsDNS1123Subdomain(w) {
				bad("webhook %q: %s", w, m)
			}
		}
		if err := k.Source.Validate(); err != nil {
			bad("source %q: %v", k.Source, err)
		}
		if seen[t.String()] {
			bad("%s is named twice", t)
		}
		seen[t.String()] = true
	}
	return errs
}

// APIServices are the kept APIServices, sorted.
func (c Config) APIServices() []string { return slices.Sorted(maps.Keys(c.CABundles)) }

// SourceNamespaces are the namespaces that get a sources Role, sorted.
func (c Config) SourceNamespaces() []string {
	var out []string
	for _, s := range c.Sources() {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

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

// sortedSources returns the sources sorted by their string form, without
// duplicates.
func sortedSources(in []cabundle.Source) []cabundle.Source {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b cabundle.Source) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// validateTLSProfiles checks the names RBAC will carry; each profile once.
func (c Config) validateTLSProfiles() []error {
	var errs []error
	seen := map[string]bool{}
	for i, p := range c.TLSProfiles {
		at := fmt.Sprintf("tls_profiles[%d]", i)
		if seen[p.ID()] {
			errs = append(errs, fmt.Errorf("%s: %s is listed twice: list each profile ConfigMap once", at, p.ID()))
		}
		seen[p.ID()] = true
		for _, m := range validation.IsDNS1123Label(p.Namespace) {
			errs = append(errs, fmt.Errorf("%s.namespace %q: %s", at, p.Namespace, m))
		}
		for _, m := range validation.IsDNS1123Subdomain(p.Name) {
			errs = append(errs, fmt.Errorf("%s.name %q: %s", at, p.Name, m))
		}
		for j, t := range p.Targets {
			tat := fmt.Sprintf("%s.rollout_targets[%d]", at, j)
			if _, err := t.GVR(); err != nil {
				errs = append(errs, fmt.Errorf("%s.kind: %w", tat, err))
			}
			for _, m := range validation.IsDNS1123Label(t.Namespace) {
				errs = append(errs, fmt.Errorf("%s.namespace %q: %s", tat, t.Namespace, m))
			}
			for _, m := range validation.IsDNS1123Subdomain(t.Name) {
				errs = append(errs, fmt.Errorf("%s.name %q: %s", tat, t.Name, m))
			}
		}
	}
	return errs
}

// TLSNamespaces are the namespaces that get a TLS profiles Role: those of
// the profile ConfigMaps and of their targets, sorted.
func (c Config) TLSNamespaces() []string {
	var out []string
	for _, p := range c.TLSProfiles {
		out = append(out, p.Namespace)
		for _, t := range p.Targets {
			out = append(out, t.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TLSProfileRoleName names the Role and RoleBinding in each namespace of
// TLSNamespaces.
func (c Config) TLSProfileRoleName() string {
	return sourcesRolePrefix + c.Name + tlsProfilesRoleSuffix
}

// tlsTargets are the rollout targets of every profile, sorted, once each.
func (c Config) tlsTargets() []tlsprofile.Target {
	var out []tlsprofile.Target
	for _, p := range c.TLSProfiles {
		out = append(out, p.Targets...)
	}
	slices.SortFunc(out, func(a, b tlsprofile.Target) int {
		return strings.Compare(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
	})
	return slices.Compact(out)
}

// validateRBACProxies checks the workloads RBAC will name and the pinned
// sidecar; each workload once.
func (c Config) validateRBACProxies() []error {
	var errs []error
	seen := map[rbacproxy.Target]bool{}
	for i, p := range c.RBACProxies {
		at := fmt.Sprintf("rbac_proxy_sidecars[%d]", i)
		if seen[p.Target] {
			errs = append(errs, fmt.Errorf("%s: %s is listed twice: list each protected workload once", at, p.Target))
		}
		seen[p.Target] = true
		if !slices.Contains(rbacproxy.Kinds(), p.Target.Kind) {
			errs = append(errs, fmt.Errorf("%s.target.kind %q: must be one of %q", at, p.Target.Kind, rbacproxy.Kinds()))
		}
		for _, m := range validation.IsDNS1123Label(p.Target.Namespace) {
			errs = append(errs, fmt.Errorf("%s.target.namespace %q: %s", at, p.Target.Namespace, m))
		}
		for _, m := range validation.IsDNS1123Subdomain(p.Target.Name) {
			errs = append(errs, fmt.Errorf("%s.target.name %q: %s", at, p.Target.Name, m))
		}
		if err := install.ValidateImage(p.Image); err != nil {
			errs = append(errs, fmt.Errorf("%s.image: %w", at, err))
		}
		if len(p.Args) == 0 {
			errs = append(errs, fmt.Errorf("%s.args: must not be empty: use the sidecar resource's args", at))
		}
	}
	return errs
}

// RBACProxyNamespaces are the namespaces that get an rbac proxies Role,
// sorted.
func (c Config) RBACProxyNamespaces() []string {
	var out []string
	for _, p := range c.RBACProxies {
		out = append(out, p.Target.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RBACProxyRoleName names the Role and RoleBinding in each namespace of
// RBACProxyNamespaces.
func (c Config) RBACProxyRoleName() string { return sourcesRolePrefix + c.Name + rbacProxiesRoleSuffix }
