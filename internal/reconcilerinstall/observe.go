package reconcilerinstall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
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

// Observe reads the installation namespace/name: nine GETs and two
// label-selected LISTs (Roles and RoleBindings in all namespaces); no
// discovery, no watch.
func Observe(ctx context.Context, core kubernetes.Interface, namespace, name string) (*Live, error) {
	c := Config{Namespace: namespace, Name: name}
	l := &Live{namespace: namespace, name: name}
	var err error
	if l.Namespace, err = install.Get(ctx, "Namespace", core.CoreV1().Namespaces().Get, namespace); err != nil {
		return nil, err
	}
	if l.ServiceAccount, err = install.Get(ctx, "ServiceAccount "+namespace+"/", core.CoreV1().ServiceAccounts(namespace).Get, c.ServiceAccountName()); err != nil {
		return nil, err
	}
	if l.ClusterRole, err = install.Get(ctx, "ClusterRole", core.RbacV1().ClusterRoles().Get, c.ClusterRoleName()); err != nil {
		return nil, err
	}
	if l.ClusterRoleBinding, err = install.Get(ctx, "ClusterRoleBinding", core.RbacV1().ClusterRoleBindings().Get, c.ClusterRoleName()); err != nil {
		return nil, err
	}
	if l.LeaderRole, err = install.Get(ctx, "Role "+namespace+"/", core.RbacV1().Roles(namespace).Get, c.LeaderElectionRoleName()); err != nil {
		return nil, err
	}
	if l.LeaderRoleBinding, err = install.Get(ctx, "RoleBinding "+namespace+"/", core.RbacV1().RoleBindings(namespace).Get, c.LeaderElectionRoleName()); err != nil {
		return nil, err
	}
	if l.Deployment, err = install.Get(ctx, "Deployment "+namespace+"/", core.AppsV1().Deployments(namespace).Get, name); err != nil {
		return nil, err
	}
	if l.PodDisruptionBudget, err = install.Get(ctx, "PodDisruptionBudget "+namespace+"/", core.PolicyV1().PodDisruptionBudgets(namespace).Get, name); err != nil {
		return nil, err
	}
	if l.MetricsService, err = install.Get(ctx, "Service "+namespace+"/", core.CoreV1().Services(namespace).Get, c.MetricsServiceName()); err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: owner(namespace, name).Selector() + "," + install.ComponentLabel + "=" + ComponentSources}
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

// Owned reports whether obj belongs to the installation namespace/name
// (see install.Owner.Owns).
func Owned(obj metav1.Object, namespace, name string) bool { return owner(namespace, name).Owns(obj) }

// NamespaceCreated reports whether kmshealth created the namespace for this
// installation (create_namespace = true).
func (l *Live) NamespaceCreated() bool {
	// Only the labels kmshealth set when it created the namespace count, so
	// a namespace is never deleted on a guess.
	return l.Namespace != nil && owner(l.namespace, l.name).Labelled(l.Namespace)
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
	return owned(install.AsObject(l.ServiceAccount)) || owned(install.AsObject(l.ClusterRole)) || owned(install.AsObject(l.ClusterRoleBinding)) ||
		owned(install.AsObject(l.LeaderRole)) || owned(install.AsObject(l.LeaderRoleBinding)) || owned(install.AsObject(l.Deployment)) ||
		owned(install.AsObject(l.PodDisruptionBudget)) || owned(install.AsObject(l.MetricsService)) ||
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
		c.Resources = install.ResourcesOf(ct.Resources)
		for _, a := range ct.Args {
			if v, ok := strings.CutPrefix(a, kmsTargetFlag); ok {
				if t, err := kmshealth.ParseTarget(v); err == nil {
					c.KMSTarget = t
				}
			}
			if v, ok := strings.CutPrefix(a, kmsMaxStalenessFlag); ok {
				if d, err := time.ParseDuration(v); err == nil {
					c.KMSMaxStaleness = d
				}
			}
		}
	}
	return c
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
	const fieldManager = install.FieldManager
	var drift install.Drift
	check := drift.Check
	ns, name := l.namespace, l.name
	if o.Namespace != nil {
		check("Namespace "+ns, l.Namespace != nil, l.NamespaceCreated(),
			func() (any, error) { return corev1ac.ExtractNamespace(l.Namespace, fieldManager) }, o.Namespace)
	}
	check("ServiceAccount "+ns+"/"+*o.ServiceAccount.Name, l.ServiceAccount != nil, l.ServiceAccount != nil && Owned(l.ServiceAccount, ns, name),
		func() (any, error) { return corev1ac.ExtractServiceAccount(l.ServiceAccount, fieldManager) }, o.ServiceAccount)
	check("ClusterRole "+*o.ClusterRole.Name, l.ClusterRole != nil, l.ClusterRole != nil && Owned(l.ClusterRole, ns, name),
		func() (any, error) { return rbacv1ac.ExtractClusterRole(l.ClusterRole, fieldManager) }, o.ClusterRole)
	check("ClusterRoleBinding "+*o.ClusterRoleBinding.Name, l.ClusterRoleBinding != nil, l.ClusterRoleBinding != nil && Owned(l.ClusterRoleBinding, ns, name),
		func() (any, error) { return rbacv1ac.ExtractClusterRoleBinding(l.ClusterRoleBinding, fieldManager) }, o.ClusterRoleBinding)
	check("Role "+ns+"/"+*o.LeaderRole.Name, l.LeaderRole != nil, l.LeaderRole != nil && Owned(l.LeaderRole, ns, name),
		func() (any, error) { return rbacv1ac.ExtractRole(l.LeaderRole, fieldManager) }, o.LeaderRole)
	check("RoleBinding "+ns+"/"+*o.LeaderRoleBinding.Name, l.LeaderRoleBinding != nil, l.LeaderRoleBinding != nil && Owned(l.LeaderRoleBinding, ns, name),
		func() (any, error) { return rbacv1ac.ExtractRoleBinding(l.LeaderRoleBinding, fieldManager) }, o.LeaderRoleBinding)
	check("Deployment "+ns+"/"+name, l.Deployment != nil, l.Installed(),
		func() (any, error) { return appsv1ac.ExtractDeployment(l.Deployment, fieldManager) }, o.Deployment)
	check("Service "+ns+"/"+*o.MetricsService.Name, l.MetricsService != nil, l.MetricsService != nil && Owned(l.MetricsService, ns, name),
		func() (any, error) { return corev1ac.ExtractService(l.MetricsService, fieldManager) }, o.MetricsService)
	switch {
	case o.PodDisruptionBudget != nil:
		check("PodDisruptionBudget "+ns+"/"+name, l.PodDisruptionBudget != nil, l.PodDisruptionBudget != nil && Owned(l.PodDisruptionBudget, ns, name),
			func() (any, error) { return policyv1ac.ExtractPodDisruptionBudget(l.PodDisruptionBudget, fieldManager) }, o.PodDisruptionBudget)
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
			func() (any, error) { return rbacv1ac.ExtractRole(live, fieldManager) }, want)
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
			func() (any, error) { return rbacv1ac.ExtractRoleBinding(live, fieldManager) }, want)
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
