package reconcilerinstall

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// Live is what the cluster holds under an installation's names: nil for an
// object that does not exist. The objects at the fixed names may belong to
// someone else (see Owned); the source Roles and RoleBindings are listed by
// the installation's labels, in every namespace.
type Live struct {
	Namespace           *corev1.Namespace
	ServiceAccount      *corev1.ServiceAccount
	ClusterRole         *rbacv1.ClusterRole
	ClusterRoleBinding  *rbacv1.ClusterRoleBinding
	LeaderRole          *rbacv1.Role
	LeaderRoleBinding   *rbacv1.RoleBinding
	SourceRoles         []rbacv1.Role // sorted by namespace
	SourceRoleBindings  []rbacv1.RoleBinding
	Deployment          *appsv1.Deployment
	PodDisruptionBudget *policyv1.PodDisruptionBudget
	MetricsService      *corev1.Service

	namespace, name string
}

// get returns the object, nil when it does not exist.
func get[T any](ctx context.Context, what string, fn func(context.Context, string, metav1.GetOptions) (*T, error), name string) (*T, error) {
	obj, err := fn(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, name, err)
	}
	return obj, nil
}

// Observe reads the installation namespace/name: nine GETs and two
// label-selected LISTs (Roles and RoleBindings in all namespaces); no
// discovery, no watch.
func Observe(ctx context.Context, core kubernetes.Interface, namespace, name string) (*Live, error) {
	c := Config{Namespace: namespace, Name: name}
	l := &Live{namespace: namespace, name: name}
	var err error
	if l.Namespace, err = get(ctx, "Namespace", core.CoreV1().Namespaces().Get, namespace); err != nil {
		return nil, err
	}
	if l.ServiceAccount, err = get(ctx, "ServiceAccount "+namespace+"/", core.CoreV1().ServiceAccounts(namespace).Get, c.ServiceAccountName()); err != nil {
		return nil, err
	}
	if l.ClusterRole, err = get(ctx, "ClusterRole", core.RbacV1().ClusterRoles().Get, c.ClusterRoleName()); err != nil {
		return nil, err
	}
	if l.ClusterRoleBinding, err = get(ctx, "ClusterRoleBinding", core.RbacV1().ClusterRoleBindings().Get, c.ClusterRoleName()); err != nil {
		return nil, err
	}
	if l.LeaderRole, err = get(ctx, "Role "+namespace+"/", core.RbacV1().Roles(namespace).Get, c.LeaderElectionRoleName()); err != nil {
		return nil, err
	}
	if l.LeaderRoleBinding, err = get(ctx, "RoleBinding "+namespace+"/", core.RbacV1().RoleBindings(namespace).Get, c.LeaderElectionRoleName()); err != nil {
		return nil, err
	}
	if l.Deployment, err = get(ctx, "Deployment "+namespace+"/", core.AppsV1().Deployments(namespace).Get, name); err != nil {
		return nil, err
	}
	if l.PodDisruptionBudget, err = get(ctx, "PodDisruptionBudget "+namespace+"/", core.PolicyV1().PodDisruptionBudgets(namespace).Get, name); err != nil {
		return nil, err
	}
	if l.MetricsService, err = get(ctx, "Service "+namespace+"/", core.CoreV1().Services(namespace).Get, c.MetricsServiceName()); err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: ownerSelector(namespace, name) + "," + ComponentLabel + "=" + ComponentSources}
	roles, err := core.RbacV1().Roles(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list the reconciler's source Roles: %w", err)
	}
	bindings, err := core.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list the reconciler's source RoleBindings: %w", err)
	}
	for _, r := range roles.Items {
		if r.Name == c.SourcesRoleName() {
			l.SourceRoles = append(l.SourceRoles, r)
		}
	}
	for _, b := range bindings.Items {
		if b.Name == c.SourcesRoleName() {
			l.SourceRoleBindings = append(l.SourceRoleBindings, b)
		}
	}
	slices.SortFunc(l.SourceRoles, func(a, b rbacv1.Role) int { return compareStrings(a.Namespace, b.Namespace) })
	slices.SortFunc(l.SourceRoleBindings, func(a, b rbacv1.RoleBinding) int { return compareStrings(a.Namespace, b.Namespace) })
	return l, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Owned reports whether obj belongs to the installation namespace/name: it
// carries its labels or, when someone removed the labels, kmshealth's apply
// entry in managedFields (and no other installation's labels).
func Owned(obj metav1.Object, namespace, name string) bool {
	l := obj.GetLabels()
	if l[cabundle.ManagedByLabel] == cabundle.ManagedByValue && l[NameLabel] == NameValue {
		return l[InstanceLabel] == name && l[NamespaceLabel] == namespace
	}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// ownsNamespace is stricter: only the labels kmshealth set when it created
// the namespace count, so a namespace is never deleted on a guess.
func ownsNamespace(ns *corev1.Namespace, namespace, name string) bool {
	l := ns.GetLabels()
	return l[cabundle.ManagedByLabel] == cabundle.ManagedByValue && l[NameLabel] == NameValue &&
		l[InstanceLabel] == name && l[NamespaceLabel] == namespace
}

// NamespaceCreated reports whether kmshealth created the namespace for this
// installation (create_namespace = true).
func (l *Live) NamespaceCreated() bool {
	return l.Namespace != nil && ownsNamespace(l.Namespace, l.namespace, l.name)
}

// Installed reports whether the installation's Deployment exists and is
// kmshealth's: without it there is no reconciler to speak of.
func (l *Live) Installed() bool {
	return l.Deployment != nil && Owned(l.Deployment, l.namespace, l.name)
}

// Exists reports whether any object of the installation is left, so a
// partly deleted installation is repaired, not forgotten.
func (l *Live) Exists() bool {
	owned := func(obj metav1.Object) bool { return obj != nil && Owned(obj, l.namespace, l.name) }
	return owned(asObject(l.ServiceAccount)) || owned(asObject(l.ClusterRole)) || owned(asObject(l.ClusterRoleBinding)) ||
		owned(asObject(l.LeaderRole)) || owned(asObject(l.LeaderRoleBinding)) || owned(asObject(l.Deployment)) ||
		owned(asObject(l.PodDisruptionBudget)) || owned(asObject(l.MetricsService)) ||
		len(l.SourceRoles) > 0 || len(l.SourceRoleBindings) > 0
}

// reconcilerContainer returns the Deployment's reconciler container.
func (l *Live) reconcilerContainer() *corev1.Container {
	if l.Deployment == nil {
		return nil
	}
	for i, ct := range l.Deployment.Spec.Template.Spec.Containers {
		if ct.Name == ContainerName {
			return &l.Deployment.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// Config reconstructs the installation from the cluster, for import and
// drift: image, replicas and resources from the Deployment, the sources
// from what the sources Roles actually grant.
func (l *Live) Config() Config {
	c := Config{Namespace: l.namespace, Name: l.name, CreateNamespace: l.NamespaceCreated(), Sources: l.Sources()}
	if l.Deployment != nil {
		c.Replicas = 1
		if r := l.Deployment.Spec.Replicas; r != nil {
			c.Replicas = *r
		}
	}
	if ct := l.reconcilerContainer(); ct != nil {
		c.Image = ct.Image
		c.CPURequest = quantity(ct.Resources.Requests, corev1.ResourceCPU)
		c.MemoryRequest = quantity(ct.Resources.Requests, corev1.ResourceMemory)
		c.MemoryLimit = quantity(ct.Resources.Limits, corev1.ResourceMemory)
	}
	return c
}

func quantity(list corev1.ResourceList, name corev1.ResourceName) string {
	if q, ok := list[name]; ok {
		return q.String()
	}
	return ""
}

// Sources are the CA bundle sources the reconciler can really read: those
// listed in a sources Role's annotation whose object the Role grants
// get/list/watch on by name, with a RoleBinding to the ServiceAccount. A
// name removed from resourceNames, a missing verb or a deleted binding
// drops the source, so the next plan shows it.
func (l *Live) Sources() []cabundle.Source {
	c := Config{Namespace: l.namespace, Name: l.name}
	var out []cabundle.Source
	for _, role := range l.SourceRoles {
		if !Owned(&role, l.namespace, l.name) || !l.sourcesBound(role.Namespace, c) {
			continue
		}
		for _, s := range splitSources(role.Annotations[SourcesAnnotation]) {
			if s.Namespace == role.Namespace && grants(role.Rules, s) {
				out = append(out, s)
			}
		}
	}
	return sortedSources(out)
}

// sourcesBound reports whether the sources RoleBinding in ns binds the
// sources Role to the ServiceAccount.
func (l *Live) sourcesBound(ns string, c Config) bool {
	for _, b := range l.SourceRoleBindings {
		if b.Namespace != ns || !Owned(&b, l.namespace, l.name) {
			continue
		}
		if b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "Role" || b.RoleRef.Name != c.SourcesRoleName() {
			return false
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == c.ServiceAccountName() && s.Namespace == c.Namespace {
				return true
			}
		}
	}
	return false
}

// grants reports whether rules allow get, list and watch of source s by name.
func grants(rules []rbacv1.PolicyRule, s cabundle.Source) bool {
	need := map[string]bool{"get": true, "list": true, "watch": true}
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, corev1.GroupName) || !slices.Contains(r.Resources, resourceOf(s.Kind)) ||
			!slices.Contains(r.ResourceNames, s.Name) {
			continue
		}
		for _, v := range r.Verbs {
			delete(need, v)
		}
	}
	return len(need) == 0
}

// Drift lists the objects that are not as o would write them: missing, not
// kmshealth's, or with a field kmshealth applied now changed or owned by
// another field manager (an edit, a `kubectl scale`), plus leftovers that o
// no longer has. Empty means an apply would change nothing. Fields other
// managers added are not drift: server-side apply leaves them alone.
func (l *Live) Drift(o Objects) []string {
	var drift []string
	check := func(what string, exists, owned bool, extract func() (any, error), want any) {
		switch {
		case !exists:
			drift = append(drift, what+" is missing")
		case !owned:
			drift = append(drift, what+" is not managed by kmshealth")
		default:
			got, err := extract()
			if err != nil || !sameJSON(got, want) {
				drift = append(drift, what+" was changed")
			}
		}
	}
	ns, name := l.namespace, l.name
	if o.Namespace != nil {
		check("Namespace "+ns, l.Namespace != nil, l.NamespaceCreated(),
			func() (any, error) { return corev1ac.ExtractNamespace(l.Namespace, FieldManager) }, o.Namespace)
	}
	check("ServiceAccount "+ns+"/"+*o.ServiceAccount.Name, l.ServiceAccount != nil, l.ServiceAccount != nil && Owned(l.ServiceAccount, ns, name),
		func() (any, error) { return corev1ac.ExtractServiceAccount(l.ServiceAccount, FieldManager) }, o.ServiceAccount)
	check("ClusterRole "+*o.ClusterRole.Name, l.ClusterRole != nil, l.ClusterRole != nil && Owned(l.ClusterRole, ns, name),
		func() (any, error) { return rbacv1ac.ExtractClusterRole(l.ClusterRole, FieldManager) }, o.ClusterRole)
	check("ClusterRoleBinding "+*o.ClusterRoleBinding.Name, l.ClusterRoleBinding != nil, l.ClusterRoleBinding != nil && Owned(l.ClusterRoleBinding, ns, name),
		func() (any, error) { return rbacv1ac.ExtractClusterRoleBinding(l.ClusterRoleBinding, FieldManager) }, o.ClusterRoleBinding)
	check("Role "+ns+"/"+*o.LeaderRole.Name, l.LeaderRole != nil, l.LeaderRole != nil && Owned(l.LeaderRole, ns, name),
		func() (any, error) { return rbacv1ac.ExtractRole(l.LeaderRole, FieldManager) }, o.LeaderRole)
	check("RoleBinding "+ns+"/"+*o.LeaderRoleBinding.Name, l.LeaderRoleBinding != nil, l.LeaderRoleBinding != nil && Owned(l.LeaderRoleBinding, ns, name),
		func() (any, error) { return rbacv1ac.ExtractRoleBinding(l.LeaderRoleBinding, FieldManager) }, o.LeaderRoleBinding)
	check("Deployment "+ns+"/"+name, l.Deployment != nil, l.Installed(),
		func() (any, error) { return appsv1ac.ExtractDeployment(l.Deployment, FieldManager) }, o.Deployment)
	check("Service "+ns+"/"+*o.MetricsService.Name, l.MetricsService != nil, l.MetricsService != nil && Owned(l.MetricsService, ns, name),
		func() (any, error) { return corev1ac.ExtractService(l.MetricsService, FieldManager) }, o.MetricsService)
	switch {
	case o.PodDisruptionBudget != nil:
		check("PodDisruptionBudget "+ns+"/"+name, l.PodDisruptionBudget != nil, l.PodDisruptionBudget != nil && Owned(l.PodDisruptionBudget, ns, name),
			func() (any, error) { return policyv1ac.ExtractPodDisruptionBudget(l.PodDisruptionBudget, FieldManager) }, o.PodDisruptionBudget)
	case l.PodDisruptionBudget != nil && Owned(l.PodDisruptionBudget, ns, name):
		drift = append(drift, "PodDisruptionBudget "+ns+"/"+name+" is left over")
	}

	wantRoles := map[string]*rbacv1ac.RoleApplyConfiguration{}
	for _, r := range o.SourceRoles {
		wantRoles[*r.Namespace] = r
	}
	for i := range l.SourceRoles {
		if _, ok := wantRoles[l.SourceRoles[i].Namespace]; !ok {
			drift = append(drift, "Role "+l.SourceRoles[i].Namespace+"/"+l.SourceRoles[i].Name+" is left over")
		}
	}
	for _, want := range o.SourceRoles {
		live := findByNamespace(l.SourceRoles, *want.Namespace, func(r rbacv1.Role) string { return r.Namespace })
		check("Role "+*want.Namespace+"/"+*want.Name, live != nil, live != nil,
			func() (any, error) { return rbacv1ac.ExtractRole(live, FieldManager) }, want)
	}
	wantBindings := map[string]bool{}
	for _, b := range o.SourceRoleBindings {
		wantBindings[*b.Namespace] = true
	}
	for i := range l.SourceRoleBindings {
		if !wantBindings[l.SourceRoleBindings[i].Namespace] {
			drift = append(drift, "RoleBinding "+l.SourceRoleBindings[i].Namespace+"/"+l.SourceRoleBindings[i].Name+" is left over")
		}
	}
	for _, want := range o.SourceRoleBindings {
		live := findByNamespace(l.SourceRoleBindings, *want.Namespace, func(b rbacv1.RoleBinding) string { return b.Namespace })
		check("RoleBinding "+*want.Namespace+"/"+*want.Name, live != nil, live != nil,
			func() (any, error) { return rbacv1ac.ExtractRoleBinding(live, FieldManager) }, want)
	}
	return drift
}

func findByNamespace[T any](items []T, ns string, namespaceOf func(T) string) *T {
	for i := range items {
		if namespaceOf(items[i]) == ns {
			return &items[i]
		}
	}
	return nil
}

// sameJSON compares two apply configurations by their serialized form,
// which is what the API server would receive.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
