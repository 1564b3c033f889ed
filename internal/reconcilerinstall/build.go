package reconcilerinstall

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
)

// Objects are the apply configurations of one installation, each holding
// only the fields kmshealth owns.
type Objects struct {
	Namespace          *corev1ac.NamespaceApplyConfiguration // nil unless Config.CreateNamespace
	ServiceAccount     *corev1ac.ServiceAccountApplyConfiguration
	ClusterRole        *rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBinding *rbacv1ac.ClusterRoleBindingApplyConfiguration
	LeaderRole         *rbacv1ac.RoleApplyConfiguration
	LeaderRoleBinding  *rbacv1ac.RoleBindingApplyConfiguration
	EventsRole         *rbacv1ac.RoleApplyConfiguration
	EventsRoleBinding  *rbacv1ac.RoleBindingApplyConfiguration
	// Roles and RoleBindings are the patterns' Roles (PatternRoles): per
	// pattern one per namespace, sorted.
	Roles               []*rbacv1ac.RoleApplyConfiguration
	RoleBindings        []*rbacv1ac.RoleBindingApplyConfiguration
	Record              *corev1ac.ConfigMapApplyConfiguration
	Deployment          *appsv1ac.DeploymentApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration // nil when Replicas is 1
	MetricsService      *corev1ac.ServiceApplyConfiguration
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
		LeaderRole:         BuildLeaderRole(c),
		LeaderRoleBinding:  BuildLeaderRoleBinding(c),
		EventsRole:         BuildEventsRole(c),
		EventsRoleBinding:  BuildEventsRoleBinding(c),
		Record:             BuildRecord(c),
		Deployment:         BuildDeployment(c),
		MetricsService:     BuildMetricsService(c),
	}
	if c.CreateNamespace {
		o.Namespace = BuildNamespace(c)
	}
	o.Roles, o.RoleBindings = PatternRoles(c)
	if c.Replicas > 1 {
		o.PodDisruptionBudget = BuildPodDisruptionBudget(c)
	}
	return o, nil
}

// BuildNamespace is the namespace kmshealth creates when asked to. It
// enforces the restricted Pod Security Standard, which the reconciler meets.
func BuildNamespace(c Config) *corev1ac.NamespaceApplyConfiguration {
	labels := c.Labels(ComponentReconciler)
	labels[podSecurityEnforce] = podSecurityRestricted
	return corev1ac.Namespace(c.Namespace).WithLabels(labels)
}

// BuildServiceAccount is the reconciler's identity. Its token is not
// mounted automatically: the pods mount a projected, expiring one.
func BuildServiceAccount(c Config) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(c.ServiceAccountName(), c.Namespace).WithLabels(c.Labels(ComponentReconciler)).
		WithAutomountServiceAccountToken(false)
}

func (c Config) subject() *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(c.ServiceAccountName()).WithNamespace(c.Namespace)
}

// BuildClusterRole grants what the controllers need cluster-wide:
// TokenReviews and SubjectAccessReviews, to authenticate and authorize
// /metrics callers, then each pattern's ClusterRules in Patterns order,
// each naming its objects (the APIServices, webhook configurations and
// CRDs kept, the KMS target, …; only Nodes, as metadata, are listed whole).
// Nothing about Secrets or ConfigMaps: those are granted per object by the
// patterns' Roles and the leader-election Role.
func BuildClusterRole(c Config) *rbacv1ac.ClusterRoleApplyConfiguration {
	// Every installation authenticates and authorizes /metrics callers;
	// the rest is the patterns'.
	rules := append([]*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups(authenticationv1.GroupName).WithResources("tokenreviews").WithVerbs("create"),
		rbacv1ac.PolicyRule().WithAPIGroups(authorizationv1.GroupName).WithResources("subjectaccessreviews").WithVerbs("create"),
	}, patternClusterRules(c)...)
	return rbacv1ac.ClusterRole(c.ClusterRoleName()).
		WithLabels(c.Labels(ComponentReconciler)).
		WithRules(rules...)
}

// BuildClusterRoleBinding binds the ClusterRole to the ServiceAccount.
func BuildClusterRoleBinding(c Config) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(c.ClusterRoleName()).
		WithLabels(c.Labels(ComponentReconciler)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(c.ClusterRoleName())).
		WithSubjects(c.subject())
}

// Lease is the installation's leader-election Lease: its Name, so two
// reconcilers of different names in one namespace each elect their own
// leader and keep their own objects. An installation named DefaultName
// keeps LeaseName, the Lease every installation used before, so upgrading
// one hands leadership over instead of electing a second leader.
func (c Config) Lease() string { return c.Name }

// BuildLeaderRole grants the leader-election Lease and the record. RBAC
// cannot restrict create by name (the name is not known before the object
// exists), so create is granted on leases in Namespace, get and update on
// this installation's Lease only; the record is read and watched by name.
func BuildLeaderRole(c Config) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(c.LeaderElectionRoleName(), c.Namespace).
		WithLabels(c.Labels(ComponentLeaderElect)).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups(coordinationv1.GroupName).WithResources("leases").WithVerbs("create"),
			rbacv1ac.PolicyRule().WithAPIGroups(coordinationv1.GroupName).WithResources("leases").WithResourceNames(c.Lease()).WithVerbs("get", "update"),
			rbacv1ac.PolicyRule().WithAPIGroups(corev1.GroupName).WithResources("configmaps").WithResourceNames(c.RecordName()).WithVerbs("get", "list", "watch"),
		)
}

// EventsNamespace holds the Events about cluster-scoped objects (the API
// server requires them there): the only namespace besides its own in
// which the reconciler may write.
const EventsNamespace = "default"

// EventsRoleName names the Role and RoleBinding in EventsNamespace; the
// colons cannot occur in a namespace or name, so two installations never
// share it.
func (c Config) EventsRoleName() string {
	return clusterRolePrefix + c.Namespace + ":" + c.Name + ":events"
}

// BuildEventsRole grants creating and patching Events (events.k8s.io, the
// API the reconciler records with) in EventsNamespace, where Events about
// APIServices must live; nowhere else.
func BuildEventsRole(c Config) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(c.EventsRoleName(), EventsNamespace).
		WithLabels(c.Labels(ComponentEvents)).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups(eventsv1.GroupName).WithResources("events").WithVerbs("create", "patch"))
}

// BuildEventsRoleBinding binds the events Role.
func BuildEventsRoleBinding(c Config) *rbacv1ac.RoleBindingApplyConfiguration {
	return c.roleBinding(c.EventsRoleName(), EventsNamespace, ComponentEvents)
}

// BuildRecord is the reconciler's record of what it keeps: each pattern's
// entries (Pattern.Record), under its own key prefix. The caBundle
// controllers watch it (a new entry needs no restart; an installer that
// rewrites an APIService or webhook configuration cannot drop it); the TLS
// profile and rbac proxy entries are read back for import and drift.
func BuildRecord(c Config) *corev1ac.ConfigMapApplyConfiguration {
	ac := corev1ac.ConfigMap(c.RecordName(), c.Namespace).WithLabels(c.Labels(ComponentRecord))
	if data := patternRecord(c); len(data) > 0 { // an empty map would not round-trip
		ac.WithData(data)
	}
	return ac
}

// roleBinding binds the Role name in ns to the ServiceAccount.
func (c Config) roleBinding(name, ns, component string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(name, ns).
		WithLabels(c.Labels(component)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)).
		WithSubjects(c.subject())
}

// BuildLeaderRoleBinding binds the leader-election Role.
func BuildLeaderRoleBinding(c Config) *rbacv1ac.RoleBindingApplyConfiguration {
	return c.roleBinding(c.LeaderElectionRoleName(), c.Namespace, ComponentLeaderElect)
}

// Args are the reconciler's command line: the binary's reconcile mode,
// with the Lease in the pod's own namespace and in-cluster configuration
// (no --kubeconfig).
func Args(c Config) []string {
	args := []string{
		"reconcile",
		"--namespace=$(" + podNamespaceEnv + ")",
		"--leader-elect=true",
		"--leader-elect-lease-name=" + c.Lease(),
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
		fmt.Sprintf("--health-probe-bind-address=:%d", HealthPort),
		"--record-configmap=" + c.RecordName(),
	}
	args = append(args, patternArgs(c)...)
	return args
}

func httpProbe(path string) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(healthPortName)))
}

// BuildDeployment runs Replicas reconcilers, spread over nodes, under the
// restricted Pod Security Standard.
func BuildDeployment(c Config) *appsv1ac.DeploymentApplyConfiguration {
	selector := c.SelectorLabels()
	podLabels := c.Labels(ComponentReconciler)
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(c.Image).
		WithArgs(Args(c)...).
		WithVolumeMounts(install.TokenMount()).
		WithEnv(corev1ac.EnvVar().WithName(podNamespaceEnv).WithValueFrom(corev1ac.EnvVarSource().WithFieldRef(install.FieldRef("metadata.namespace")))).
		WithPorts(
			corev1ac.ContainerPort().WithName(metricsPortName).WithContainerPort(MetricsPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(healthPortName).WithContainerPort(HealthPort).WithProtocol(corev1.ProtocolTCP),
		).
		WithLivenessProbe(httpProbe("/healthz")).
		WithReadinessProbe(httpProbe("/readyz")).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(RunAsUser).
			WithRunAsGroup(RunAsUser).
			WithReadOnlyRootFilesystem(true).
			WithAllowPrivilegeEscalation(false).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	if r := c.ResourceRequirements(); r != nil {
		container.WithResources(r)
	}
	pod := corev1ac.PodSpec().
		WithServiceAccountName(c.ServiceAccountName()).
		WithAutomountServiceAccountToken(false).
		WithVolumes(install.TokenVolume()).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().
				WithWeight(antiAffinityPreference).
				WithPodAffinityTerm(corev1ac.PodAffinityTerm().
					WithTopologyKey(hostnameTopologyKey).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))))).
		WithContainers(container)
	return appsv1ac.Deployment(c.Name, c.Namespace).
		WithLabels(c.Labels(ComponentReconciler)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(c.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithSpec(pod)))
}

// BuildPodDisruptionBudget keeps one reconciler through voluntary
// disruptions; pods that are not ready may always be evicted, so a broken
// rollout never blocks a node drain.
func BuildPodDisruptionBudget(c Config) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(c.Name, c.Namespace).
		WithLabels(c.Labels(ComponentReconciler)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt32(1)).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(c.SelectorLabels())))
}

// BuildMetricsService exposes /metrics to Prometheus.
func BuildMetricsService(c Config) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(c.MetricsServiceName(), c.Namespace).
		WithLabels(c.Labels(ComponentMetrics)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(c.SelectorLabels()).
			WithPorts(corev1ac.ServicePort().
				WithName(metricsPortName).
				WithPort(MetricsPort).
				WithProtocol(corev1.ProtocolTCP).
				WithTargetPort(intstr.FromString(metricsPortName))))
}

// RolledOut reports whether the Deployment controller has rolled d out:
// it saw the latest spec, and every replica is updated and available, with
// no old ones left.
func RolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.AvailableReplicas == want
}
