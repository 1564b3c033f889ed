package rbacproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// This file is the part of the package that talks to the API server: it
// reads what the cluster holds for one protected workload (Observe),
// checks it before the first write (Check), applies kmshealth's objects in
// order (Apply), compares (Drift) and removes them again (Uninstall).
// Every write is a server-side apply as FieldManager of the apply
// configurations built above, or a delete of an object kmshealth created
// (its labels say so, and the delete is preconditioned on the UID read).

// ObjectError is a failed request for one object, naming it, so a caller
// can say which object and what access was missing.
type ObjectError struct {
	Verb      string // get, patch (server-side apply), delete
	Kind      string // "ConfigMap"
	Group     string // "" for the core group
	Resource  string // "configmaps"
	Namespace string // "" when cluster-scoped
	Name      string
	Err       error
}

func (e *ObjectError) Error() string {
	name := e.Name
	if e.Namespace != "" {
		name = e.Namespace + "/" + e.Name
	}
	return fmt.Sprintf("%s %s %s: %v", e.Verb, e.Kind, name, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// objectRef describes one object of ours (or the workload, or the Service).
type objectRef struct {
	kind, group, resource, namespace, name string
}

func (o objectRef) fail(verb string, err error) error {
	return &ObjectError{Verb: verb, Kind: o.kind, Group: o.group, Resource: o.resource, Namespace: o.namespace, Name: o.name, Err: err}
}

func (o objectRef) String() string {
	if o.namespace == "" {
		return o.kind + " " + o.name
	}
	return o.kind + " " + o.namespace + "/" + o.name
}

func workloadRef(t Target) objectRef {
	return objectRef{kind: string(t.Kind), group: "apps", resource: strings.ToLower(string(t.Kind)) + "s", namespace: t.Namespace, name: t.Name}
}

func configMapRef(t Target) objectRef {
	return objectRef{kind: "ConfigMap", resource: "configmaps", namespace: t.Namespace, name: ObjectName(t)}
}

func bindingRef(t Target) objectRef {
	return objectRef{kind: "ClusterRoleBinding", group: rbacv1.GroupName, resource: "clusterrolebindings", name: ClusterRoleBindingName(t)}
}

func networkPolicyRef(t Target) objectRef {
	return objectRef{kind: "NetworkPolicy", group: networkingv1.GroupName, resource: "networkpolicies", namespace: t.Namespace, name: ObjectName(t)}
}

func serviceRef(namespace, name string) objectRef {
	return objectRef{kind: "Service", resource: "services", namespace: namespace, name: name}
}

// LiveWorkload is the protected workload as read.
type LiveWorkload struct {
	UID             types.UID
	ResourceVersion string
	Selector        *metav1.LabelSelector
	Template        corev1.PodTemplateSpec
}

// ServiceAccount is the ServiceAccount the workload's pods run as:
// spec.serviceAccountName, or "default" when the template names none.
func (w *LiveWorkload) ServiceAccount() string {
	if sa := w.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return "default"
}

// GetWorkload reads the workload t names; a NotFound error (apierrors) when
// it does not exist.
func GetWorkload(ctx context.Context, cs kubernetes.Interface, t Target) (*LiveWorkload, error) {
	ref := workloadRef(t)
	var (
		w   *LiveWorkload
		err error
	)
	switch t.Kind {
	case KindDeployment:
		var d *appsv1.Deployment
		if d, err = cs.AppsV1().Deployments(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{}); err == nil {
			w = &LiveWorkload{UID: d.UID, ResourceVersion: d.ResourceVersion, Selector: d.Spec.Selector, Template: d.Spec.Template}
		}
	case KindStatefulSet:
		var s *appsv1.StatefulSet
		if s, err = cs.AppsV1().StatefulSets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{}); err == nil {
			w = &LiveWorkload{UID: s.UID, ResourceVersion: s.ResourceVersion, Selector: s.Spec.Selector, Template: s.Spec.Template}
		}
	case KindDaemonSet:
		var d *appsv1.DaemonSet
		if d, err = cs.AppsV1().DaemonSets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{}); err == nil {
			w = &LiveWorkload{UID: d.UID, ResourceVersion: d.ResourceVersion, Selector: d.Spec.Selector, Template: d.Spec.Template}
		}
	default:
		return nil, fmt.Errorf("%q is not a kind kmshealth can protect: use one of %s", t.Kind, quoteAll(Kinds()))
	}
	if err != nil {
		return nil, ref.fail("get", err)
	}
	return w, nil
}

// Live is what the cluster holds for one protected workload: nil for each
// object that does not exist.
type Live struct {
	Workload      *LiveWorkload
	ConfigMap     *corev1.ConfigMap
	Binding       *rbacv1.ClusterRoleBinding
	Service       *corev1.Service // ServiceName's; nil when none is named
	NetworkPolicy *networkingv1.NetworkPolicy
}

// Observe reads, by name, the workload, kmshealth's objects for it and
// the Service c names: one GET each, nothing cached.
func Observe(ctx context.Context, cs kubernetes.Interface, c Config) (*Live, error) {
	t := c.Target
	var l Live
	w, err := GetWorkload(ctx, cs, t)
	switch {
	case err == nil:
		l.Workload = w
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	if l.ConfigMap, err = getOptional(ctx, configMapRef(t), cs.CoreV1().ConfigMaps(t.Namespace).Get); err != nil {
		return nil, err
	}
	if l.Binding, err = getOptional(ctx, bindingRef(t), cs.RbacV1().ClusterRoleBindings().Get); err != nil {
		return nil, err
	}
	if l.NetworkPolicy, err = getOptional(ctx, networkPolicyRef(t), cs.NetworkingV1().NetworkPolicies(t.Namespace).Get); err != nil {
		return nil, err
	}
	if c.ServiceName != "" {
		if l.Service, err = getOptional(ctx, serviceRef(t.Namespace, c.ServiceName), cs.CoreV1().Services(t.Namespace).Get); err != nil {
			return nil, err
		}
	}
	return &l, nil
}

// getOptional is get, with nil for NotFound.
func getOptional[T any](ctx context.Context, ref objectRef, get func(context.Context, string, metav1.GetOptions) (*T, error)) (*T, error) {
	obj, err := get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, ref.fail("get", err)
	}
	return obj, nil
}

// ours reports whether obj is kmshealth's object for t: its labels, and
// (for the cluster-scoped binding, whose name any namespace shares) the
// target annotation.
func ours(obj metav1.Object, t Target) bool {
	l := obj.GetLabels()
	return l[ManagedByLabel] == ManagedByValue && l[ForLabel] == ForLabelValue(t) && obj.GetAnnotations()[TargetAnnotation] == t.String()
}

// Check reports, before anything is written, what in the cluster keeps c
// from being applied, as FieldErrors naming the Config field to change
// (or "target"), or nil: a missing workload or Service, a pod spec the
// sidecar cannot work in (CheckPodSpec), pod volumes of kmshealth's names
// that are someone else's, a Service the port cannot be added to
// (CheckService), and objects at kmshealth's names that kmshealth did not
// create (never taken over).
func (c Config) Check(l *Live) error {
	c = c.Defaulted()
	var es fieldErrors
	t := c.Target
	if l.Workload == nil {
		es.add(field.NewPath("target"), "%s does not exist: create it first (or add depends_on on the resource that does), or fix target", t)
		return es.err()
	}
	es = append(es, FieldErrors(c.CheckPodSpec(&l.Workload.Template.Spec))...)
	for _, v := range l.Workload.Template.Spec.Volumes {
		switch {
		case v.Name == ConfigVolumeName && (v.ConfigMap == nil || v.ConfigMap.Name != ObjectName(t)),
			v.Name == TLSVolumeName && v.Secret == nil:
			es.add(field.NewPath("target"), "%s already has a pod volume named %q that is not kmshealth's: rename it, kmshealth needs that name for its sidecar", t, v.Name)
		}
	}
	foreign := func(fld *field.Path, ref objectRef, obj metav1.Object) {
		if obj != nil && !ours(obj, t) {
			es.add(fld, "%s exists and was not created by kmshealth for %s (it lacks the labels %s=%s, %s=%s and the annotation %s=%s): kmshealth never takes over or deletes it; delete or rename it",
				ref, t, ManagedByLabel, ManagedByValue, ForLabel, ForLabelValue(t), TargetAnnotation, t)
		}
	}
	if l.ConfigMap != nil {
		foreign(field.NewPath("target"), configMapRef(t), l.ConfigMap)
	}
	if l.Binding != nil {
		foreign(field.NewPath("target"), bindingRef(t), l.Binding)
	}
	if l.NetworkPolicy != nil && c.NetworkPolicy.Enabled {
		foreign(field.NewPath("networkPolicy", "enabled"), networkPolicyRef(t), l.NetworkPolicy)
	}
	if c.ServiceName != "" {
		if l.Service == nil {
			es.add(field.NewPath("serviceName"), "Service %s/%s does not exist: create it first (or add depends_on on the resource that does), or leave serviceName empty", t.Namespace, c.ServiceName)
		} else {
			es = append(es, FieldErrors(c.CheckService(l.Service, l.Workload.Template.Labels))...)
		}
	}
	if c.NetworkPolicy.Enabled {
		if s := l.Workload.Selector; s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
			es.add(field.NewPath("networkPolicy", "enabled"), "%s has an empty spec.selector, so a NetworkPolicy for its pods would select every pod in %q: give the workload a selector, or disable the NetworkPolicy", t, t.Namespace)
		}
	}
	return es.err()
}

// applyOptions: kmshealth's fields are kmshealth's, whoever touched them
// last. Force only ever moves fields of kmshealth's apply configurations:
// its own objects, its sidecar, volumes and annotation (names Check
// reserves) and its Service port (whose port number CheckService keeps
// free).
func applyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
}

// Apply writes c's objects, in order: the config ConfigMap, the
// system:auth-delegator binding, the workload's pod template (the sidecar,
// its volumes, the config hash annotation), the Service port, and the
// NetworkPolicy (or deletes kmshealth's NetworkPolicy when it is no longer
// wanted). l is what Observe read and Check accepted; the workload and the
// Service are written only while they have the UIDs read there, so an
// object deleted since is never re-created by the write.
func (c Config) Apply(ctx context.Context, cs kubernetes.Interface, l *Live) error {
	c, err := c.prepared()
	if err != nil {
		return err
	}
	t := c.Target
	if l.Workload == nil {
		return fmt.Errorf("%s does not exist", t)
	}
	cm, err := c.ConfigMapApply()
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps(t.Namespace).Apply(ctx, cm, applyOptions()); err != nil {
		return configMapRef(t).fail("patch", err)
	}
	crb, err := c.ClusterRoleBindingApply()
	if err != nil {
		return err
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, crb, applyOptions()); err != nil {
		return bindingRef(t).fail("patch", err)
	}
	w, err := c.WorkloadApply(l.Workload.UID)
	if err != nil {
		return err
	}
	patch, err := c.RestorePatch(&l.Workload.Template, l.Workload.ResourceVersion)
	if err != nil {
		return err
	}
	if err := PatchWorkload(ctx, cs.AppsV1(), t, patch, FieldManager); err != nil {
		return workloadRef(t).fail("patch", err)
	}
	if err := applyWorkload(ctx, cs, t, w); err != nil {
		return err
	}
	if c.ServiceName != "" {
		if l.Service == nil {
			return fmt.Errorf("rbac proxy for %s: Service %s/%s does not exist", t, t.Namespace, c.ServiceName)
		}
		svc, err := c.ServiceApply(l.Service.UID)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Services(t.Namespace).Apply(ctx, svc, applyOptions()); err != nil {
			return serviceRef(t.Namespace, c.ServiceName).fail("patch", err)
		}
	}
	if c.NetworkPolicy.Enabled {
		np, err := c.NetworkPolicyApply(l.Workload.Selector)
		if err != nil {
			return err
		}
		if _, err := cs.NetworkingV1().NetworkPolicies(t.Namespace).Apply(ctx, np, applyOptions()); err != nil {
			return networkPolicyRef(t).fail("patch", err)
		}
	} else if l.NetworkPolicy != nil && ours(l.NetworkPolicy, t) {
		if err := deleteOurs(ctx, networkPolicyRef(t), l.NetworkPolicy.UID, cs.NetworkingV1().NetworkPolicies(t.Namespace).Delete); err != nil {
			return err
		}
	}
	return nil
}

func applyWorkload(ctx context.Context, cs kubernetes.Interface, t Target, w Workload) error {
	var err error
	switch {
	case w.Deployment != nil:
		_, err = cs.AppsV1().Deployments(t.Namespace).Apply(ctx, w.Deployment, applyOptions())
	case w.StatefulSet != nil:
		_, err = cs.AppsV1().StatefulSets(t.Namespace).Apply(ctx, w.StatefulSet, applyOptions())
	case w.DaemonSet != nil:
		_, err = cs.AppsV1().DaemonSets(t.Namespace).Apply(ctx, w.DaemonSet, applyOptions())
	default:
		return fmt.Errorf("%s: no apply configuration for kind %q", t, t.Kind)
	}
	if err != nil {
		return workloadRef(t).fail("patch", err)
	}
	return nil
}

// PatchWorkload sends RestorePatch's JSON patch to the workload t names, as
// fieldManager; a nil patch sends nothing.
func PatchWorkload(ctx context.Context, apps appsv1client.AppsV1Interface, t Target, patch []byte, fieldManager string) error {
	if patch == nil {
		return nil
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager}
	var err error
	switch t.Kind {
	case KindDeployment:
		_, err = apps.Deployments(t.Namespace).Patch(ctx, t.Name, types.JSONPatchType, patch, opts)
	case KindStatefulSet:
		_, err = apps.StatefulSets(t.Namespace).Patch(ctx, t.Name, types.JSONPatchType, patch, opts)
	case KindDaemonSet:
		_, err = apps.DaemonSets(t.Namespace).Patch(ctx, t.Name, types.JSONPatchType, patch, opts)
	default:
		return fmt.Errorf("%s: no workload of kind %q", t, t.Kind)
	}
	if err != nil {
		return fmt.Errorf("put the kube-rbac-proxy sidecar back whole into %s: %w", t, err)
	}
	return nil
}

// deleteOurs deletes an object kmshealth created, only while it has the
// UID read (a re-created object of the same name is someone else's); gone
// already is done.
func deleteOurs(ctx context.Context, ref objectRef, uid types.UID, del func(context.Context, string, metav1.DeleteOptions) error) error {
	err := del(ctx, ref.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return ref.fail("delete", err)
	}
	return nil
}

// ReleaseServicePort removes kmshealth's port from Service namespace/name
// (the rest of the Service stays); a Service that is gone is done.
func ReleaseServicePort(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	ref := serviceRef(namespace, name)
	svc, err := getOptional(ctx, ref, cs.CoreV1().Services(namespace).Get)
	if err != nil || svc == nil {
		return err
	}
	if _, err := cs.CoreV1().Services(namespace).Apply(ctx, ReleaseService(namespace, name, svc.UID), applyOptions()); err != nil && !apierrors.IsNotFound(err) {
		return ref.fail("patch", err)
	}
	return nil
}

// Uninstall removes everything Apply wrote for c, in the order that never
// leaves a pod template pointing at nothing the reconciler would restore:
// first the config ConfigMap (the record: the reconciler stops
// re-injecting the sidecar), then the workload's fields (the sidecar, its
// volumes, the annotation: released, so they disappear unless another
// field manager also holds them), the Service port, the NetworkPolicy and,
// last, the binding. What is gone already is skipped, and objects that are
// not kmshealth's are never deleted.
func (c Config) Uninstall(ctx context.Context, cs kubernetes.Interface) error {
	c = c.Defaulted()
	t := c.Target
	l, err := Observe(ctx, cs, c)
	if err != nil {
		return err
	}
	if l.ConfigMap != nil && ours(l.ConfigMap, t) {
		if err := deleteOurs(ctx, configMapRef(t), l.ConfigMap.UID, cs.CoreV1().ConfigMaps(t.Namespace).Delete); err != nil {
			return err
		}
	}
	if l.Workload != nil {
		w, err := ReleaseWorkload(t, l.Workload.UID)
		if err != nil {
			return err
		}
		if err := applyWorkload(ctx, cs, t, w); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if c.ServiceName != "" {
		if err := ReleaseServicePort(ctx, cs, t.Namespace, c.ServiceName); err != nil {
			return err
		}
	}
	if l.NetworkPolicy != nil && ours(l.NetworkPolicy, t) {
		if err := deleteOurs(ctx, networkPolicyRef(t), l.NetworkPolicy.UID, cs.NetworkingV1().NetworkPolicies(t.Namespace).Delete); err != nil {
			return err
		}
	}
	if l.Binding != nil && ours(l.Binding, t) {
		if err := deleteOurs(ctx, bindingRef(t), l.Binding.UID, cs.RbacV1().ClusterRoleBindings().Delete); err != nil {
			return err
		}
	}
	return nil
}

// Drift describes how l differs from what Apply writes for c, on
// kmshealth's fields only; empty means in sync. A missing workload is
// one difference (nothing else can be judged without it).
func (c Config) Drift(l *Live) ([]string, error) {
	c, err := c.prepared()
	if err != nil {
		return nil, err
	}
	t := c.Target
	if l.Workload == nil {
		return []string{t.String() + " does not exist"}, nil
	}
	diffs, err := c.Diff(&l.Workload.Template)
	if err != nil {
		return nil, err
	}
	for i, d := range diffs {
		diffs[i] = t.String() + ": " + d
	}
	differ := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }

	cmRef := configMapRef(t)
	if cm := l.ConfigMap; cm == nil || !ours(cm, t) {
		differ("%s is missing", cmRef)
	} else {
		file, err := c.ConfigFile()
		if err != nil {
			return nil, err
		}
		record, err := c.EncodeRecord()
		if err != nil {
			return nil, err
		}
		if cm.Data[ConfigFileKey] != string(file) {
			differ("%s: %s was changed", cmRef, ConfigFileKey)
		}
		if cm.Data[RecordKey] != string(record) {
			differ("%s: %s was changed", cmRef, RecordKey)
		}
	}

	crbRef := bindingRef(t)
	wantSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: t.Namespace, Name: c.ServiceAccountName}
	if b := l.Binding; b == nil || !ours(b, t) {
		differ("%s is missing", crbRef)
	} else if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != AuthDelegatorClusterRole || !slices.Equal(b.Subjects, []rbacv1.Subject{wantSubject}) {
		differ("%s does not bind ServiceAccount %s/%s to ClusterRole %s alone", crbRef, t.Namespace, c.ServiceAccountName, AuthDelegatorClusterRole)
	}

	if c.ServiceName != "" {
		svcRef := serviceRef(t.Namespace, c.ServiceName)
		if l.Service == nil {
			differ("%s is missing", svcRef)
		} else if i := slices.IndexFunc(l.Service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ServicePortName }); i < 0 {
			differ("%s has no port %q", svcRef, ServicePortName)
		} else if p := l.Service.Spec.Ports[i]; p.Port != c.ListenPort || p.TargetPort.IntValue() != int(c.ListenPort) || protocol(p.Protocol) != corev1.ProtocolTCP {
			differ("%s port %q is %d → %s/%s, want %d → %d/TCP", svcRef, ServicePortName, p.Port, p.TargetPort.String(), p.Protocol, c.ListenPort, c.ListenPort)
		}
	}

	npRef := networkPolicyRef(t)
	np := l.NetworkPolicy
	switch {
	case c.NetworkPolicy.Enabled && (np == nil || !ours(np, t)):
		differ("%s is missing", npRef)
	case c.NetworkPolicy.Enabled:
		want, err := c.desiredNetworkPolicy(l.Workload.Selector)
		if err != nil {
			return nil, err
		}
		if !equality.Semantic.DeepEqual(np.Spec, want.Spec) {
			differ("%s: its spec was changed", npRef)
		}
	case np != nil && ours(np, t):
		differ("%s exists, but no NetworkPolicy is wanted", npRef)
	}
	return diffs, nil
}

// desiredNetworkPolicy is NetworkPolicyApply as a typed object.
func (c Config) desiredNetworkPolicy(podSelector *metav1.LabelSelector) (*networkingv1.NetworkPolicy, error) {
	ac, err := c.NetworkPolicyApply(podSelector)
	if err != nil {
		return nil, err
	}
	var out networkingv1.NetworkPolicy
	if err := roundTripJSON(ac, &out); err != nil {
		return nil, fmt.Errorf("rbac proxy for %s: the NetworkPolicy: %w", c.Target, err)
	}
	return &out, nil
}

// roundTripJSON decodes what an apply configuration means into the typed
// object out.
func roundTripJSON(ac, out any) error {
	data, err := json.Marshal(ac)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
