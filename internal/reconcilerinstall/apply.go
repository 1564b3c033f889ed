package reconcilerinstall

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
)

// Apply brings the cluster to c by server-side apply (field manager
// kmshealth, forced, so an out-of-band change of one of our fields is
// restored), then deletes what c no longer has: sources Roles in
// namespaces no longer named, the PodDisruptionBudget when Replicas is 1.
// Everything that can be refused is checked before the first write.
func Apply(ctx context.Context, core kubernetes.Interface, c Config) error {
	objs, err := Build(c)
	if err != nil {
		return install.Refuse(err)
	}
	live, err := Observe(ctx, core, c.Namespace, c.Name)
	if err != nil {
		return install.Refuse(err)
	}
	if err := checkWritable(ctx, core, c, live); err != nil {
		return install.Refuse(err)
	}

	opts, wrap := install.ApplyOptions(), install.ApplyError
	if objs.Namespace != nil {
		_, err := core.CoreV1().Namespaces().Apply(ctx, objs.Namespace, opts)
		if err := wrap("Namespace "+c.Namespace, err); err != nil {
			return err
		}
	}
	// RBAC before the Deployment, so pods never start without permissions.
	if _, err := core.CoreV1().ServiceAccounts(c.Namespace).Apply(ctx, objs.ServiceAccount, opts); err != nil {
		return wrap("ServiceAccount "+c.Namespace+"/"+c.ServiceAccountName(), err)
	}
	if _, err := core.RbacV1().ClusterRoles().Apply(ctx, objs.ClusterRole, opts); err != nil {
		return wrap("ClusterRole "+c.ClusterRoleName(), err)
	}
	if _, err := core.RbacV1().ClusterRoleBindings().Apply(ctx, objs.ClusterRoleBinding, opts); err != nil {
		return wrap("ClusterRoleBinding "+c.ClusterRoleName(), err)
	}
	if _, err := core.RbacV1().Roles(c.Namespace).Apply(ctx, objs.LeaderRole, opts); err != nil {
		return wrap("Role "+c.Namespace+"/"+c.LeaderElectionRoleName(), err)
	}
	if _, err := core.RbacV1().RoleBindings(c.Namespace).Apply(ctx, objs.LeaderRoleBinding, opts); err != nil {
		return wrap("RoleBinding "+c.Namespace+"/"+c.LeaderElectionRoleName(), err)
	}
	for i, role := range objs.SourceRoles {
		if _, err := core.RbacV1().Roles(*role.Namespace).Apply(ctx, role, opts); err != nil {
			return wrap("Role "+*role.Namespace+"/"+*role.Name, err)
		}
		b := objs.SourceRoleBindings[i]
		if _, err := core.RbacV1().RoleBindings(*b.Namespace).Apply(ctx, b, opts); err != nil {
			return wrap("RoleBinding "+*b.Namespace+"/"+*b.Name, err)
		}
	}
	if _, err := core.CoreV1().Services(c.Namespace).Apply(ctx, objs.MetricsService, opts); err != nil {
		return wrap("Service "+c.Namespace+"/"+c.MetricsServiceName(), err)
	}
	if objs.PodDisruptionBudget != nil {
		if _, err := core.PolicyV1().PodDisruptionBudgets(c.Namespace).Apply(ctx, objs.PodDisruptionBudget, opts); err != nil {
			return wrap("PodDisruptionBudget "+c.Namespace+"/"+c.Name, err)
		}
	}
	if _, err := core.AppsV1().Deployments(c.Namespace).Apply(ctx, objs.Deployment, opts); err != nil {
		return wrap("Deployment "+c.Namespace+"/"+c.Name, err)
	}

	// What c no longer has.
	var errs []error
	want := map[string]bool{}
	for _, ns := range c.SourceNamespaces() {
		want[ns] = true
	}
	for _, r := range live.SourceRoles {
		if !want[r.Namespace] {
			errs = append(errs, install.DeleteObject(ctx, "Role "+r.Namespace+"/"+r.Name, core.RbacV1().Roles(r.Namespace).Delete, r.Name, r.UID))
		}
	}
	for _, b := range live.SourceRoleBindings {
		if !want[b.Namespace] {
			errs = append(errs, install.DeleteObject(ctx, "RoleBinding "+b.Namespace+"/"+b.Name, core.RbacV1().RoleBindings(b.Namespace).Delete, b.Name, b.UID))
		}
	}
	if pdb := live.PodDisruptionBudget; objs.PodDisruptionBudget == nil && pdb != nil && Owned(pdb, c.Namespace, c.Name) {
		errs = append(errs, install.DeleteObject(ctx, "PodDisruptionBudget "+c.Namespace+"/"+c.Name, core.PolicyV1().PodDisruptionBudgets(c.Namespace).Delete, pdb.Name, pdb.UID))
	}
	if !c.CreateNamespace && live.NamespaceCreated() {
		// create_namespace turned off: hand the namespace over by dropping
		// kmshealth's labels, so it is never deleted with the installation.
		if _, err := core.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace(c.Namespace), opts); err != nil {
			errs = append(errs, wrap("Namespace "+c.Namespace+" (release)", err))
		}
	}
	return errors.Join(errs...)
}

// checkWritable refuses, before any write, objects at the installation's
// names that belong to someone else, a missing or terminating namespace,
// and missing source namespaces.
func checkWritable(ctx context.Context, core kubernetes.Interface, c Config, live *Live) error {
	var errs []error
	switch {
	case live.Namespace == nil && !c.CreateNamespace:
		errs = append(errs, fmt.Errorf("namespace %q not found: create it first, or set create_namespace = true to let kmshealth create it (and delete it on destroy)", c.Namespace))
	case live.Namespace != nil && live.Namespace.DeletionTimestamp != nil:
		errs = append(errs, fmt.Errorf("namespace %q is being deleted: wait until it is gone, or choose another namespace", c.Namespace))
	case live.Namespace != nil && c.CreateNamespace && !live.NamespaceCreated():
		errs = append(errs, fmt.Errorf("%w: namespace %q already exists and kmshealth did not create it; kmshealth deletes only namespaces it created, so set create_namespace = false to install into it", install.ErrForeignObject, c.Namespace))
	}
	foreign := func(kind, ns, name string, obj metav1.Object) {
		if ns != "" {
			name = ns + "/" + name
		}
		if err := owner(c.Namespace, c.Name).CheckOwned(kind, name, obj); err != nil {
			errs = append(errs, err)
		}
	}
	foreign("ServiceAccount", c.Namespace, c.ServiceAccountName(), install.AsObject(live.ServiceAccount))
	foreign("ClusterRole", "", c.ClusterRoleName(), install.AsObject(live.ClusterRole))
	foreign("ClusterRoleBinding", "", c.ClusterRoleName(), install.AsObject(live.ClusterRoleBinding))
	foreign("Role", c.Namespace, c.LeaderElectionRoleName(), install.AsObject(live.LeaderRole))
	foreign("RoleBinding", c.Namespace, c.LeaderElectionRoleName(), install.AsObject(live.LeaderRoleBinding))
	foreign("Deployment", c.Namespace, c.Name, install.AsObject(live.Deployment))
	foreign("Service", c.Namespace, c.MetricsServiceName(), install.AsObject(live.MetricsService))
	if c.Replicas > 1 {
		foreign("PodDisruptionBudget", c.Namespace, c.Name, install.AsObject(live.PodDisruptionBudget))
	}
	// Source namespaces without a Role of ours yet: the names there may be
	// taken (e.g. by an installation of the same name in another namespace).
	have := map[string]bool{}
	for _, r := range live.SourceRoles {
		have[r.Namespace] = true
	}
	for _, ns := range c.SourceNamespaces() {
		if have[ns] {
			continue
		}
		if _, err := core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("namespace %q of the CA bundle source(s) %s not found: create it, or remove those sources", ns, strings.Join(sourceStrings(c.sourcesIn(ns)), ", ")))
			} else {
				errs = append(errs, fmt.Errorf("read namespace %q: %w", ns, err))
			}
			continue
		}
		role, err := install.Get(ctx, "Role "+ns+"/", core.RbacV1().Roles(ns).Get, c.SourcesRoleName())
		if err != nil {
			errs = append(errs, err)
		}
		foreign("Role", ns, c.SourcesRoleName(), install.AsObject(role))
		binding, err := install.Get(ctx, "RoleBinding "+ns+"/", core.RbacV1().RoleBindings(ns).Get, c.SourcesRoleName())
		if err != nil {
			errs = append(errs, err)
		}
		foreign("RoleBinding", ns, c.SourcesRoleName(), install.AsObject(binding))
	}
	return errors.Join(errs...)
}

func sourceStrings(sources []cabundle.Source) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = s.String()
	}
	return out
}

// Delete removes every object of the installation namespace/name that is
// kmshealth's, and the namespace itself only when deleteNamespace is set
// and kmshealth created it. Objects of someone else at the same names,
// and a namespace kmshealth did not create, are left alone.
func Delete(ctx context.Context, core kubernetes.Interface, namespace, name string, deleteNamespace bool) error {
	live, err := Observe(ctx, core, namespace, name)
	if err != nil {
		return err
	}
	var errs []error
	del := func(what string, obj metav1.Object, fn func(context.Context, string, metav1.DeleteOptions) error) {
		if obj == nil || !Owned(obj, namespace, name) {
			return
		}
		errs = append(errs, install.DeleteObject(ctx, what+" "+install.Qualified(obj), fn, obj.GetName(), obj.GetUID()))
	}
	// The Deployment first: its pods stop before their permissions go.
	del("Deployment", install.AsObject(live.Deployment), core.AppsV1().Deployments(namespace).Delete)
	del("PodDisruptionBudget", install.AsObject(live.PodDisruptionBudget), core.PolicyV1().PodDisruptionBudgets(namespace).Delete)
	del("Service", install.AsObject(live.MetricsService), core.CoreV1().Services(namespace).Delete)
	for i := range live.SourceRoleBindings {
		b := &live.SourceRoleBindings[i]
		del("RoleBinding", b, core.RbacV1().RoleBindings(b.Namespace).Delete)
	}
	for i := range live.SourceRoles {
		r := &live.SourceRoles[i]
		del("Role", r, core.RbacV1().Roles(r.Namespace).Delete)
	}
	del("RoleBinding", install.AsObject(live.LeaderRoleBinding), core.RbacV1().RoleBindings(namespace).Delete)
	del("Role", install.AsObject(live.LeaderRole), core.RbacV1().Roles(namespace).Delete)
	del("ClusterRoleBinding", install.AsObject(live.ClusterRoleBinding), core.RbacV1().ClusterRoleBindings().Delete)
	del("ClusterRole", install.AsObject(live.ClusterRole), core.RbacV1().ClusterRoles().Delete)
	del("ServiceAccount", install.AsObject(live.ServiceAccount), core.CoreV1().ServiceAccounts(namespace).Delete)
	err = errors.Join(errs...)
	if err == nil && deleteNamespace && live.NamespaceCreated() && live.Namespace.DeletionTimestamp == nil {
		err = install.DeleteObject(ctx, "Namespace "+namespace, core.CoreV1().Namespaces().Delete, namespace, live.Namespace.UID)
	}
	return err
}

// WaitForRollout watches the Deployment until RolledOut or ctx ends; the
// error then says how far the rollout got.
func WaitForRollout(ctx context.Context, core kubernetes.Interface, namespace, name string) error {
	deployments := core.AppsV1().Deployments(namespace)
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return deployments.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return deployments.Watch(ctx, o)
		},
	}
	var last *appsv1.Deployment
	_, err := watchtools.UntilWithSync(ctx, lw, &appsv1.Deployment{}, nil, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			return false, fmt.Errorf("deployment %s/%s was deleted while waiting for its rollout", namespace, name)
		case watch.Added, watch.Modified:
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				return false, nil
			}
			last = d
			return RolledOut(d), nil
		}
		return false, nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		return err
	}
	progress := "the Deployment was not seen"
	if last != nil {
		want := int32(1)
		if last.Spec.Replicas != nil {
			want = *last.Spec.Replicas
		}
		s := last.Status
		progress = fmt.Sprintf("observed generation %d of %d, %d of %d replicas updated, %d available, %d in total",
			s.ObservedGeneration, last.Generation, s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas)
	}
	return fmt.Errorf("deployment %s/%s did not roll out in time (%s): check its pods' events (image pull, scheduling, probes), raise the timeout, or set wait_for_rollout = false", namespace, name, progress)
}
