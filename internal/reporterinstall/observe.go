package reporterinstall

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporter"
)

// Live is what the cluster holds under an installation's names: nil for an
// object that does not exist. The objects may belong to someone else (see
// Owned and OwnsShared).
type Live struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	DaemonSet          *appsv1.DaemonSet
	CRD                *unstructured.Unstructured // the KMSHealth CRD, whoever installed it
	// Target is the object the installation reports to, and Object that
	// object (nil when it, or its resource type, does not exist).
	Target kmshealth.Target
	Object *unstructured.Unstructured

	namespace, name string
}

// Observe reads the installation namespace/name and its target object: six
// GETs and one with the dynamic client; no discovery, no watch. A zero
// target means the one the live DaemonSet reports to (for import), or the
// default when that cannot be read.
func Observe(ctx context.Context, core kubernetes.Interface, dyn dynamic.Interface, namespace, name string, target kmshealth.Target) (*Live, error) {
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
	if l.DaemonSet, err = install.Get(ctx, "DaemonSet "+namespace+"/", core.AppsV1().DaemonSets(namespace).Get, name); err != nil {
		return nil, err
	}
	if l.CRD, err = install.Get(ctx, "CustomResourceDefinition", dynamicGet(dyn, kmshealth.CRDGVR), kmshealth.CRDName); err != nil {
		return nil, err
	}
	l.Target = target
	if target == (kmshealth.Target{}) {
		l.Target = kmshealth.DefaultTarget()
		if lc, ok := l.Config(); ok {
			l.Target = lc.Target
		}
	}
	if l.Object, err = install.Get(ctx, "target", dynamicGet(dyn, l.Target.GVR()), l.Target.Name); err != nil {
		return nil, err
	}
	return l, nil
}

// dynamicGet adapts a dynamic client's Get to install.Get.
func dynamicGet(dyn dynamic.Interface, gvr schema.GroupVersionResource) func(context.Context, string, metav1.GetOptions) (*unstructured.Unstructured, error) {
	return func(ctx context.Context, name string, o metav1.GetOptions) (*unstructured.Unstructured, error) {
		return dyn.Resource(gvr).Get(ctx, name, o)
	}
}

// Owned reports whether obj belongs to the installation namespace/name
// (see install.Owner.Owns).
func Owned(obj metav1.Object, namespace, name string) bool { return owner(namespace, name).Owns(obj) }

// OwnsShared is stricter, for the CRD and the target object, which other
// kmshealth users (a kubectl apply of crd.yaml, another installation) may
// also write as "kmshealth": only this installation's labels count, so
// nobody else's CRD is ever deleted on a guess.
func OwnsShared(obj metav1.Object, namespace, name string) bool {
	return owner(namespace, name).Labelled(obj)
}

func (l *Live) owned(obj metav1.Object) bool { return obj != nil && Owned(obj, l.namespace, l.name) }

// CRDInstalled reports whether the KMSHealth CRD exists and this
// installation installed it.
func (l *Live) CRDInstalled() bool {
	return l.CRD != nil && OwnsShared(l.CRD, l.namespace, l.name)
}

// ObjectCreated reports whether the target object exists and this
// installation created it.
func (l *Live) ObjectCreated() bool {
	return l.Object != nil && OwnsShared(l.Object, l.namespace, l.name)
}

// Installed reports whether the installation's DaemonSet exists and is
// kmshealth's: without it there is no reporter to speak of.
func (l *Live) Installed() bool { return l.owned(install.AsObject(l.DaemonSet)) }

// Exists reports whether any object of the installation is left, so a
// partly deleted installation is repaired, not forgotten.
func (l *Live) Exists() bool {
	return l.owned(install.AsObject(l.ServiceAccount)) || l.owned(install.AsObject(l.ClusterRole)) || l.owned(install.AsObject(l.ClusterRoleBinding)) ||
		l.Installed() || l.CRDInstalled() || l.ObjectCreated()
}

// reporterContainer returns the DaemonSet's reporter container.
func (l *Live) reporterContainer() *corev1.Container {
	if l.DaemonSet == nil {
		return nil
	}
	for i, ct := range l.DaemonSet.Spec.Template.Spec.Containers {
		if ct.Name == ContainerName {
			return &l.DaemonSet.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// ParseArgs reads a reporter command line with the report mode's own
// flags.
func ParseArgs(args []string) (reporter.Options, error) {
	var o reporter.Options
	return o, incluster.ParseArgs("report", args, &o)
}

// Config reconstructs the installation from the cluster, for import and
// drift: everything but InstallCRD comes from the DaemonSet. ok is false
// when the DaemonSet or its reporter container is missing or its arguments
// do not parse; the fields read from them are then zero.
func (l *Live) Config() (c Config, ok bool) {
	c = Config{Namespace: l.namespace, Name: l.name, InstallCRD: l.CRDInstalled()}
	ct := l.reporterContainer()
	if ct == nil {
		return c, false
	}
	pod := l.DaemonSet.Spec.Template.Spec
	c.Image = ct.Image
	c.NodeSelector = pod.NodeSelector
	c.Tolerations = pod.Tolerations
	c.PriorityClassName = pod.PriorityClassName
	if sc := ct.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			c.RunAsUser = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			c.RunAsGroup = *sc.RunAsGroup
		}
	}
	c.Resources = install.ResourcesOf(ct.Resources)
	o, err := ParseArgs(ct.Args)
	if err != nil {
		return c, false
	}
	t, err := kmshealth.ParseTarget(o.Target)
	if err != nil {
		return c, false
	}
	c.Sockets, c.SocketDir = o.Sockets, o.SocketDir
	c.Interval, c.ReadTimeout, c.WriteTimeout = o.Interval, o.ReadTimeout, o.WriteTimeout
	c.Target = t
	return c, true
}

// Drift lists the objects that are not as o would write them: missing, not
// kmshealth's, or with a field kmshealth applied now changed or owned by
// another field manager (a `kubectl edit`). Empty means an apply would
// change nothing. Fields other managers added are not drift: server-side
// apply leaves them alone.
func (l *Live) Drift(o Objects) []string {
	const fieldManager = install.FieldManager
	var drift install.Drift
	check := drift.Check
	ns, name := l.namespace, l.name
	check("ServiceAccount "+ns+"/"+*o.ServiceAccount.Name, l.ServiceAccount != nil, l.owned(install.AsObject(l.ServiceAccount)),
		func() (any, error) { return corev1ac.ExtractServiceAccount(l.ServiceAccount, fieldManager) }, o.ServiceAccount)
	check("ClusterRole "+*o.ClusterRole.Name, l.ClusterRole != nil, l.owned(install.AsObject(l.ClusterRole)),
		func() (any, error) { return rbacv1ac.ExtractClusterRole(l.ClusterRole, fieldManager) }, o.ClusterRole)
	check("ClusterRoleBinding "+*o.ClusterRoleBinding.Name, l.ClusterRoleBinding != nil, l.owned(install.AsObject(l.ClusterRoleBinding)),
		func() (any, error) { return rbacv1ac.ExtractClusterRoleBinding(l.ClusterRoleBinding, fieldManager) }, o.ClusterRoleBinding)
	check("DaemonSet "+ns+"/"+name, l.DaemonSet != nil, l.Installed(),
		func() (any, error) { return appsv1ac.ExtractDaemonSet(l.DaemonSet, fieldManager) }, o.DaemonSet)
	if o.CRD != nil {
		what := "CustomResourceDefinition " + kmshealth.CRDName
		switch {
		case l.CRD == nil:
			drift = append(drift, what+" is missing")
		case !l.CRDInstalled():
			drift = append(drift, what+" is not managed by this kmshealth_reporter")
		case l.CRD.GetDeletionTimestamp() != nil:
			drift = append(drift, what+" is being deleted")
		case !contains(l.CRD.Object, o.CRD.Object):
			drift = append(drift, what+" was changed")
		}
	}
	if o.Object != nil {
		what := l.Target.Resource + "." + l.Target.Group + " " + l.Target.Name
		switch {
		case l.Object == nil:
			drift = append(drift, what+" is missing")
		case !l.ObjectCreated():
			drift = append(drift, what+" is not managed by this kmshealth_reporter")
		}
	}
	return drift
}

// contains reports whether got holds every field of want with the same
// value (numbers compared as JSON numbers): maps by key, lists of objects
// element by element in any order, other lists exactly. It is the drift
// check for unstructured objects, which have no typed extraction.
func contains(got, want any) bool {
	return containsNormalized(normalize(got), normalize(want))
}

func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

func containsNormalized(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !containsNormalized(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		objects := len(w) > 0
		for _, e := range w {
			if _, isMap := e.(map[string]any); !isMap {
				objects = false
			}
		}
		if !objects {
			return install.SameJSON(g, w)
		}
		for _, we := range w {
			if !slices.ContainsFunc(g, func(ge any) bool { return containsNormalized(ge, we) }) {
				return false
			}
		}
		return true
	default:
		return install.SameJSON(got, want)
	}
}

// established reports whether the CRD is served, and an error when its
// names were rejected.
func established(crd *unstructured.Unstructured) (bool, error) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	ok := false
	for _, raw := range conds {
		m, _ := raw.(map[string]any)
		switch {
		case m["type"] == "Established" && m["status"] == "True":
			ok = true
		case m["type"] == "NamesAccepted" && m["status"] == "False":
			return false, fmt.Errorf("CustomResourceDefinition %s: names not accepted: %v", crd.GetName(), m["message"])
		}
	}
	return ok, nil
}
