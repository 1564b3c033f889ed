// Package reconcilerinstall installs the in-cluster reconciler
// (`terraform-provider-kmshealth reconcile`): its ServiceAccount, its
// least-privilege RBAC, the Deployment, a PodDisruptionBudget and the
// metrics Service. Build is pure (a Config in, apply configurations out);
// Apply, Observe, Delete and WaitForRollout are the only functions that talk
// to the API server. The Terraform resource kmshealth_reconciler is glue
// over this package.
package reconcilerinstall

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// Names and values shared with the provider, the docs and the tests.
const (
	// DefaultName is the default name of the ServiceAccount and Deployment.
	DefaultName = "kmshealth-reconciler"
	// DefaultReplicas run behind leader election: one writes, one waits.
	DefaultReplicas = 2
	// ImageRepository is where the provider's own binary is published; the
	// tag is the provider's version, so the two never skew.
	ImageRepository = "ghcr.io/kmshealth/terraform-provider-kmshealth"
	// FieldManager writes every object, as for all kmshealth resources.
	FieldManager = cabundle.DefaultFieldManager
	// ContainerName is the reconciler's container in the Deployment.
	ContainerName = "reconciler"
	// LeaseName is the reconcile mode's --leader-elect-lease-name default.
	LeaseName = "kmshealth-reconciler"
	// MetricsPort serves /metrics, HealthPort /healthz and /readyz.
	MetricsPort = 8080
	HealthPort  = 8081
	// RunAsUser is the distroless "nonroot" user.
	RunAsUser = 65532

	DefaultCPURequest    = "10m"
	DefaultMemoryRequest = "32Mi"
	DefaultMemoryLimit   = "128Mi"

	// NameLabel/NameValue, InstanceLabel (= Config.Name) and NamespaceLabel
	// (= Config.Namespace), with cabundle.ManagedByLabel, mark every object
	// of one installation; ComponentLabel tells the Roles apart.
	NameLabel      = "app.kubernetes.io/name"
	NameValue      = "kmshealth-reconciler"
	InstanceLabel  = "app.kubernetes.io/instance"
	ComponentLabel = "app.kubernetes.io/component"
	NamespaceLabel = "kmshealth.io/reconciler-namespace"
	// SourcesAnnotation on a sources Role lists the CA bundle sources
	// (Kind/namespace/name/key, comma-separated) it grants, keys included,
	// which RBAC resourceNames cannot hold.
	SourcesAnnotation = "kmshealth.io/ca-bundle-sources"

	ComponentReconciler    = "reconciler"
	ComponentLeaderElect   = "leader-election"
	ComponentSources       = "ca-bundle-sources"
	ComponentMetrics       = "metrics"
	podSecurityEnforce     = "pod-security.kubernetes.io/enforce"
	podSecurityRestricted  = "restricted"
	maxNameLength          = validation.DNS1035LabelMaxLength - len(metricsSuffix)
	metricsSuffix          = "-metrics"
	leaderElectionSuffix   = "-leader-election"
	sourcesRolePrefix      = "kmshealth-reconciler-"
	sourcesRoleSuffix      = "-sources"
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
	// Sources are the CA bundle sources the reconciler may read: RBAC
	// grants get/list/watch on exactly these objects.
	Sources       []cabundle.Source
	CPURequest    string // quantities, "" for none
	MemoryRequest string
	MemoryLimit   string
}

// DefaultImage is the image of the provider binary of version.
func DefaultImage(version string) string {
	if version == "" {
		version = "dev"
	}
	return ImageRepository + ":" + version
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

// ValidateQuantity checks a resource quantity such as 10m or 128Mi.
func ValidateQuantity(q string) error {
	if q == "" {
		return nil
	}
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return fmt.Errorf("%q is not a quantity (e.g. 10m, 0.5, 32Mi, 1Gi): %w", q, err)
	}
	if v.Sign() < 0 {
		return fmt.Errorf("%q: must not be negative", q)
	}
	return nil
}

// ValidateImage checks an image reference enough to catch typos at plan
// time; the registry has the last word.
func ValidateImage(image string) error {
	switch {
	case strings.TrimSpace(image) == "":
		return errors.New("must not be empty: omit it to deploy " + ImageRepository + ":<provider version>")
	case strings.ContainsAny(image, " \t\r\n"):
		return fmt.Errorf("%q contains whitespace: want a reference like registry.example.com/kmshealth:v1.2.3", image)
	}
	return nil
}

// Validate reports every problem at once; the provider checks the same at
// plan time, attribute by attribute.
func (c Config) Validate() error {
	var errs []error
	for _, m := range validation.IsDNS1123Label(c.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, m))
	}
	for _, m := range ValidateName(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", c.Name, m))
	}
	if err := ValidateImage(c.Image); err != nil {
		errs = append(errs, fmt.Errorf("image: %w", err))
	}
	if c.Replicas < 1 {
		errs = append(errs, fmt.Errorf("replicas %d: must be at least 1", c.Replicas))
	}
	for _, s := range c.Sources {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("source %q: %w", s, err))
		}
	}
	for what, q := range map[string]string{"cpu_request": c.CPURequest, "memory_request": c.MemoryRequest, "memory_limit": c.MemoryLimit} {
		if err := ValidateQuantity(q); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	if err := CheckMemory(c.MemoryRequest, c.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckMemory rejects a memory request above the limit, which the API
// server would refuse only at apply time.
func CheckMemory(request, limit string) error {
	if request == "" || limit == "" {
		return nil
	}
	// Unparsable quantities are ValidateQuantity's to report.
	r, err1 := resource.ParseQuantity(request)
	l, err2 := resource.ParseQuantity(limit)
	if err1 == nil && err2 == nil && r.Cmp(l) > 0 {
		return fmt.Errorf("memory_request %s is above memory_limit %s: raise the limit or lower the request", request, limit)
	}
	return nil
}

// ID is the import ID: <namespace>/<name>.
func (c Config) ID() string { return c.Namespace + "/" + c.Name }

// ParseID splits an import ID.
func ParseID(id string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(id, "/")
	if !ok || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("import ID %q: want <namespace>/<name>, e.g. kmshealth-system/%s", id, DefaultName)
	}
	var msgs []string
	for _, m := range validation.IsDNS1123Label(ns) {
		msgs = append(msgs, "namespace: "+m)
	}
	for _, m := range ValidateName(n) {
		msgs = append(msgs, "name: "+m)
	}
	if len(msgs) > 0 {
		return "", "", fmt.Errorf("import ID %q: %s", id, strings.Join(msgs, "; "))
	}
	return ns, n, nil
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

// SourceNamespaces are the namespaces that get a sources Role, sorted.
func (c Config) SourceNamespaces() []string {
	var out []string
	for _, s := range c.Sources {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Labels are on every object of the installation.
func (c Config) Labels(component string) map[string]string {
	return map[string]string{
		cabundle.ManagedByLabel: cabundle.ManagedByValue,
		NameLabel:               NameValue,
		InstanceLabel:           c.Name,
		NamespaceLabel:          c.Namespace,
		ComponentLabel:          component,
	}
}

// SelectorLabels select the reconciler's pods.
func (c Config) SelectorLabels() map[string]string {
	return map[string]string{NameLabel: NameValue, InstanceLabel: c.Name}
}

// ownerSelector selects the objects of the installation (any component).
func ownerSelector(namespace, name string) string {
	return strings.Join([]string{
		cabundle.ManagedByLabel + "=" + cabundle.ManagedByValue,
		NameLabel + "=" + NameValue,
		InstanceLabel + "=" + name,
		NamespaceLabel + "=" + namespace,
	}, ",")
}

// sortedSources returns the sources sorted by their string form, without
// duplicates.
func sortedSources(in []cabundle.Source) []cabundle.Source {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b cabundle.Source) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}
