package reporterinstall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// Apply brings the cluster to c by server-side apply (field manager
// kmshealth, forced, so an out-of-band change of one of our fields is
// restored): first the CRD, waiting by watch until it is Established, and
// the target object, then the ServiceAccount and RBAC, then the DaemonSet,
// so pods never start without their permissions or their target. With
// InstallCRD off, a CRD and object this installation created are handed
// over (its labels removed), so Delete keeps them. Everything that can be
// refused is checked before the first write.
func Apply(ctx context.Context, core kubernetes.Interface, dyn dynamic.Interface, c Config) error {
	objs, err := Build(c)
	if err != nil {
		return install.Refuse(err)
	}
	live, err := Observe(ctx, core, dyn, c.Namespace, c.Name, c.Target)
	if err != nil {
		return install.Refuse(err)
	}
	if err := checkWritable(c, live); err != nil {
		return install.Refuse(err)
	}

	opts, wrap := install.ApplyOptions(), install.ApplyError
	crds := dyn.Resource(kmshealth.CRDGVR)
	switch {
	case objs.CRD != nil:
		if _, err := crds.Apply(ctx, kmshealth.CRDName, objs.CRD, opts); err != nil {
			return wrap("CustomResourceDefinition "+kmshealth.CRDName, err)
		}
		if err := WaitForCRD(ctx, dyn, kmshealth.CRDName); err != nil {
			return err
		}
	case live.CRDInstalled():
		// install_crd turned off: hand the CRD over, keeping only what
		// crd.yaml itself carries.
		if _, err := crds.Apply(ctx, kmshealth.CRDName, kmshealth.CRD(), opts); err != nil {
			return wrap("CustomResourceDefinition "+kmshealth.CRDName+" (release)", err)
		}
	}
	objects := dyn.Resource(c.Target.GVR())
	switch {
	case objs.Object != nil:
		// Right after the CRD is established its resource may take a moment
		// to be served: NotFound is retried until ctx ends.
		var last error
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, last = objects.Apply(ctx, c.Target.Name, objs.Object, opts)
			return !apierrors.IsNotFound(last), nil
		})
		if last == nil && err != nil {
			last = err
		}
		if last != nil {
			return wrap("target "+c.Target.String(), last)
		}
	case live.ObjectCreated():
		release := BuildObject(c)
		release.SetLabels(nil)
		if _, err := objects.Apply(ctx, c.Target.Name, release, opts); err != nil {
			return wrap("target "+c.Target.String()+" (release)", err)
		}
	}
	if _, err := core.CoreV1().ServiceAccounts(c.Namespace).Apply(ctx, objs.ServiceAccount, opts); err != nil {
		return wrap("ServiceAccount "+c.Namespace+"/"+c.ServiceAccountName(), err)
	}
	if _, err := core.RbacV1().ClusterRoles().Apply(ctx, objs.ClusterRole, opts); err != nil {
		return wrap("ClusterRole "+c.ClusterRoleName(), err)
	}
	if _, err := core.RbacV1().ClusterRoleBindings().Apply(ctx, objs.ClusterRoleBinding, opts); err != nil {
		return wrap("ClusterRoleBinding "+c.ClusterRoleName(), err)
	}
	if _, err := core.AppsV1().DaemonSets(c.Namespace).Apply(ctx, objs.DaemonSet, opts); err != nil {
		return wrap("DaemonSet "+c.Namespace+"/"+c.Name, err)
	}
	return nil
}

// checkWritable refuses, before any write, objects at the installation's
// names that belong to someone else, a missing or terminating namespace,
// and a namespace whose Pod Security level would reject the pods.
func checkWritable(c Config, live *Live) error {
	var errs []error
	switch ns := live.Namespace; {
	case ns == nil:
		errs = append(errs, fmt.Errorf("namespace %q not found: create it first; the reporter needs a namespace whose Pod Security level allows hostPath volumes, e.g. kube-system", c.Namespace))
	case ns.DeletionTimestamp != nil:
		errs = append(errs, fmt.Errorf("namespace %q is being deleted: wait until it is gone, or choose another namespace", c.Namespace))
	default:
		if level := ns.Labels[podSecurityEnforce]; level == "baseline" || level == "restricted" {
			errs = append(errs, fmt.Errorf("namespace %q enforces the %q Pod Security Standard (label %s), which forbids the hostPath volume of the KMS socket directory, so the DaemonSet could never create its pods: "+
				"install into a namespace at the privileged level, e.g. kube-system, or label this one %s=privileged", c.Namespace, level, podSecurityEnforce, podSecurityEnforce))
		}
	}
	foreign := func(kind, name string, obj metav1.Object) {
		if err := owner(c.Namespace, c.Name).CheckOwned(kind, name, obj); err != nil {
			errs = append(errs, err)
		}
	}
	foreign("ServiceAccount", c.Namespace+"/"+c.ServiceAccountName(), install.AsObject(live.ServiceAccount))
	foreign("ClusterRole", c.ClusterRoleName(), install.AsObject(live.ClusterRole))
	foreign("ClusterRoleBinding", c.ClusterRoleName(), install.AsObject(live.ClusterRoleBinding))
	foreign("DaemonSet", c.Namespace+"/"+c.Name, install.AsObject(live.DaemonSet))
	if c.InstallCRD && live.CRD != nil {
		switch {
		case !live.CRDInstalled():
			errs = append(errs, fmt.Errorf("%w: CustomResourceDefinition %s exists and this kmshealth_reporter did not install it (it lacks the labels %s=%s, %s=%s, %s=%s): set install_crd = false to report to it as it is",
				install.ErrForeignObject, kmshealth.CRDName, install.NameLabel, NameValue, install.InstanceLabel, c.Name, NamespaceLabel, c.Namespace))
		case live.CRD.GetDeletionTimestamp() != nil:
			errs = append(errs, fmt.Errorf("CustomResourceDefinition %s is being deleted: wait until it is gone, then apply again", kmshealth.CRDName))
		}
	}
	if c.CreatesObject() && live.Object != nil && !live.ObjectCreated() {
		errs = append(errs, fmt.Errorf("%w: %s exists and this kmshealth_reporter did not create it: set install_crd = false to report to it as it is, or choose another target name",
			install.ErrForeignObject, c.Target))
	}
	return errors.Join(errs...)
}

// WaitForCRD watches the CustomResourceDefinition name until it is
// Established, i.e. its objects are served, or ctx ends.
func WaitForCRD(ctx context.Context, dyn dynamic.Interface, name string) error {
	var last error
	_, err := watchtools.UntilWithSync(ctx, crdListWatch(dyn, name), &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		crd, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("CustomResourceDefinition %s was deleted while waiting for it to be established", name)
		}
		done, err := established(crd)
		last = err
		return done, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil:
		return err
	case last != nil:
		return last
	}
	return fmt.Errorf("CustomResourceDefinition %s not established in time: check the API server's log, or raise the create/update timeout", name)
}

func crdListWatch(dyn dynamic.Interface, name string) *cache.ListWatch {
	crds := dyn.Resource(kmshealth.CRDGVR)
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return crds.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return crds.Watch(ctx, o)
		},
	}
}

// Deleted is what Delete did beyond removing the installation's objects.
type Deleted struct {
	// Conditions are the condition types removed from the target.
	Conditions []string
	// Kept explains what was left in place on purpose.
	Kept []string
}

// Delete removes every object of the installation namespace/name that is
// kmshealth's, then kmshealth's conditions (every KMSHealthReporter_<node>
// and KMSPluginsDegraded) from target, and, when installCRD, the target
// object and the CRD if this installation created them; it waits until
// the CRD is gone. The CRD stays when it holds objects someone else
// created: deleting it would delete them. Objects of someone else at the
// same names are left alone.
func Delete(ctx context.Context, core kubernetes.Interface, dyn dynamic.Interface, namespace, name string, target kmshealth.Target, installCRD bool) (Deleted, error) {
	var out Deleted
	live, err := Observe(ctx, core, dyn, namespace, name, target)
	if err != nil {
		return out, err
	}
	var errs []error
	del := func(what string, obj metav1.Object, fn func(context.Context, string, metav1.DeleteOptions) error) {
		if !live.owned(obj) {
			return
		}
		errs = append(errs, install.DeleteObject(ctx, what+" "+install.Qualified(obj), fn, obj.GetName(), obj.GetUID()))
	}
	// The DaemonSet first, then the permissions: a reporter still shutting
	// down can no longer write a condition after they are removed below.
	del("DaemonSet", install.AsObject(live.DaemonSet), core.AppsV1().DaemonSets(namespace).Delete)
	del("ClusterRoleBinding", install.AsObject(live.ClusterRoleBinding), core.RbacV1().ClusterRoleBindings().Delete)
	del("ClusterRole", install.AsObject(live.ClusterRole), core.RbacV1().ClusterRoles().Delete)
	del("ServiceAccount", install.AsObject(live.ServiceAccount), core.CoreV1().ServiceAccounts(namespace).Delete)
	if err := errors.Join(errs...); err != nil {
		return out, err
	}

	if live.Object != nil {
		if out.Conditions, err = removeConditions(ctx, dyn, live.Target, live.Object); err != nil {
			return out, err
		}
	}
	if !installCRD {
		return out, nil
	}
	if live.ObjectCreated() {
		obj := live.Object
		if err := install.DeleteObject(ctx, "target "+live.Target.String(), dynamicDelete(dyn, live.Target.GVR()), obj.GetName(), obj.GetUID()); err != nil {
			return out, err
		}
	}
	if !live.CRDInstalled() {
		return out, nil
	}
	others, err := othersObjects(ctx, dyn, namespace, name)
	if err != nil {
		return out, err
	}
	if len(others) > 0 {
		out.Kept = append(out.Kept, fmt.Sprintf("CustomResourceDefinition %s is kept, because deleting it would delete the %s objects %s, which this installation did not create; delete them, then the CRD",
			kmshealth.CRDName, kmshealth.Kind, strings.Join(others, ", ")))
		return out, nil
	}
	if err := install.DeleteObject(ctx, "CustomResourceDefinition "+kmshealth.CRDName, dynamicDelete(dyn, kmshealth.CRDGVR), kmshealth.CRDName, live.CRD.GetUID()); err != nil {
		return out, err
	}
	return out, WaitForCRDGone(ctx, dyn, kmshealth.CRDName)
}

// removeConditions drops kmshealth's conditions from the target, reading
// it again when a concurrent write made the guarded patch fail.
func removeConditions(ctx context.Context, dyn dynamic.Interface, t kmshealth.Target, obj *unstructured.Unstructured) ([]string, error) {
	var last error
	for range 3 {
		removed, err := kmshealth.RemoveConditions(ctx, dyn, t, obj, kmshealth.IsOurs)
		if err == nil {
			return removed, nil
		}
		last = err
		obj, err = dyn.Resource(t.GVR()).Get(ctx, t.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read target %s: %w", t, err)
		}
	}
	return nil, last
}

// othersObjects lists the KMSHealth objects the installation did not create.
func othersObjects(ctx context.Context, dyn dynamic.Interface, namespace, name string) ([]string, error) {
	list, err := dyn.Resource(kmshealth.DefaultTarget().GVR()).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s objects: %w", kmshealth.Kind, err)
	}
	var out []string
	for i := range list.Items {
		if !OwnsShared(&list.Items[i], namespace, name) {
			out = append(out, list.Items[i].GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// WaitForCRDGone watches until the CustomResourceDefinition name is
// deleted (the API server first deletes its objects), so a new
// installation finds no terminating CRD.
func WaitForCRDGone(ctx context.Context, dyn dynamic.Interface, name string) error {
	_, err := watchtools.UntilWithSync(ctx, crdListWatch(dyn, name), &unstructured.Unstructured{}, func(store cache.Store) (bool, error) {
		return len(store.List()) == 0, nil
	}, func(ev watch.Event) (bool, error) {
		return ev.Type == watch.Deleted, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("CustomResourceDefinition %s was not deleted in time: the API server deletes its objects first; check for finalizers on them, or raise the delete timeout", name)
	}
	return err
}

// dynamicDelete adapts a dynamic client's Delete to install.DeleteObject.
func dynamicDelete(dyn dynamic.Interface, gvr schema.GroupVersionResource) func(context.Context, string, metav1.DeleteOptions) error {
	return func(ctx context.Context, name string, o metav1.DeleteOptions) error {
		return dyn.Resource(gvr).Delete(ctx, name, o)
	}
}
