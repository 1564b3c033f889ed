package reporterinstall

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporter"
)

// Declare is the installation c as a declaration: first the CRD (waited
// for until Established) and the target object, then the ServiceAccount
// and RBAC, then the DaemonSet, so pods never start without their
// permissions or their target. With InstallCRD off, a CRD and object this
// installation created are handed over (their labels removed), so Delete
// keeps them. c must be valid; a Config without an image declares the
// objects by name, for Observe and Delete.
func Declare(c Config) install.Declaration {
	named := c.Image == ""
	var objs Objects
	if !named {
		var err error
		if objs, err = Build(c); err != nil {
			panic("reporterinstall: Declare of an invalid Config: " + err.Error()) // callers validate first
		}
	}
	target := c.Target
	if target == (kmshealth.Target{}) {
		target = kmshealth.DefaultTarget()
	}
	crdID := install.ID{Kind: install.CustomResourceDefinitions, Name: kmshealth.CRDName}
	objectID := install.ID{Kind: TargetKind(target), Name: target.Name}
	d := install.Declaration{
		Owner:         owner(c.Namespace, c.Name),
		Namespace:     c.Namespace,
		NamespaceHint: "create it first; the reporter needs a namespace whose Pod Security level allows hostPath volumes, e.g. kube-system",
		Precheck:      func(l *install.Live) []error { return checkPodSecurity(c.Namespace, l) },
	}
	if c.InstallCRD || named {
		d.Objects = append(d.Objects, install.Object{ID: crdID, Body: unstructuredBody(objs.CRD), Shared: true,
			Ready: kmshealth.Established, WaitGone: true, Keep: keepCRDFor(c),
			ForeignHint: "set install_crd = false to report to it as it is"})
	} else {
		d.Released = append(d.Released, install.Released{ID: crdID, Body: kmshealth.CRD()})
	}
	switch {
	case c.CreatesObject() || named:
		d.Objects = append(d.Objects, install.Object{ID: objectID, Body: unstructuredBody(objs.Object), Shared: true, RetryNotFound: true,
			ForeignHint: "set install_crd = false to report to it as it is, or choose another target name"})
	case target.IsDefault():
		release := BuildObject(Config{Namespace: c.Namespace, Name: c.Name, Target: target})
		release.SetLabels(nil)
		d.Released = append(d.Released, install.Released{ID: objectID, Body: release})
	}
	add := func(kind install.Kind, namespace, name string, body any) {
		d.Objects = append(d.Objects, install.Object{ID: install.ID{Kind: kind, Namespace: namespace, Name: name}, Body: body})
	}
	add(install.ServiceAccounts, c.Namespace, c.ServiceAccountName(), typedBody(objs.ServiceAccount))
	add(install.ClusterRoles, "", c.ClusterRoleName(), typedBody(objs.ClusterRole))
	add(install.ClusterRoleBindings, "", c.ClusterRoleName(), typedBody(objs.ClusterRoleBinding))
	// The admission policy before the DaemonSet, so no reporter writes
	// unconstrained; by name too without a configuration, so Delete finds
	// it.
	if c.AdmissionPolicy || named {
		for _, o := range StatusPolicy(c).Objects() {
			if !c.AdmissionPolicy {
				o.Body = nil
			}
			d.Objects = append(d.Objects, o)
		}
	}
	add(install.DaemonSets, c.Namespace, c.Name, typedBody(objs.DaemonSet))
	// The monitoring objects after the reporters: by name too without a
	// configuration, so Delete finds them (a kind that is not served reads
	// as missing).
	if c.Monitoring != nil || named {
		mc := c
		if named {
			mc.Monitoring = nil
		}
		mon, err := monitoringObjects(mc)
		if err != nil {
			panic("reporterinstall: " + err.Error()) // the embedded rules are tested
		}
		d.Objects = append(d.Objects, mon...)
	}
	// PodMonitors and PrometheusRules: a rule turned off is a leftover.
	d.Sweep = []install.Kind{install.ValidatingAdmissionPolicies, install.ValidatingAdmissionPolicyBindings, install.PodMonitors, install.PrometheusRules}
	return d
}

// TargetKind is the kind of the target's objects (cluster-scoped).
func TargetKind(t kmshealth.Target) install.Kind {
	return install.CustomKind(t.Resource+"."+t.Group, t.GVR(), false)
}

func typedBody[T any](ac *T) any {
	if ac == nil {
		return nil
	}
	return ac
}

func unstructuredBody(u *unstructured.Unstructured) any {
	if u == nil {
		return nil
	}
	return u
}

// checkPodSecurity refuses a namespace whose Pod Security level would
// reject the pods.
func checkPodSecurity(namespace string, l *install.Live) []error {
	ns := l.Namespace()
	if ns == nil {
		return nil
	}
	if level := ns.GetLabels()[podSecurityEnforce]; level == "baseline" || level == "restricted" {
		return []error{fmt.Errorf("namespace %q enforces the %q Pod Security Standard (label %s), which forbids the hostPath volume of the KMS socket directory, so the DaemonSet could never create its pods: "+
			"install into a namespace at the privileged level, e.g. kube-system, or label this one %s=privileged", namespace, level, podSecurityEnforce, podSecurityEnforce)}
	}
	return nil
}

// keepCRDFor keeps the CRD when it holds KMSHealth objects this
// installation did not create: deleting it would delete them.
func keepCRDFor(c Config) func(context.Context, install.Clients) (string, error) {
	return func(ctx context.Context, cl install.Clients) (string, error) {
		list, err := cl.Dynamic.Resource(kmshealth.DefaultTarget().GVR()).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("list %s objects: %w", kmshealth.Kind, err)
		}
		var others []string
		for i := range list.Items {
			if !owner(c.Namespace, c.Name).Labelled(&list.Items[i]) {
				others = append(others, list.Items[i].GetName())
			}
		}
		if len(others) == 0 {
			return "", nil
		}
		slices.Sort(others)
		return fmt.Sprintf("CustomResourceDefinition %s is kept, because deleting it would delete the %s objects %s, which this installation did not create; delete them, then the CRD",
			kmshealth.CRDName, kmshealth.Kind, strings.Join(others, ", ")), nil
	}
}

// Apply brings the cluster to c (see Declare); it refuses, before any
// write, an invalid c, a missing namespace or one whose Pod Security level
// forbids the pods, and objects at the installation's names that are
// someone else's.
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

// monitoringDeclaration declares only c's monitoring objects, by name.
func monitoringDeclaration(c Config) install.Declaration {
	mc := c
	mc.Monitoring = nil
	objs, err := monitoringObjects(mc)
	if err != nil {
		panic("reporterinstall: " + err.Error()) // by name: no rules decoded
	}
	return install.Declaration{Owner: owner(c.Namespace, c.Name), Namespace: c.Namespace, Objects: objs}
}

// InstallCRD installs, through the installer, the KMSHealth CRD exactly as
// the installation c declares it (waiting until it is established), and
// CreateTarget c's target object (retrying while a just-established CRD
// is not served): the first steps of Apply, alone, for tests and
// benchmarks that need a target and no reporter. c must be valid.
func InstallCRD(ctx context.Context, cl install.Clients, c Config) error {
	return applyOnly(ctx, cl, c, install.CustomResourceDefinitions)
}

// CreateTarget: see InstallCRD.
func CreateTarget(ctx context.Context, cl install.Clients, c Config) error {
	return applyOnly(ctx, cl, c, TargetKind(c.Target))
}

func applyOnly(ctx context.Context, cl install.Clients, c Config, kind install.Kind) error {
	if err := c.Validate(); err != nil {
		return &install.Refusal{Reasons: []error{err}}
	}
	d := Declare(c)
	d.Objects = slices.DeleteFunc(d.Objects, func(o install.Object) bool { return o.Kind.GVR != kind.GVR })
	d.Released = nil
	return install.Apply(ctx, cl, d)
}

// Deleted is what Delete did beyond removing the installation's objects.
type Deleted struct {
	// Conditions are the condition types removed from the target.
	Conditions []string
	// Kept explains what was left in place on purpose.
	Kept []string
}

// Delete removes every object of the installation namespace/name that is
// kmshealth's — the DaemonSet and its permissions first, so a reporter
// still shutting down can no longer write — then kmshealth's conditions
// (every KMSHealthReporter_<node> and KMSPluginsDegraded) from target, and,
// when installCRD, the target object and the CRD if this installation
// created them; it waits until the CRD is gone. The CRD stays when it
// holds objects someone else created. Objects of someone else at the same
// names are left alone.
// WaitForRollout waits until the DaemonSet's pods are updated and
// available on every node it is scheduled to.
func WaitForRollout(ctx context.Context, cl install.Clients, namespace, name string, progress func(string)) error {
	return install.WaitForRollout(ctx, cl, install.ID{Kind: install.DaemonSets, Namespace: namespace, Name: name}, progress)
}

func Delete(ctx context.Context, cl install.Clients, namespace, name string, target kmshealth.Target, installCRD bool) (Deleted, error) {
	var out Deleted
	d := Declare(Config{Namespace: namespace, Name: name, Target: target, InstallCRD: installCRD})
	if !installCRD {
		// Only the installation's own objects; the CRD and target stay.
		d.Objects = slices.DeleteFunc(d.Objects, func(o install.Object) bool { return o.Shared })
		d.Released = nil
	}
	// The conditions go once the reporters and their permissions are gone:
	// after the ServiceAccount, the last of them to be deleted.
	sa := slices.IndexFunc(d.Objects, func(o install.Object) bool { return o.Kind == install.ServiceAccounts })
	if target == (kmshealth.Target{}) {
		target = kmshealth.DefaultTarget()
	}
	d.Objects[sa].AfterDelete = func(ctx context.Context, cl install.Clients) error {
		removed, err := removeConditions(ctx, cl, target)
		out.Conditions = removed
		return err
	}
	deleted, err := install.Delete(ctx, cl, d)
	out.Kept = deleted.Kept
	return out, err
}

// removeConditions drops kmshealth's conditions from the target, reading
// it again when a concurrent write made the guarded patch fail.
func removeConditions(ctx context.Context, cl install.Clients, t kmshealth.Target) ([]string, error) {
	var last error
	for range 3 {
		obj, err := cl.Dynamic.Resource(t.GVR()).Get(ctx, t.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read target %s: %w", t, err)
		}
		removed, err := kmshealth.RemoveConditions(ctx, cl.Dynamic, t, obj, kmshealth.IsOurs)
		if err == nil {
			return removed, nil
		}
		last = err
	}
	return nil, last
}

// Live is the installation as the cluster holds it.
type Live struct {
	*install.Live
	decl            install.Declaration
	namespace, name string
	// Target is the object the installation reports to.
	Target kmshealth.Target
}

// Observe reads the installation namespace/name and its target object. A
// zero target means the one the live DaemonSet reports to (for import),
// or the default when that cannot be read.
func Observe(ctx context.Context, cl install.Clients, namespace, name string, target kmshealth.Target) (*Live, error) {
	guess := target
	if guess == (kmshealth.Target{}) {
		guess = kmshealth.DefaultTarget()
	}
	read := func(t kmshealth.Target) (*Live, error) {
		d := Declare(Config{Namespace: namespace, Name: name, Target: t})
		l, err := install.Observe(ctx, cl, d)
		if err != nil {
			return nil, err
		}
		return &Live{Live: l, decl: d, namespace: namespace, name: name, Target: t}, nil
	}
	l, err := read(guess)
	if err != nil || target != (kmshealth.Target{}) {
		return l, err
	}
	if lc, ok := l.Config(); ok && lc.Target != guess {
		return read(lc.Target)
	}
	return l, nil
}

func (l *Live) daemonSet() *unstructured.Unstructured {
	return l.Get(install.ID{Kind: install.DaemonSets, Namespace: l.namespace, Name: l.name})
}

// CRD is the KMSHealth CRD, whoever installed it; nil when it does not
// exist.
func (l *Live) CRD() *unstructured.Unstructured {
	return l.Get(install.ID{Kind: install.CustomResourceDefinitions, Name: kmshealth.CRDName})
}

// Object is the target object, nil when it (or its resource) does not
// exist.
func (l *Live) Object() *unstructured.Unstructured {
	return l.Get(install.ID{Kind: TargetKind(l.Target), Name: l.Target.Name})
}

// CRDInstalled reports whether the KMSHealth CRD exists and this
// installation installed it.
func (l *Live) CRDInstalled() bool { return l.Owns(l.CRD(), true) }

// ObjectCreated reports whether the target object exists and this
// installation created it.
func (l *Live) ObjectCreated() bool { return l.Owns(l.Object(), true) }

// Installed reports whether the installation's DaemonSet exists and is
// kmshealth's: without it there is no reporter to speak of.
func (l *Live) Installed() bool { return l.Owns(l.daemonSet(), false) }

// Exists reports whether any object of the installation is left.
func (l *Live) Exists() bool { return l.Live.Exists(l.decl) }

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

// OwnsShared reports whether a CRD or target object is the installation
// namespace/name's: only its labels count, so nobody else's CRD is ever
// deleted on a guess.
func OwnsShared(obj metav1.Object, namespace, name string) bool {
	return owner(namespace, name).Labelled(obj)
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
	c.AdmissionPolicy = l.Owns(l.Get(install.ID{Kind: install.ValidatingAdmissionPolicies, Name: c.PolicyName()}), false)
	u := l.daemonSet()
	if u == nil {
		return c, false
	}
	ds, err := install.As[appsv1.DaemonSet](u)
	if err != nil {
		return c, false
	}
	pod := ds.Spec.Template.Spec
	i := slices.IndexFunc(pod.Containers, func(ct corev1.Container) bool { return ct.Name == ContainerName })
	if i < 0 {
		return c, false
	}
	ct := pod.Containers[i]
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
	c.ReportFormat = kmshealth.ReportFormat(o.ReportFormat)
	return c, true
}
