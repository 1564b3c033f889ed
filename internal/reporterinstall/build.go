package reporterinstall

import (
	"fmt"
	"maps"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// Objects are the apply configurations of one installation, each holding
// only the fields kmshealth owns.
type Objects struct {
	CRD                *unstructured.Unstructured // nil unless Config.InstallCRD
	Object             *unstructured.Unstructured // the target object; nil unless Config.CreatesObject
	ServiceAccount     *corev1ac.ServiceAccountApplyConfiguration
	ClusterRole        *rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBinding *rbacv1ac.ClusterRoleBindingApplyConfiguration
	DaemonSet          *appsv1ac.DaemonSetApplyConfiguration
}

// Build returns the objects for c. It is pure; c must be valid.
func Build(c Config) (Objects, error) {
	if err := c.Validate(); err != nil {
		return Objects{}, err
	}
	o := Objects{
		ServiceAccount:     BuildServiceAccount(c),
		ClusterRole:        BuildClusterRole(c),
		ClusterRoleBinding: BuildClusterRoleBinding(c),
		DaemonSet:          BuildDaemonSet(c),
	}
	if c.InstallCRD {
		o.CRD = BuildCRD(c)
	}
	if c.CreatesObject() {
		o.Object = BuildObject(c)
	}
	return o, nil
}

// BuildCRD is the KMSHealth CustomResourceDefinition, labelled as this
// installation's so that only its Delete removes it.
func BuildCRD(c Config) *unstructured.Unstructured {
	crd := kmshealth.CRD()
	labels := crd.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, c.Labels(ComponentCRD))
	crd.SetLabels(labels)
	return crd
}

// BuildObject is the target KMSHealth object, empty but for its labels:
// its status is written by the reporters and the aggregator.
func BuildObject(c Config) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: c.Target.Group, Version: c.Target.Version, Kind: kmshealth.Kind})
	obj.SetName(c.Target.Name)
	obj.SetLabels(c.Labels(ComponentCRD))
	return obj
}

// BuildServiceAccount is the reporter's identity. Its token is not mounted
// automatically: the pods mount a projected, expiring one.
func BuildServiceAccount(c Config) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(c.ServiceAccountName(), c.Namespace).
		WithLabels(c.Labels(ComponentReporter)).
		WithAutomountServiceAccountToken(false)
}

// Rule is the reporter's one permission on the cluster's state:
// server-side apply (a PATCH) of the status subresource of the one target
// object. Not get, not update, not the object itself.
func Rule(t kmshealth.Target) *rbacv1ac.PolicyRuleApplyConfiguration {
	return rbacv1ac.PolicyRule().
		WithAPIGroups(t.Group).
		WithResources(t.Resource + "/status").
		WithResourceNames(t.Name).
		WithVerbs("patch")
}

// BuildClusterRole holds Rule, and the reviews that authenticate and
// authorize callers of /metrics (what system:auth-delegator grants). It is
// cluster-wide because the target is a cluster-scoped object.
func BuildClusterRole(c Config) *rbacv1ac.ClusterRoleApplyConfiguration {
	return rbacv1ac.ClusterRole(c.ClusterRoleName()).
		WithLabels(c.Labels(ComponentReporter)).
		WithRules(Rule(c.Target),
			rbacv1ac.PolicyRule().WithAPIGroups(authenticationv1.GroupName).WithResources("tokenreviews").WithVerbs("create"),
			rbacv1ac.PolicyRule().WithAPIGroups(authorizationv1.GroupName).WithResources("subjectaccessreviews").WithVerbs("create"))
}

// BuildClusterRoleBinding binds the ClusterRole to the ServiceAccount.
func BuildClusterRoleBinding(c Config) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(c.ClusterRoleName()).
		WithLabels(c.Labels(ComponentReporter)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(c.ClusterRoleName())).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(c.ServiceAccountName()).WithNamespace(c.Namespace))
}

// sortedSockets returns the sockets ordered by keyID; they were validated.
func sortedSockets(endpoints []string) []string {
	socks := make([]kmshealth.Socket, 0, len(endpoints))
	for _, e := range endpoints {
		if s, err := kmshealth.ParseSocket(e); err == nil {
			socks = append(socks, s)
		}
	}
	kmshealth.SortSockets(socks)
	out := make([]string, len(socks))
	for i, s := range socks {
		out[i] = s.Endpoint
	}
	return out
}

// Args are the reporter's command line: the binary's report mode with
// every setting spelled out, so the DaemonSet says what runs. The node
// name comes from $NODE_NAME (the flag's default), in-cluster
// configuration from the projected ServiceAccount volume.
func (c Config) Args() []string {
	args := []string{
		"report",
		"--interval=" + c.Interval.String(),
		"--read-timeout=" + c.ReadTimeout.String(),
		"--write-timeout=" + c.WriteTimeout.String(),
		"--target=" + c.Target.String(),
		fmt.Sprintf("--health-probe-bind-address=:%d", HealthPort),
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
	}
	if c.ReportFormat != "" && c.ReportFormat != kmshealth.FormatConditions {
		args = append(args, "--report-format="+string(c.ReportFormat))
	}
	if len(c.Sockets) == 0 {
		return append(args, "--socket-dir="+c.SocketDir)
	}
	for _, s := range sortedSockets(c.Sockets) {
		args = append(args, "--kms-socket="+s)
	}
	return args
}

// securityContext is as tight as a reporter that must open root-owned
// sockets can be: no privilege escalation, no capabilities at all (uid 0
// without CAP_DAC_OVERRIDE opens only what root owns), a read-only root
// file system and the runtime's seccomp profile; non-root whenever
// RunAsUser allows.
func (c Config) securityContext() *corev1ac.SecurityContextApplyConfiguration {
	sc := corev1ac.SecurityContext().
		WithRunAsUser(c.RunAsUser).
		WithRunAsGroup(c.RunAsGroup).
		WithReadOnlyRootFilesystem(true).
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if c.RunAsUser != 0 {
		sc.WithRunAsNonRoot(true)
	}
	return sc
}

func toleration(t corev1.Toleration) *corev1ac.TolerationApplyConfiguration {
	ac := corev1ac.Toleration()
	if t.Key != "" {
		ac.WithKey(t.Key)
	}
	if t.Operator != "" {
		ac.WithOperator(t.Operator)
	}
	if t.Value != "" {
		ac.WithValue(t.Value)
	}
	if t.Effect != "" {
		ac.WithEffect(t.Effect)
	}
	if t.TolerationSeconds != nil {
		ac.WithTolerationSeconds(*t.TolerationSeconds)
	}
	return ac
}

// BuildDaemonSet runs one reporter per selected node. The node's socket
// directory is mounted read-only at its own path, so the sockets keep the
// production pattern (connecting to a Unix socket needs no write access to
// the mount).
func BuildDaemonSet(c Config) *appsv1ac.DaemonSetApplyConfiguration {
	dir := c.MountedSocketDir()
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(c.Image).
		WithCommand(Command).
		WithArgs(c.Args()...).
		WithEnv(corev1ac.EnvVar().WithName(nodeNameEnv).WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(install.FieldRef("spec.nodeName")))).
		WithPorts(corev1ac.ContainerPort().WithName(healthPortName).WithContainerPort(HealthPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(metricsPortName).WithContainerPort(MetricsPort).WithProtocol(corev1.ProtocolTCP)).
		WithLivenessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString(healthPortName)))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(socketsVolume).WithMountPath(dir).WithReadOnly(true),
			install.TokenMount(),
		).
		WithSecurityContext(c.securityContext())
	if r := c.ResourceRequirements(); r != nil {
		container.WithResources(r)
	}
	podSC := corev1ac.PodSecurityContext().WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if c.RunAsUser != 0 {
		podSC.WithRunAsNonRoot(true)
	}
	pod := corev1ac.PodSpec().
		WithServiceAccountName(c.ServiceAccountName()).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(podSC).
		WithVolumes(
			corev1ac.Volume().WithName(socketsVolume).WithHostPath(corev1ac.HostPathVolumeSource().WithPath(dir).WithType(corev1.HostPathDirectory)),
			install.TokenVolume(),
		).
		WithContainers(container)
	if len(c.NodeSelector) > 0 { // an empty map would not round-trip
		pod.WithNodeSelector(c.NodeSelector)
	}
	for _, t := range c.Tolerations {
		pod.WithTolerations(toleration(t))
	}
	if c.PriorityClassName != "" {
		pod.WithPriorityClassName(c.PriorityClassName)
	}
	return appsv1ac.DaemonSet(c.Name, c.Namespace).
		WithLabels(c.Labels(ComponentReporter)).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(c.SelectorLabels())).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(c.Labels(ComponentReporter)).
				WithSpec(pod)))
}
