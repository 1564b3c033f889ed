package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// Event reasons of the rbac proxy controller, documented for alerting.
const (
	ReasonRBACProxyRestored      = "RBACProxySidecarRestored"
	ReasonRBACProxyRecordInvalid = "RBACProxyRecordInvalid"
)

// rbacProxyPatternReg is pattern 3: its root is the record, whose
// rbacproxy.* entries name the protected workloads; what to keep of each
// is its config ConfigMap's record.json.
var rbacProxyPatternReg = Pattern{
	Name:      "rbacproxy",
	Enabled:   func(o Options) bool { return o.RecordConfigMap != "" },
	EnabledBy: "--record-configmap",
	New: func(c *Clients, o Options) (*controller.Controller, error) {
		return controller.New(newRBACProxyPattern(c, o)), nil
	},
	Reasons: []string{ReasonRBACProxyRestored, ReasonRBACProxyRecordInvalid},
}

// rbacProxyPattern puts the kube-rbac-proxy sidecar back into every
// workload the record names, when something (a Helm upgrade, a kubectl
// replace, a delete and re-create) removed or changed it. Dependencies
// are two levels deep: the record (the root) names the workloads, hence
// their config ConfigMaps (rbacproxy.ObjectName), which RBAC names too;
// each ConfigMap's record.json (ours; its kind Reshapes) says the whole
// sidecar and the workload, never learnt from labels on the workload,
// which is one field-selected watch.
type rbacProxyPattern struct {
	record       controller.Ref
	configmaps   *controller.Kind
	workloads    map[rbacproxy.Kind]*controller.Kind
	apps         appsv1client.AppsV1Interface
	fieldManager string // always rbacproxy.FieldManager, never --field-manager
}

func newRBACProxyPattern(c *Clients, o Options) *rbacProxyPattern {
	records := controller.TypedKind(c.Core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	configmaps := controller.TypedKind(c.Core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	configmaps.Reshapes = true // its record.json names the workload the key depends on
	apps := c.Core.AppsV1().RESTClient()
	p := &rbacProxyPattern{
		record:     controller.Named(records, o.Namespace, o.RecordConfigMap),
		configmaps: configmaps,
		workloads: map[rbacproxy.Kind]*controller.Kind{
			rbacproxy.KindDeployment:  controller.TypedKind(apps, "deployments", &appsv1.Deployment{}),
			rbacproxy.KindStatefulSet: controller.TypedKind(apps, "statefulsets", &appsv1.StatefulSet{}),
			rbacproxy.KindDaemonSet:   controller.TypedKind(apps, "daemonsets", &appsv1.DaemonSet{}),
		},
		apps: c.Core.AppsV1(),
		// The sidecar resource always writes as rbacproxy.FieldManager and
		// releases exactly that manager's fields on destroy: a restore under
		// --field-manager (the caBundle resources' manager) would outlive
		// the destroy of the sidecar resource.
		fieldManager: rbacproxy.FieldManager,
	}
	for _, k := range p.workloads {
		// Status updates (every rollout step) and metadata changes cannot
		// remove the sidecar: only a new template or a new object can.
		k.Relevant = func(o, n any) bool {
			ou, ot, _ := workloadTemplate(o)
			nu, nt, _ := workloadTemplate(n)
			return ou != nu || !equality.Semantic.DeepEqual(ot, nt)
		}
	}
	return p
}

// rbacProxyObs is what one config ConfigMap's reconcile reads.
type rbacProxyObs struct {
	cm       *corev1.ConfigMap
	cfg      rbacproxy.Config
	err      error          // record.json does not decode
	workload runtime.Object // the live workload; nil with err
	uid      types.UID
	template *corev1.PodTemplateSpec
}

// rbacProxyDesired is the workload's apply configuration: kmshealth's
// fields of its pod template and the UID it was computed for.
type rbacProxyDesired struct {
	cfg   rbacproxy.Config
	apply rbacproxy.Workload
}

func (p *rbacProxyPattern) Name() string { return "rbacproxy" }

func (p *rbacProxyPattern) Roots() []controller.Ref { return []controller.Ref{p.record} }

// configMapRef is the config ConfigMap of key (<namespace>/<name>).
func (p *rbacProxyPattern) configMapRef(key string) controller.Ref {
	ns, name, _ := strings.Cut(key, "/")
	return controller.Named(p.configmaps, ns, name)
}

// config decodes the config ConfigMap's record.json; ok is false while
// the ConfigMap does not exist (or its watch has not listed).
func (p *rbacProxyPattern) config(c controller.Cache, ref controller.Ref) (cm *corev1.ConfigMap, cfg rbacproxy.Config, ok bool, err error) {
	obj, exists := c.Get(ref)
	if !exists {
		return nil, rbacproxy.Config{}, false, nil
	}
	cm = obj.(*corev1.ConfigMap)
	cfg, err = rbacproxy.DecodeRecord(cm)
	return cm, cfg, true, err
}

func (p *rbacProxyPattern) workloadRef(t rbacproxy.Target) (controller.Ref, bool) {
	k, ok := p.workloads[t.Kind]
	return controller.Named(k, t.Namespace, t.Name), ok
}

// Deps: each config ConfigMap of a workload the record names is a key; it
// depends on itself and, while its record.json decodes, on the workload
// it records.
func (p *rbacProxyPattern) Deps(c controller.Cache) map[string][]controller.Ref {
	obj, ok := c.Get(p.record)
	if !ok {
		return nil
	}
	kept := rbacproxy.FromRecord(obj.(*corev1.ConfigMap).Data)
	deps := make(map[string][]controller.Ref, len(kept))
	for _, k := range kept {
		if !slices.Contains(rbacproxy.Kinds(), k.Target.Kind) {
			continue // the installer refuses it; nothing RBAC names
		}
		key := k.ConfigMapID()
		ref := p.configMapRef(key)
		refs := []controller.Ref{ref}
		if _, cfg, ok, err := p.config(c, ref); ok && err == nil {
			if w, ok := p.workloadRef(cfg.Target); ok {
				refs = append(refs, w)
			}
		}
		deps[key] = refs
	}
	return deps
}

// Observe reads the config ConfigMap of key and its workload; a key the
// record no longer names has no watch left, so it reads as not synced:
// nothing to do.
func (p *rbacProxyPattern) Observe(c controller.Cache, key string) (rbacProxyObs, bool, error) {
	ref := p.configMapRef(key)
	if !c.Synced(ref) {
		return rbacProxyObs{}, false, nil
	}
	cm, cfg, ok, err := p.config(c, ref)
	if !ok {
		return rbacProxyObs{}, false, nil // not applied yet, or destroyed: nothing to keep
	}
	obs := rbacProxyObs{cm: cm, cfg: cfg, err: err}
	if err != nil {
		return obs, true, nil //nolint:nilerr // the record's error is judged by Desired
	}
	wref, known := p.workloadRef(cfg.Target)
	if !known {
		obs.err = fmt.Errorf("ConfigMap %s/%s: record.json names kind %q, not one of %q", cm.Namespace, cm.Name, cfg.Target.Kind, rbacproxy.Kinds())
		return obs, true, nil
	}
	if !c.Synced(wref) {
		return obs, false, nil // the first list enqueues it again
	}
	obj, exists := c.Get(wref)
	if !exists {
		return obs, false, nil // nothing to protect until it exists; its creation is an event
	}
	obs.uid, obs.template, _ = workloadTemplate(obj)
	obs.workload = obj.(runtime.Object)
	return obs, true, nil
}

func (p *rbacProxyPattern) Desired(obs rbacProxyObs) (rbacProxyDesired, error) {
	invalid := func(err error) error {
		return &controller.Problem{Reason: ReasonRBACProxyRecordInvalid, Metric: "invalid_record", Err: err}
	}
	if obs.err != nil {
		return rbacProxyDesired{}, invalid(fmt.Errorf("%w; the workload is left as it is", obs.err))
	}
	w, err := obs.cfg.WorkloadApply(obs.uid)
	if err != nil {
		return rbacProxyDesired{}, invalid(fmt.Errorf("ConfigMap %s/%s: %w; %s is left as it is: re-apply the kmshealth_rbac_proxy_sidecar resource", obs.cm.Namespace, obs.cm.Name, err, obs.cfg.Target))
	}
	return rbacProxyDesired{cfg: obs.cfg, apply: w}, nil
}

// InSync compares the whole pinned sidecar, its volumes and the config
// hash annotation with the live pod template (rbacproxy.Config.Diff, what
// the admission policy pins): anything changed in them is drift, whoever
// wrote it; the workload's own containers and volumes are not looked at.
func (p *rbacProxyPattern) InSync(obs rbacProxyObs, want rbacProxyDesired) bool {
	diffs, err := want.cfg.Diff(obs.template)
	return err == nil && len(diffs) == 0
}

// Apply forces: the record says the fields are ours, so the write takes
// them back from whoever changed them (an Update by a replace owns what
// it wrote). The UID precondition keeps a workload deleted since it was
// read from being re-created with nothing but our fields.
func (p *rbacProxyPattern) Apply(ctx context.Context, obs rbacProxyObs, want rbacProxyDesired) (controller.Change, error) {
	diffs, _ := want.cfg.Diff(obs.template)
	t := want.cfg.Target
	// What server-side apply cannot remove (another manager's field in
	// our sidecar: a hook, an exec probe, an AppArmor profile) goes with a
	// JSON patch that replaces the sidecar whole, on the workload as read.
	var rv string
	if m, ok := obs.workload.(metav1.Object); ok {
		rv = m.GetResourceVersion()
	}
	patch, err := want.cfg.RestorePatch(obs.template, rv)
	if err != nil {
		return controller.Change{}, err
	}
	if err := rbacproxy.PatchWorkload(ctx, p.apps, t, patch, p.fieldManager); err != nil {
		if kube.Replaced(err) {
			return controller.Change{}, fmt.Errorf("%w: %s was deleted while being updated: %w", controller.ErrGone, t, err)
		}
		return controller.Change{}, err
	}
	opts := metav1.ApplyOptions{FieldManager: p.fieldManager, Force: true}
	switch {
	case want.apply.Deployment != nil:
		_, err = p.apps.Deployments(t.Namespace).Apply(ctx, want.apply.Deployment, opts)
	case want.apply.StatefulSet != nil:
		_, err = p.apps.StatefulSets(t.Namespace).Apply(ctx, want.apply.StatefulSet, opts)
	case want.apply.DaemonSet != nil:
		_, err = p.apps.DaemonSets(t.Namespace).Apply(ctx, want.apply.DaemonSet, opts)
	default:
		return controller.Change{}, fmt.Errorf("rbac proxy for %s: no apply configuration for kind %q", t, t.Kind)
	}
	if kube.Replaced(err) {
		return controller.Change{}, fmt.Errorf("%w: %s was deleted while being updated: %w", controller.ErrGone, t, err)
	}
	if err != nil {
		return controller.Change{}, fmt.Errorf("server-side apply of the kube-rbac-proxy sidecar to %s as %q: %w", t, p.fieldManager, err)
	}
	return controller.Change{
		Reason: ReasonRBACProxyRestored,
		Action: "Restore",
		Note:   restoreNote(obs.cm, diffs),
	}, nil
}

// Subject: Events about a record that cannot be used are about the
// ConfigMap; restores and failed writes are about the workload.
func (p *rbacProxyPattern) Subject(obs rbacProxyObs) runtime.Object {
	if obs.workload != nil {
		return obs.workload
	}
	if obs.cm != nil {
		return obs.cm
	}
	return nil
}

// workloadTemplate is the UID and pod template of a cached workload.
func workloadTemplate(obj any) (types.UID, *corev1.PodTemplateSpec, bool) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.UID, &w.Spec.Template, true
	case *appsv1.StatefulSet:
		return w.UID, &w.Spec.Template, true
	case *appsv1.DaemonSet:
		return w.UID, &w.Spec.Template, true
	}
	return "", nil, false
}

// maxNote keeps an Event's note under the 1 kB events.k8s.io allows.
const maxNote = 1000

// restoreNote says what was put back and from which record.
func restoreNote(cm *corev1.ConfigMap, diffs []string) string {
	note := fmt.Sprintf("Restored the kube-rbac-proxy sidecar from ConfigMap %s/%s: %s", cm.Namespace, cm.Name, strings.Join(diffs, "; "))
	if len(note) > maxNote {
		note = note[:maxNote-3] + "..."
	}
	return note
}
