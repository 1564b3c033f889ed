package rbacproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// This file is the part of the package that talks to the API server. The
// objects kmshealth owns outright for one protected workload — the config
// ConfigMap, the system:auth-delegator binding, the NetworkPolicy — are an
// install.Declaration (Declare): read, refused when someone else's,
// applied in order, compared and deleted (UID-preconditioned) by install,
// as the installers' objects are. What stays here is what is not an object
// of ours: kmshealth's fields in the user's workload (the sidecar, its
// volumes, the config hash annotation) and in their Service (the proxy
// port), written by server-side apply as FieldManager and released again,
// and the checks and comparisons that say, field by field, what keeps a
// Config from working (Check) or what changed (Drift).

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

// objectError is install's failed request as an *ObjectError; other errors
// (a refusal) as they are.
func objectError(err error) error {
	var re *install.RequestError
	if err == nil || !errors.As(err, &re) {
		return err
	}
	return failed(re.Verb, re.ID, re.Err)
}

func failed(verb string, id install.ID, err error) error {
	return &ObjectError{Verb: verb, Kind: id.Kind.Name, Group: id.Kind.GVR.Group, Resource: id.Kind.GVR.Resource, Namespace: id.Namespace, Name: id.Name, Err: err}
}

func workloadID(t Target) install.ID {
	id, _ := install.WorkloadID(t)
	return id
}

func configMapID(t Target) install.ID {
	return install.ID{Kind: install.ConfigMaps, Namespace: t.Namespace, Name: ObjectName(t)}
}

func bindingID(t Target) install.ID {
	return install.ID{Kind: install.ClusterRoleBindings, Name: ClusterRoleBindingName(t)}
}

func networkPolicyID(t Target) install.ID {
	return install.ID{Kind: install.NetworkPolicies, Namespace: t.Namespace, Name: ObjectName(t)}
}

func serviceID(namespace, name string) install.ID {
	return install.ID{Kind: install.Services, Namespace: namespace, Name: name}
}

// marks are what every object of ours for t carries.
func marks(t Target) string {
	return fmt.Sprintf("%s=%s, %s=%s and the annotation %s=%s", ManagedByLabel, ManagedByValue, ForLabel, ForLabelValue(t), TargetAnnotation, t)
}

// ours reports whether obj is kmshealth's object for t: its labels, and
// (for the cluster-scoped binding, whose name any namespace shares) the
// target annotation.
func ours(obj metav1.Object, t Target) bool {
	l := obj.GetLabels()
	return l[ManagedByLabel] == ManagedByValue && l[ForLabel] == ForLabelValue(t) && obj.GetAnnotations()[TargetAnnotation] == t.String()
}

// Declare is the installation of objs, objects kmshealth owns outright for
// t: told apart by ours, with no namespace of their own (the workload's is
// the user's).
func Declare(t Target, objs ...install.Object) install.Declaration {
	return install.Declaration{Objects: objs, Ours: func(obj metav1.Object) bool { return ours(obj, t) }, Marks: marks(t)}
}

// objects are c's objects of its own, in apply order: the config
// ConfigMap, the binding and the NetworkPolicy (Unwanted when disabled),
// each with the comparison Drift reports in. c must be prepared;
// podSelector is the workload's.
func (c Config) objects(podSelector *metav1.LabelSelector) ([]install.Object, error) {
	t := c.Target
	cm, err := c.ConfigMapApply()
	if err != nil {
		return nil, err
	}
	crb, err := c.ClusterRoleBindingApply()
	if err != nil {
		return nil, err
	}
	npID := networkPolicyID(t)
	np := install.Object{ID: npID, Unwanted: true}
	if c.NetworkPolicy.Enabled {
		ac, err := c.NetworkPolicyApply(podSelector)
		if err != nil {
			return nil, err
		}
		want, err := c.desiredNetworkPolicy(podSelector)
		if err != nil {
			return nil, err
		}
		np = install.Object{ID: npID, Body: ac, Compare: compare(npID, func(have *networkingv1.NetworkPolicy) []string {
			if !equality.Semantic.DeepEqual(have.Spec, want.Spec) {
				return []string{npID.String() + ": its spec was changed"}
			}
			return nil
		})}
	}
	cmID, crbID := configMapID(t), bindingID(t)
	wantSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: t.Namespace, Name: c.ServiceAccountName}
	return []install.Object{
		{ID: cmID, Body: cm, Compare: compare(cmID, func(have *corev1.ConfigMap) []string {
			var diffs []string
			for _, key := range []string{ConfigFileKey, RecordKey} {
				if have.Data[key] != cm.Data[key] {
					diffs = append(diffs, fmt.Sprintf("%s: %s was changed", cmID, key))
				}
			}
			return diffs
		})},
		{ID: crbID, Body: crb, Compare: compare(crbID, func(b *rbacv1.ClusterRoleBinding) []string {
			if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != AuthDelegatorClusterRole || !slices.Equal(b.Subjects, []rbacv1.Subject{wantSubject}) {
				return []string{fmt.Sprintf("%s does not bind ServiceAccount %s/%s to ClusterRole %s alone", crbID, t.Namespace, c.ServiceAccountName, AuthDelegatorClusterRole)}
			}
			return nil
		})},
		np,
	}, nil
}

// compare is an install.Object's Compare over the typed object.
func compare[T any](id install.ID, diff func(*T) []string) func(*unstructured.Unstructured) []string {
	return func(live *unstructured.Unstructured) []string {
		typed, err := install.As[T](live)
		if err != nil {
			return []string{fmt.Sprintf("%s cannot be read: %v", id, err)}
		}
		return diff(typed)
	}
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
func GetWorkload(ctx context.Context, cs clientset.Core, t Target) (*LiveWorkload, error) {
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
		return nil, failed("get", workloadID(t), err)
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
func Observe(ctx context.Context, cl install.Clients, c Config) (*Live, error) {
	t := c.Target
	var l Live
	w, err := GetWorkload(ctx, cl.Core, t)
	switch {
	case err == nil:
		l.Workload = w
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	objs := []install.Object{{ID: configMapID(t)}, {ID: bindingID(t)}, {ID: networkPolicyID(t)}}
	if c.ServiceName != "" {
		objs = append(objs, install.Object{ID: serviceID(t.Namespace, c.ServiceName)})
	}
	il, err := install.Observe(ctx, cl, Declare(t, objs...))
	if err != nil {
		return nil, objectError(err)
	}
	if l.ConfigMap, err = typed[corev1.ConfigMap](il, configMapID(t)); err != nil {
		return nil, err
	}
	if l.Binding, err = typed[rbacv1.ClusterRoleBinding](il, bindingID(t)); err != nil {
		return nil, err
	}
	if l.NetworkPolicy, err = typed[networkingv1.NetworkPolicy](il, networkPolicyID(t)); err != nil {
		return nil, err
	}
	if c.ServiceName != "" {
		if l.Service, err = typed[corev1.Service](il, serviceID(t.Namespace, c.ServiceName)); err != nil {
			return nil, err
		}
	}
	return &l, nil
}

// typed is the object id names in l as T, nil when it does not exist.
func typed[T any](l *install.Live, id install.ID) (*T, error) {
	u := l.Get(id)
	if u == nil {
		return nil, nil
	}
	return install.As[T](u)
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
	foreign := func(fld *field.Path, id install.ID, obj metav1.Object) {
		if !ours(obj, t) {
			es.add(fld, "%s exists and was not created by kmshealth for %s (it lacks the labels %s): kmshealth never takes over or deletes it; delete or rename it", id, t, marks(t))
		}
	}
	if l.ConfigMap != nil {
		foreign(field.NewPath("target"), configMapID(t), l.ConfigMap)
	}
	if l.Binding != nil {
		foreign(field.NewPath("target"), bindingID(t), l.Binding)
	}
	if l.NetworkPolicy != nil && c.NetworkPolicy.Enabled {
		foreign(field.NewPath("networkPolicy", "enabled"), networkPolicyID(t), l.NetworkPolicy)
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

// Apply writes c's objects, in order: the config ConfigMap and the
// system:auth-delegator binding (install.Apply), the workload's pod
// template (the sidecar, its volumes, the config hash annotation), the
// Service port, and the NetworkPolicy (or deletes kmshealth's NetworkPolicy
// when it is no longer wanted), last, so the workload's pods are never
// fenced off before the proxy is in. l is what Observe read and Check
// accepted; the workload and the Service are written only while they have
// the UIDs read there, so an object deleted since is never re-created by
// the write. Forced: kmshealth's fields are kmshealth's, whoever touched
// them last; Check reserves the names of the fields it writes in objects
// not its own.
func (c Config) Apply(ctx context.Context, cl install.Clients, l *Live) error {
	c, err := c.prepared()
	if err != nil {
		return err
	}
	t := c.Target
	if l.Workload == nil {
		return fmt.Errorf("%s does not exist", t)
	}
	objs, err := c.objects(l.Workload.Selector)
	if err != nil {
		return err
	}
	if err := install.Apply(ctx, cl, Declare(t, objs[:2]...)); err != nil {
		return objectError(err)
	}
	w, err := c.WorkloadApply(l.Workload.UID)
	if err != nil {
		return err
	}
	patch, err := c.RestorePatch(&l.Workload.Template, l.Workload.ResourceVersion)
	if err != nil {
		return err
	}
	if err := PatchWorkload(ctx, cl.Core.AppsV1(), t, patch, FieldManager); err != nil {
		return failed("patch", workloadID(t), err)
	}
	if err := install.ApplyFields(ctx, cl, workloadID(t), w.Object()); err != nil {
		return objectError(err)
	}
	if c.ServiceName != "" {
		if l.Service == nil {
			return fmt.Errorf("rbac proxy for %s: Service %s/%s does not exist", t, t.Namespace, c.ServiceName)
		}
		svc, err := c.ServiceApply(l.Service.UID)
		if err != nil {
			return err
		}
		if err := install.ApplyFields(ctx, cl, serviceID(t.Namespace, c.ServiceName), svc); err != nil {
			return objectError(err)
		}
	}
	return objectError(install.Apply(ctx, cl, Declare(t, objs[2:]...)))
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

// ReleaseServicePort removes kmshealth's port from Service namespace/name
// (the rest of the Service stays); a Service that is gone is done.
func ReleaseServicePort(ctx context.Context, cl install.Clients, namespace, name string) error {
	id := serviceID(namespace, name)
	svc, err := cl.Core.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return failed("get", id, err)
	}
	if err := install.ApplyFields(ctx, cl, id, ReleaseService(namespace, name, svc.UID)); err != nil && !apierrors.IsNotFound(err) {
		return objectError(err)
	}
	return nil
}

// Uninstall removes everything Apply wrote for c, in the order that never
// leaves a pod template pointing at nothing the reconciler would restore:
// first the config ConfigMap (the record: the reconciler stops
// re-injecting the sidecar), then the workload's fields (the sidecar, its
// volumes, the annotation: released, so they disappear unless another
// field manager also holds them), the Service port, the NetworkPolicy and,
// last, the binding (install.Delete, in reverse order). What is gone
// already is skipped, and objects that are not kmshealth's are never
// deleted.
func (c Config) Uninstall(ctx context.Context, cl install.Clients) error {
	c = c.Defaulted()
	t := c.Target
	w, err := GetWorkload(ctx, cl.Core, t)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if _, err := install.Delete(ctx, cl, Declare(t, install.Object{ID: configMapID(t)})); err != nil {
		return objectError(err)
	}
	if w != nil {
		release, err := ReleaseWorkload(t, w.UID)
		if err != nil {
			return err
		}
		if err := install.ApplyFields(ctx, cl, workloadID(t), release.Object()); err != nil && !apierrors.IsNotFound(err) {
			return objectError(err)
		}
	}
	if c.ServiceName != "" {
		if err := ReleaseServicePort(ctx, cl, t.Namespace, c.ServiceName); err != nil {
			return err
		}
	}
	_, err = install.Delete(ctx, cl, Declare(t, install.Object{ID: bindingID(t)}, install.Object{ID: networkPolicyID(t)}))
	return objectError(err)
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
	objs, err := c.objects(l.Workload.Selector)
	if err != nil {
		return nil, err
	}
	d := Declare(t, objs...)
	var read []*unstructured.Unstructured // what Observe read, as install reads it
	for id, obj := range map[install.ID]runtime.Object{configMapID(t): l.ConfigMap, bindingID(t): l.Binding, networkPolicyID(t): l.NetworkPolicy} {
		if reflect.ValueOf(obj).IsNil() {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion(id.Kind.GVR.GroupVersion().String())
		u.SetKind(id.Kind.Name)
		read = append(read, u)
	}
	diffs = append(diffs, install.LiveOf(d, read...).Drift(d)...)

	if c.ServiceName != "" {
		svcID := serviceID(t.Namespace, c.ServiceName)
		differ := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
		if l.Service == nil {
			differ("%s is missing", svcID)
		} else if i := slices.IndexFunc(l.Service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ServicePortName }); i < 0 {
			differ("%s has no port %q", svcID, ServicePortName)
		} else if p := l.Service.Spec.Ports[i]; p.Port != c.ListenPort || p.TargetPort.IntValue() != int(c.ListenPort) || protocol(p.Protocol) != corev1.ProtocolTCP {
			differ("%s port %q is %d → %s/%s, want %d → %d/TCP", svcID, ServicePortName, p.Port, p.TargetPort.String(), p.Protocol, c.ListenPort, c.ListenPort)
		}
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
