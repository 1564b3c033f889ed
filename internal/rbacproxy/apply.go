package rbacproxy

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
)

// Every builder below returns an apply configuration holding only the
// fields kmshealth owns, for server-side apply as FieldManager. Each
// defaults and validates the Config first and refuses an invalid one, so
// nothing invalid (say, a stale record) is ever written.

func (c Config) prepared() (Config, error) {
	c = c.Defaulted()
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("rbac proxy for %s: %w", c.Target, err)
	}
	return c, nil
}

// ConfigMapApply is the config ConfigMap, ObjectName(target) in the workload's
// namespace: ConfigFileKey (the proxy's config file, mounted by the
// sidecar) and RecordKey (the record the reconciler re-injects the sidecar
// from). Apply it before the workload, so the pods never start without
// their config.
func (c Config) ConfigMapApply() (*corev1ac.ConfigMapApplyConfiguration, error) {
	c, err := c.prepared()
	if err != nil {
		return nil, err
	}
	file, err := c.ConfigFile()
	if err != nil {
		return nil, err
	}
	record, err := c.EncodeRecord()
	if err != nil {
		return nil, err
	}
	return corev1ac.ConfigMap(ObjectName(c.Target), c.Target.Namespace).
		WithLabels(ourLabels(c.Target)).
		WithAnnotations(ourAnnotations(c.Target)).
		WithData(map[string]string{ConfigFileKey: string(file), RecordKey: string(record)}), nil
}

// ClusterRoleBindingApply binds the pod's ServiceAccount to
// system:auth-delegator (create TokenReviews and SubjectAccessReviews),
// named ClusterRoleBindingName(target): one per protected workload.
func (c Config) ClusterRoleBindingApply() (*rbacv1ac.ClusterRoleBindingApplyConfiguration, error) {
	c, err := c.prepared()
	if err != nil {
		return nil, err
	}
	return rbacv1ac.ClusterRoleBinding(ClusterRoleBindingName(c.Target)).
		WithLabels(ourLabels(c.Target)).
		WithAnnotations(ourAnnotations(c.Target)).
		WithRoleRef(rbacv1ac.RoleRef().
			WithAPIGroup(rbacv1.GroupName).
			WithKind("ClusterRole").
			WithName(AuthDelegatorClusterRole)).
		WithSubjects(rbacv1ac.Subject().
			WithKind(rbacv1.ServiceAccountKind).
			WithNamespace(c.Target.Namespace).
			WithName(c.ServiceAccountName)), nil
}

// PodTemplateApply is kmshealth's part of the workload's pod template: the
// ConfigHashAnnotation, the native sidecar (an initContainers entry with
// restartPolicy Always) and its volumes. Nothing else.
func (c Config) PodTemplateApply() (*corev1ac.PodTemplateSpecApplyConfiguration, error) {
	c, err := c.prepared()
	if err != nil {
		return nil, err
	}
	hash, err := c.ConfigHash()
	if err != nil {
		return nil, err
	}
	ctr, err := c.container()
	if err != nil {
		return nil, err
	}
	spec := corev1ac.PodSpec().
		WithInitContainers(ctr).
		WithVolumes(corev1ac.Volume().
			WithName(ConfigVolumeName).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().
				WithName(ObjectName(c.Target)).
				WithItems(corev1ac.KeyToPath().WithKey(ConfigFileKey).WithPath(ConfigFileKey))))
	if c.TLS.SecretName != "" {
		spec.WithVolumes(corev1ac.Volume().
			WithName(TLSVolumeName).
			WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(c.TLS.SecretName).
				WithItems(
					corev1ac.KeyToPath().WithKey(TLSCertKey).WithPath(TLSCertKey),
					corev1ac.KeyToPath().WithKey(TLSPrivateKeyKey).WithPath(TLSPrivateKeyKey))))
	}
	return corev1ac.PodTemplateSpec().
		WithAnnotations(map[string]string{ConfigHashAnnotation: hash}).
		WithSpec(spec), nil
}

func (c Config) container() (*corev1ac.ContainerApplyConfiguration, error) {
	ctr := corev1ac.Container().
		WithName(ContainerName).
		WithImage(c.Image).
		WithRestartPolicy(corev1.ContainerRestartPolicyAlways).
		WithArgs(c.Args()...).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(ConfigVolumeName).WithMountPath(ConfigDir).WithReadOnly(true)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsNonRoot(true).
			WithReadOnlyRootFilesystem(true).
			WithAllowPrivilegeEscalation(false).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	probe := corev1ac.Probe()
	if c.InsecureListen {
		// No health endpoint without a secure listener: a TCP check.
		ctr.WithPorts(corev1ac.ContainerPort().WithName(InsecurePortName).WithContainerPort(c.ListenPort).WithProtocol(corev1.ProtocolTCP))
		probe.WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromInt32(c.ListenPort)))
	} else {
		ctr.WithPorts(
			corev1ac.ContainerPort().WithName(ListenPortName).WithContainerPort(c.ListenPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(HealthPortName).WithContainerPort(c.HealthPort).WithProtocol(corev1.ProtocolTCP))
		// Same certificate as the main listener; kubelet does not verify
		// it, so the self-signed default works.
		probe.WithHTTPGet(corev1ac.HTTPGetAction().
			WithScheme(corev1.URISchemeHTTPS).
			WithPort(intstr.FromInt32(c.HealthPort)).
			WithPath(HealthPath))
	}
	ctr.WithLivenessProbe(probe).WithReadinessProbe(probe)
	if c.TLS.SecretName != "" {
		ctr.WithVolumeMounts(corev1ac.VolumeMount().WithName(TLSVolumeName).WithMountPath(TLSDir).WithReadOnly(true))
	}
	requests, err := resourceList(c.Resources.Requests)
	if err != nil {
		return nil, err
	}
	limits, err := resourceList(c.Resources.Limits)
	if err != nil {
		return nil, err
	}
	if len(requests)+len(limits) > 0 {
		r := corev1ac.ResourceRequirements()
		if len(requests) > 0 {
			r.WithRequests(requests)
		}
		if len(limits) > 0 {
			r.WithLimits(limits)
		}
		ctr.WithResources(r)
	}
	return ctr, nil
}

func resourceList(in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, value := range in {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("resources %s: %w", name, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// Workload is the apply configuration of the protected workload: exactly
// one field is set, the one of the target's kind. It names the workload
// (and, when given, its UID as a precondition, so a workload deleted
// since it was read is never re-created by the write) and holds only
// PodTemplateApply in spec.template.
type Workload struct {
	Deployment  *appsv1ac.DeploymentApplyConfiguration
	StatefulSet *appsv1ac.StatefulSetApplyConfiguration
	DaemonSet   *appsv1ac.DaemonSetApplyConfiguration
}

// WorkloadApply builds the workload's apply configuration; uid is the UID of
// the workload as last read, or "" for no precondition.
func (c Config) WorkloadApply(uid types.UID) (Workload, error) {
	c, err := c.prepared()
	if err != nil {
		return Workload{}, err
	}
	tmpl, err := c.PodTemplateApply()
	if err != nil {
		return Workload{}, err
	}
	return workload(c.Target, uid, tmpl), nil
}

// ReleaseWorkload is the apply configuration that names the workload and
// nothing else: applied by FieldManager, it releases every field of ours
// (the sidecar, its volumes, the annotation disappear unless another
// manager owns them) and leaves the rest alone.
func ReleaseWorkload(t Target, uid types.UID) (Workload, error) {
	if err := (Config{Target: t}).validateTargetOnly(); err != nil {
		return Workload{}, err
	}
	return workload(t, uid, nil), nil
}

func (c Config) validateTargetOnly() error {
	var es fieldErrors
	c.validateTarget(&es)
	return es.err()
}

func workload(t Target, uid types.UID, tmpl *corev1ac.PodTemplateSpecApplyConfiguration) Workload {
	var w Workload
	switch t.Kind {
	case KindDeployment:
		w.Deployment = appsv1ac.Deployment(t.Name, t.Namespace)
		if uid != "" {
			w.Deployment.WithUID(uid)
		}
		if tmpl != nil {
			w.Deployment.WithSpec(appsv1ac.DeploymentSpec().WithTemplate(tmpl))
		}
	case KindStatefulSet:
		w.StatefulSet = appsv1ac.StatefulSet(t.Name, t.Namespace)
		if uid != "" {
			w.StatefulSet.WithUID(uid)
		}
		if tmpl != nil {
			w.StatefulSet.WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(tmpl))
		}
	case KindDaemonSet:
		w.DaemonSet = appsv1ac.DaemonSet(t.Name, t.Namespace)
		if uid != "" {
			w.DaemonSet.WithUID(uid)
		}
		if tmpl != nil {
			w.DaemonSet.WithSpec(appsv1ac.DaemonSetSpec().WithTemplate(tmpl))
		}
	}
	return w
}

// Object is the one apply configuration Workload holds, for callers that
// marshal it themselves (a dynamic client, a raw apply patch).
func (w Workload) Object() any {
	switch {
	case w.Deployment != nil:
		return w.Deployment
	case w.StatefulSet != nil:
		return w.StatefulSet
	case w.DaemonSet != nil:
		return w.DaemonSet
	}
	return nil
}

// ServiceApply is the apply configuration of the Service ServiceName holding
// only its ServicePortName port (port and targetPort ListenPort, TCP).
// uid is the Service's UID as last read: pass it, so a Service that does
// not exist is never created with nothing but our port.
func (c Config) ServiceApply(uid types.UID) (*corev1ac.ServiceApplyConfiguration, error) {
	c, err := c.prepared()
	if err != nil {
		return nil, err
	}
	if c.ServiceName == "" {
		return nil, fmt.Errorf("rbac proxy for %s: serviceName is empty: set it to get a Service port", c.Target)
	}
	svc := corev1ac.Service(c.ServiceName, c.Target.Namespace).
		WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().
			WithName(ServicePortName).
			WithProtocol(corev1.ProtocolTCP).
			WithPort(c.ListenPort).
			WithTargetPort(intstr.FromInt32(c.ListenPort))))
	if uid != "" {
		svc.WithUID(uid)
	}
	return svc, nil
}

// ReleaseService names the Service and nothing else: applied by
// FieldManager, our port disappears and the rest of the Service stays.
func ReleaseService(namespace, name string, uid types.UID) *corev1ac.ServiceApplyConfiguration {
	svc := corev1ac.Service(name, namespace)
	if uid != "" {
		svc.WithUID(uid)
	}
	return svc
}

// NetworkPolicyApply is ObjectName(target) in the workload's namespace: it
// selects the workload's pods (podSelector: the workload's spec.selector,
// or its pod template labels) and admits ingress only on ListenPort/TCP,
// from pods matching both of the Config's selectors (one peer; none
// given: from anywhere). As with every NetworkPolicy, the selected pods
// then accept no other ingress unless another policy admits it.
func (c Config) NetworkPolicyApply(podSelector *metav1.LabelSelector) (*networkingv1ac.NetworkPolicyApplyConfiguration, error) {
	c, err := c.prepared()
	if err != nil {
		return nil, err
	}
	if !c.NetworkPolicy.Enabled {
		return nil, fmt.Errorf("rbac proxy for %s: networkPolicy.enabled is false: set it to true to get a NetworkPolicy", c.Target)
	}
	if podSelector == nil || (len(podSelector.MatchLabels) == 0 && len(podSelector.MatchExpressions) == 0) {
		return nil, fmt.Errorf("rbac proxy for %s: the pod selector is empty, which would select every pod in %q: pass the workload's spec.selector", c.Target, c.Target.Namespace)
	}
	if _, err := metav1.LabelSelectorAsSelector(podSelector); err != nil {
		return nil, fmt.Errorf("rbac proxy for %s: the workload's pod selector: %w", c.Target, err)
	}
	rule := networkingv1ac.NetworkPolicyIngressRule().
		WithPorts(networkingv1ac.NetworkPolicyPort().
			WithProtocol(corev1.ProtocolTCP).
			WithPort(intstr.FromInt32(c.ListenPort)))
	if ns, pod := c.NetworkPolicy.FromNamespaceSelector, c.NetworkPolicy.FromPodSelector; ns != nil || pod != nil {
		peer := networkingv1ac.NetworkPolicyPeer()
		if ns != nil {
			peer.WithNamespaceSelector(selectorApply(ns))
		}
		if pod != nil {
			peer.WithPodSelector(selectorApply(pod))
		}
		rule.WithFrom(peer)
	}
	return networkingv1ac.NetworkPolicy(ObjectName(c.Target), c.Target.Namespace).
		WithLabels(ourLabels(c.Target)).
		WithAnnotations(ourAnnotations(c.Target)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(selectorApply(podSelector)).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(rule)), nil
}

// selectorApply converts a label selector; an empty one stays present
// (it matches everything, which differs from an absent one).
func selectorApply(s *metav1.LabelSelector) *metav1ac.LabelSelectorApplyConfiguration {
	out := metav1ac.LabelSelector()
	if len(s.MatchLabels) > 0 {
		out.WithMatchLabels(maps.Clone(s.MatchLabels))
	}
	for _, r := range s.MatchExpressions {
		out.WithMatchExpressions(metav1ac.LabelSelectorRequirement().
			WithKey(r.Key).
			WithOperator(r.Operator).
			WithValues(r.Values...))
	}
	return out
}
