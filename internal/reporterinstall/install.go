// Package reporterinstall installs the KMS health reporter
// (`terraform-provider-kmshealth report`) on the control-plane nodes: a
// DaemonSet, its ServiceAccount, RBAC that allows exactly one write (the
// target's status) and, by default, the KMSHealth CustomResourceDefinition
// and its target object. Build is pure (a Config in, apply configurations
// out); Apply, Observe and Delete are the only functions that talk to the
// API server. The Terraform resource kmshealth_reporter is glue over this
// package.
package reporterinstall

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// Names and values shared with the provider, the docs and the tests.
const (
	// DefaultName is the default name of the ServiceAccount and DaemonSet.
	DefaultName = "kmshealth-reporter"
	// ContainerName is the reporter's container in the DaemonSet.
	ContainerName = "reporter"
	// Command is the reporter container's command: the image's reporter
	// build of the provider's source (image.ReporterBinaryName, -tags
	// reportonly), which serves the report mode alone. The image's other
	// binary serves it too, but maps the whole reconciler: about twice the
	// memory on every control-plane node (BENCHMARKS.md).
	Command = "/terraform-provider-kmshealth-report"
	// HealthPort serves /healthz (the report mode's default
	// --health-probe-bind-address).
	HealthPort = 8082
	// MetricsPort serves /metrics over HTTPS to callers whose RBAC allows
	// get on the /metrics non-resource URL (TokenReview +
	// SubjectAccessReview), as the reconciler's does.
	MetricsPort = 8444
	// DefaultPriorityClassName keeps the reporter scheduled on a full node:
	// it is as important as the node's other agents.
	DefaultPriorityClassName = "system-node-critical"
	// DefaultRunAsUser is root: KMS plugins create their sockets owned by
	// root, and connecting needs write permission on the socket file.
	DefaultRunAsUser = 0
	// ControlPlaneLabel and ControlPlaneTaint are kubeadm's (and most
	// distributions') marks of a control-plane node.
	ControlPlaneLabel = "node-role.kubernetes.io/control-plane"
	ControlPlaneTaint = ControlPlaneLabel

	DefaultCPURequest    = "10m"
	DefaultMemoryRequest = "32Mi"
	DefaultMemoryLimit   = "128Mi"

	// NameValue (of install.NameLabel) and NamespaceLabel (= Config.Namespace)
	// are the reporter's part of the labels that mark every object of one
	// installation (see install.Owner).
	NameValue      = "kmshealth-reporter"
	NamespaceLabel = "kmshealth.io/reporter-namespace"

	ComponentReporter = "reporter"
	ComponentCRD      = "crd"

	podSecurityEnforce = "pod-security.kubernetes.io/enforce"
	clusterRolePrefix  = "kmshealth-reporter:"
	nodeNameEnv        = "NODE_NAME"
	healthPortName     = "health"
	metricsPortName    = "metrics"
	socketsVolume      = "kms-sockets"
)

// Config is one installation of the reporter.
type Config struct {
	Namespace string // where the DaemonSet runs
	Name      string // ServiceAccount and DaemonSet
	Image     string
	// Sockets are the KMS plugin endpoints to probe (--kms-socket); when
	// empty, every kms-<keyID>.sock in SocketDir is probed (--socket-dir).
	Sockets      []string
	SocketDir    string
	Interval     time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// Target is the object whose status receives the reports.
	Target kmshealth.Target
	// ReportFormat is how the reports are written on Target
	// (--report-format): our KMSHealthReporter_<node> conditions, or
	// OpenShift's typed status.encryptionStatus.healthReports. Empty means
	// conditions.
	ReportFormat kmshealth.ReportFormat
	// InstallCRD installs the KMSHealth CRD and, when Target is a KMSHealth
	// object, that object; Delete removes them again.
	InstallCRD        bool
	RunAsUser         int64
	RunAsGroup        int64
	PriorityClassName string // "" for none
	// AdmissionPolicy installs the ValidatingAdmissionPolicy under which a
	// reporter may change only its own node's condition (needs
	// admissionregistration.k8s.io/v1, Kubernetes 1.30 or later).
	AdmissionPolicy bool
	// AnySocketDir allows a SocketDir outside the KMS plugin directories
	// (SocketDirs): a hostPath of a pod that runs as root.
	AnySocketDir bool
	// Resources are the container's requests and limits.
	install.Resources
	// Monitoring, when set, adds the prometheus-operator objects.
	Monitoring *Monitoring
}

// DefaultResources are the reporter container's requests and limits.
func DefaultResources() install.Resources {
	return install.Resources{CPURequest: DefaultCPURequest, MemoryRequest: DefaultMemoryRequest, MemoryLimit: DefaultMemoryLimit}
}

// DefaultNodeSelector selects the control-plane nodes.
func DefaultNodeSelector() map[string]string { return map[string]string{ControlPlaneLabel: ""} }

// DefaultTolerations tolerate the control-plane taint.
func DefaultTolerations() []corev1.Toleration {
	return []corev1.Toleration{{Key: ControlPlaneTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
}

// DefaultConfig is the installation with every default, in namespace.
func DefaultConfig(namespace, version string) Config {
	return Config{
		Namespace:         namespace,
		Name:              DefaultName,
		Image:             install.DefaultImage(version),
		SocketDir:         kmshealth.SocketDir,
		Interval:          kmshealth.DefaultInterval,
		ReadTimeout:       kmshealth.DefaultReadTimeout,
		WriteTimeout:      kmshealth.DefaultWriteTimeout,
		NodeSelector:      DefaultNodeSelector(),
		Tolerations:       DefaultTolerations(),
		Target:            kmshealth.DefaultTarget(),
		ReportFormat:      kmshealth.FormatConditions,
		InstallCRD:        true,
		RunAsUser:         DefaultRunAsUser,
		RunAsGroup:        DefaultRunAsUser,
		PriorityClassName: DefaultPriorityClassName,
		Resources:         DefaultResources(),
	}
}

// ValidateName checks an installation name: a DNS-1123 label, as the
// DaemonSet's pods are named after it.
func ValidateName(name string) []string { return validation.IsDNS1123Label(name) }

// ValidateSockets checks kms_sockets (see kmshealth.CheckSockets).
func ValidateSockets(sockets []string) error { return kmshealth.CheckSockets(sockets) }

// SocketDirs are where KMS plugins listen; socket_dir must be one of them,
// or a directory below one, unless any_socket_dir opts out.
var SocketDirs = []string{kmshealth.SocketDir, "/run/kmsplugin"}

// ValidateSocketDir checks socket_dir: a clean absolute directory other
// than "/", because it is mounted from the node at the same path into a
// pod that runs as root, and — unless anyDir — within SocketDirs, so a
// typo or a compromised configuration cannot mount /etc/kubernetes (the
// cluster's keys) into it.
func ValidateSocketDir(dir string, anyDir bool) error {
	switch {
	case !filepath.IsAbs(dir):
		return fmt.Errorf("%q is not an absolute path: want the directory the KMS plugins listen in, e.g. %s", dir, kmshealth.SocketDir)
	case filepath.Clean(dir) != dir:
		return fmt.Errorf("%q is not a clean path: write %s", dir, filepath.Clean(dir))
	case dir == "/":
		return errors.New(`"/" would mount the node's whole file system: name the directory the KMS plugins listen in, e.g. ` + kmshealth.SocketDir)
	case anyDir:
		return nil
	}
	for _, allowed := range SocketDirs {
		if dir == allowed || strings.HasPrefix(dir, allowed+"/") {
			return nil
		}
	}
	return fmt.Errorf("%q is outside %s: the directory is mounted into a pod that runs as root, so only the KMS plugin directories are allowed; move the plugin sockets there, or set any_socket_dir = true to accept the risk",
		dir, strings.Join(SocketDirs, " and "))
}

// TimingAttributes name the durations of kmshealth.CheckTimings as the
// resource's attributes.
var TimingAttributes = map[kmshealth.Timing]string{
	kmshealth.Interval: "probe_interval", kmshealth.ReadTimeout: "read_timeout", kmshealth.WriteTimeout: "write_timeout",
}

// ValidateTimings checks the probe interval and the timeouts, which must
// fit into one interval.
func ValidateTimings(interval, readTimeout, writeTimeout time.Duration) error {
	var errs []error
	for _, e := range kmshealth.CheckTimings(interval, readTimeout, writeTimeout) {
		errs = append(errs, fmt.Errorf("%s %w", TimingAttributes[e.Timing], e.Err))
	}
	return errors.Join(errs...)
}

// ValidateNodeSelector checks label keys and values.
func ValidateNodeSelector(sel map[string]string) error {
	var errs []error
	for k, v := range sel {
		for _, m := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("key %q is not a label key: %s", k, m))
		}
		for _, m := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("value %q of key %q is not a label value: %s", v, k, m))
		}
	}
	return errors.Join(errs...)
}

// ValidateToleration checks one toleration as the API server would.
func ValidateToleration(t corev1.Toleration) error {
	var errs []error
	if t.Key != "" {
		for _, m := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, fmt.Errorf("key %q: %s", t.Key, m))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, fmt.Errorf("value %q: must be empty with operator Exists", t.Value))
		}
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			errs = append(errs, errors.New("an empty key (all taints) needs operator Exists"))
		}
		for _, m := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, fmt.Errorf("value %q: %s", t.Value, m))
		}
	default:
		errs = append(errs, fmt.Errorf("operator %q: must be Exists or Equal", t.Operator))
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, fmt.Errorf("effect %q: must be NoSchedule, PreferNoSchedule, NoExecute or empty (all effects)", t.Effect))
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		errs = append(errs, errors.New("toleration_seconds: only valid with effect NoExecute"))
	}
	return errors.Join(errs...)
}

// CheckInstallCRD rejects install_crd with a target of another kind: the
// CRD would serve nothing the reporters write to.
func CheckInstallCRD(installCRD bool, t kmshealth.Target) error {
	if installCRD && !t.IsDefault() {
		return fmt.Errorf("install_crd = true installs the %s CRD, but target %s is not a %s object: set install_crd = false, or use a target %s/%s/%s/<name>",
			kmshealth.CRDName, t, kmshealth.Kind, kmshealth.Group, kmshealth.Version, kmshealth.Resource)
	}
	return nil
}

// CheckReportFormat rejects a format the reporter cannot write, and the
// typed format on a KMSHealth target, whose schema has no
// status.encryptionStatus (the API server would prune every report).
func CheckReportFormat(f kmshealth.ReportFormat, t kmshealth.Target) error {
	if f == "" {
		return nil
	}
	if _, err := kmshealth.ParseReportFormat(string(f)); err != nil {
		return err
	}
	if f == kmshealth.FormatOpenShiftTyped && t.Group == kmshealth.Group && t.Resource == kmshealth.Resource {
		return fmt.Errorf("%q writes status.encryptionStatus.healthReports, which a %s object does not have: set target to the OpenShift operator object that carries them, e.g. %s, and install_crd = false; or keep report_format = %q",
			f, kmshealth.Kind, "operator.openshift.io/v1/kubeapiservers/cluster", kmshealth.FormatConditions)
	}
	return nil
}

// Validate reports every problem at once; the provider checks the same at
// plan time, attribute by attribute.
func (c Config) Validate() error {
	var errs []error
	if c.Monitoring != nil {
		for k, v := range c.Monitoring.Labels {
			for _, m := range validation.IsQualifiedName(k) {
				errs = append(errs, fmt.Errorf("monitoring.labels: key %q: %s", k, m))
			}
			for _, m := range validation.IsValidLabelValue(v) {
				errs = append(errs, fmt.Errorf("monitoring.labels[%q]: value %q: %s", k, v, m))
			}
		}
	}
	for _, m := range install.ValidateNamespace(c.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, m))
	}
	for _, m := range ValidateName(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", c.Name, m))
	}
	if err := install.ValidateImage(c.Image); err != nil {
		errs = append(errs, fmt.Errorf("image: %w", err))
	}
	switch {
	case len(c.Sockets) > 0 && c.SocketDir != "":
		errs = append(errs, errors.New("kms_sockets and socket_dir: set one, not both"))
	case len(c.Sockets) > 0:
		if err := ValidateSockets(c.Sockets); err != nil {
			errs = append(errs, fmt.Errorf("kms_sockets: %w", err))
		}
	case c.SocketDir == "":
		errs = append(errs, fmt.Errorf("kms_sockets or socket_dir: one is required, e.g. socket_dir = %q", kmshealth.SocketDir))
	default:
		if err := ValidateSocketDir(c.SocketDir, c.AnySocketDir); err != nil {
			errs = append(errs, fmt.Errorf("socket_dir: %w", err))
		}
	}
	if err := ValidateTimings(c.Interval, c.ReadTimeout, c.WriteTimeout); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateNodeSelector(c.NodeSelector); err != nil {
		errs = append(errs, fmt.Errorf("node_selector: %w", err))
	}
	for i, t := range c.Tolerations {
		if err := ValidateToleration(t); err != nil {
			errs = append(errs, fmt.Errorf("tolerations[%d]: %w", i, err))
		}
	}
	if err := c.Target.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := CheckInstallCRD(c.InstallCRD, c.Target); err != nil {
		errs = append(errs, err)
	}
	if err := CheckReportFormat(c.ReportFormat, c.Target); err != nil {
		errs = append(errs, fmt.Errorf("report_format: %w", err))
	}
	if c.RunAsUser < 0 || c.RunAsGroup < 0 {
		errs = append(errs, fmt.Errorf("run_as_user %d, run_as_group %d: must not be negative", c.RunAsUser, c.RunAsGroup))
	}
	if c.PriorityClassName != "" {
		for _, m := range validation.IsDNS1123Subdomain(c.PriorityClassName) {
			errs = append(errs, fmt.Errorf("priority_class_name %q: %s", c.PriorityClassName, m))
		}
	}
	errs = append(errs, c.Resources.Validate()...)
	return errors.Join(errs...)
}

// ID is the import ID: <namespace>/<name>.
func (c Config) ID() string { return install.ImportID(c.Namespace, c.Name) }

// ParseID splits an import ID.
func ParseID(id string) (namespace, name string, err error) {
	return install.ParseID(id, "kube-system/"+DefaultName, ValidateName)
}

// ServiceAccountName is the reporter's ServiceAccount in Namespace.
func (c Config) ServiceAccountName() string { return c.Name }

// ClusterRoleName names the ClusterRole and its ClusterRoleBinding. The
// colons cannot occur in a namespace or name, so two installations never
// share it.
func (c Config) ClusterRoleName() string { return clusterRolePrefix + c.Namespace + ":" + c.Name }

// MountedSocketDir is the node directory mounted into the pods, at the
// same path: socket_dir, or the directory kms_sockets live in.
func (c Config) MountedSocketDir() string {
	if len(c.Sockets) > 0 {
		return kmshealth.SocketDir
	}
	return c.SocketDir
}

// CreatesObject reports whether the installation creates the target object
// (a KMSHealth object next to the CRD it installs).
func (c Config) CreatesObject() bool { return c.InstallCRD && c.Target.IsDefault() }

// owner is the installation namespace/name, whose labels mark its objects.
func owner(namespace, name string) install.Owner {
	return install.Owner{App: NameValue, NamespaceLabel: NamespaceLabel, Namespace: namespace, Name: name}
}

// Labels are on every object of the installation.
func (c Config) Labels(component string) map[string]string {
	return owner(c.Namespace, c.Name).Labels(component)
}

// SelectorLabels select the reporter's pods.
func (c Config) SelectorLabels() map[string]string {
	return owner(c.Namespace, c.Name).SelectorLabels()
}
