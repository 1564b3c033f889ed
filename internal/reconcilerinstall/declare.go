package reconcilerinstall

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
)

// Declare is the installation c as a declaration: its objects in apply
// order — RBAC before the Deployment, so pods never start without their
// permissions — and the kinds whose labelled leftovers (a sources Role in
// a namespace no longer named, the PodDisruptionBudget once Replicas is 1,
// the PrometheusRule once monitoring.rules is off) are deleted. c must be valid; a Config of only Namespace, Name and
// CreateNamespace declares the objects by name, for Observe and Delete.
func Declare(c Config) install.Declaration {
	objs := buildObjects(c)
	d := install.Declaration{
		Owner:         owner(c.Namespace, c.Name),
		Namespace:     c.Namespace,
		NamespaceHint: "create it first, or set create_namespace = true to let kmshealth create it (and delete it on destroy)",
		Sweep: []install.Kind{install.Roles, install.RoleBindings, install.PodDisruptionBudgets,
			install.ValidatingAdmissionPolicies, install.ValidatingAdmissionPolicyBindings, install.PodMonitors, install.PrometheusRules},
	}
	add := func(kind install.Kind, namespace, name string, body any) {
		d.Objects = append(d.Objects, install.Object{ID: install.ID{Kind: kind, Namespace: namespace, Name: name}, Body: body})
	}
	nsID := install.ID{Kind: install.Namespaces, Name: c.Namespace}
	if c.CreateNamespace {
		d.Objects = append(d.Objects, install.Object{ID: nsID, Body: objs.Namespace, Shared: true, WaitGone: true,
			ForeignHint: "kmshealth deletes only namespaces it created, so set create_namespace = false to install into it"})
	} else {
		// create_namespace turned off: hand the namespace over by dropping
		// kmshealth's labels, so it is never deleted with the installation.
		d.Released = append(d.Released, install.Released{ID: nsID, Body: corev1ac.Namespace(c.Namespace)})
	}
	add(install.ServiceAccounts, c.Namespace, c.ServiceAccountName(), body(objs.ServiceAccount))
	add(install.ClusterRoles, "", c.ClusterRoleName(), body(objs.ClusterRole))
	add(install.ClusterRoleBindings, "", c.ClusterRoleName(), body(objs.ClusterRoleBinding))
	add(install.Roles, c.Namespace, c.LeaderElectionRoleName(), body(objs.LeaderRole))
	add(install.RoleBindings, c.Namespace, c.LeaderElectionRoleName(), body(objs.LeaderRoleBinding))
	add(install.Roles, EventsNamespace, c.EventsRoleName(), body(objs.EventsRole))
	add(install.RoleBindings, EventsNamespace, c.EventsRoleName(), body(objs.EventsRoleBinding))
	// The admission policies before the Deployment, so no pod runs
	// unconstrained; by name too when the Config has none, so Delete finds
	// them.
	if c.AdmissionPolicy || c.Image == "" {
		for _, p := range Policies(c) {
			for _, o := range p.Objects() {
				if !c.AdmissionPolicy {
					o.Body = nil
				}
				d.Objects = append(d.Objects, o)
			}
		}
	}
	for i, role := range objs.Roles {
		add(install.Roles, *role.Namespace, *role.Name, role)
		b := objs.RoleBindings[i]
		add(install.RoleBindings, *b.Namespace, *b.Name, b)
	}
	add(install.ConfigMaps, c.Namespace, c.RecordName(), body(objs.Record))
	add(install.Services, c.Namespace, c.MetricsServiceName(), body(objs.MetricsService))
	if objs.PodDisruptionBudget != nil || c.Image == "" { // by name too, for Observe and Delete
		add(install.PodDisruptionBudgets, c.Namespace, c.Name, body(objs.PodDisruptionBudget))
	}
	add(install.Deployments, c.Namespace, c.Name, body(objs.Deployment))
	// The monitoring objects after the reconcilers: by name too for a
	// names-only Config, so Observe and Delete find them (a kind that is
	// not served reads as missing).
	if c.Monitoring != nil || c.Image == "" {
		d.Objects = append(d.Objects, monitoringObjects(c)...)
	}
	return d
}

// body is nil for the objects of a names-only Config, which are never
// applied.
func body[T any](ac *T) any {
	if ac == nil {
		return nil
	}
	return ac
}

// buildObjects builds what a valid c holds; for a names-only Config
// (no image) only the names count, so nothing is built to be applied.
func buildObjects(c Config) Objects {
	if c.Image == "" {
		o := Objects{}
		if c.CreateNamespace {
			o.Namespace = BuildNamespace(c)
		}
		return o
	}
	o, err := Build(c)
	if err != nil {
		panic("reconcilerinstall: Declare of an invalid Config: " + err.Error()) // callers validate first
	}
	return o
}

// Apply brings the cluster to c (see Declare); it refuses, before any
// write, an invalid c, a missing namespace and objects at the
// installation's names that are someone else's.
func Apply(ctx context.Context, cl install.Clients, c Config) error {
	if err := c.Validate(); err != nil {
		return &install.Refusal{Reasons: []error{err}}
	}
	if err := install.Apply(ctx, cl, Declare(c)); err != nil {
		return err
	}
	if c.Monitoring == nil {
		// Monitoring off (or never on): its objects go, if there are any.
		if _, err := install.Delete(ctx, cl, monitoringDeclaration(c)); err != nil {
			return fmt.Errorf("remove the monitoring objects: %w", err)
		}
	}
	return nil
}

// Delete removes every object of the installation namespace/name that is
// kmshealth's — the namespace too, and waits until it is gone, when
// deleteNamespace is set and kmshealth created it. Objects of someone else
// at the same names are left alone.
func Delete(ctx context.Context, cl install.Clients, namespace, name string, deleteNamespace bool) error {
	_, err := install.Delete(ctx, cl, Declare(Config{Namespace: namespace, Name: name, CreateNamespace: deleteNamespace}))
	return err
}

// WaitForRollout waits until the Deployment is rolled out.
func WaitForRollout(ctx context.Context, cl install.Clients, namespace, name string, progress func(string)) error {
	return install.WaitForRollout(ctx, cl, install.ID{Kind: install.Deployments, Namespace: namespace, Name: name}, progress)
}

// Live is the installation as the cluster holds it.
type Live struct {
	*install.Live
	decl            install.Declaration
	namespace, name string
}

// Observe reads the installation namespace/name.
func Observe(ctx context.Context, cl install.Clients, namespace, name string) (*Live, error) {
	d := Declare(Config{Namespace: namespace, Name: name, CreateNamespace: true})
	l, err := install.Observe(ctx, cl, d)
	if err != nil {
		return nil, err
	}
	return &Live{Live: l, decl: d, namespace: namespace, name: name}, nil
}

func (l *Live) deployment() *unstructured.Unstructured {
	return l.Get(install.ID{Kind: install.Deployments, Namespace: l.namespace, Name: l.name})
}

// Installed reports whether the installation's Deployment exists and is
// kmshealth's: without it there is no reconciler to speak of.
func (l *Live) Installed() bool { return l.Owns(l.deployment(), false) }

// Exists reports whether any object of the installation is left.
func (l *Live) Exists() bool { return l.Live.Exists(l.decl) }

// NamespaceCreated reports whether kmshealth created the namespace for
// this installation (create_namespace = true): only its labels count.
func (l *Live) NamespaceCreated() bool { return l.Owns(l.Namespace(), true) }

// Drift lists what an Apply of c would change.
func (l *Live) Drift(c Config) []string {
	drift := l.Live.Drift(Declare(c))
	if c.Monitoring == nil {
		for _, o := range monitoringDeclaration(c).Objects {
			if l.Owns(l.Get(o.ID), false) {
				drift = append(drift, o.String()+" is left over (monitoring is off)")
			}
		}
	}
	return drift
}

// Config reconstructs the installation from the cluster, for import and
// drift: image, replicas, resources and flags from the Deployment, the
// APIServices and sources from the record.
func (l *Live) Config() Config {
	c := Config{Namespace: l.namespace, Name: l.name, CreateNamespace: l.NamespaceCreated()}
	c.AdmissionPolicy = l.Owns(l.Get(install.ID{Kind: install.ValidatingAdmissionPolicies, Name: c.PolicyName("apiservices")}), false)
	if rec := l.Get(install.ID{Kind: install.ConfigMaps, Namespace: l.namespace, Name: c.RecordName()}); l.Owns(rec, false) {
		data, _, _ := unstructured.NestedStringMap(rec.Object, "data")
		c.readPatternRecords(data)
	}
	l.readMonitoring(&c)
	u := l.deployment()
	if u == nil {
		return c
	}
	d, err := install.As[appsv1.Deployment](u)
	if err != nil {
		return c
	}
	c.Replicas = 1
	if d.Spec.Replicas != nil {
		c.Replicas = *d.Spec.Replicas
	}
	for _, ct := range d.Spec.Template.Spec.Containers {
		if ct.Name != ContainerName {
			continue
		}
		c.Image = ct.Image
		c.Resources = install.ResourcesOf(ct.Resources)
		var o reconciler.Options
		if incluster.ParseArgs("reconcile", ct.Args, &o) == nil {
			c.readPatternArgs(o)
		}
	}
	return c
}
