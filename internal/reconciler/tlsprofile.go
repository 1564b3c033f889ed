package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// Event reasons of the TLS profile controller.
const (
	ReasonTLSProfileSynced     = "TLSProfileSynced"
	ReasonTLSProfileInvalid    = "TLSProfileInvalid"
	ReasonTLSProfileUnresolved = "TLSProfileUnresolvable"
)

// tlsProfilePatternReg is pattern 2: its root is the record, whose
// tlsprofile.* entries name the profile ConfigMaps to keep; what to keep
// of each is in that ConfigMap's annotations.
var tlsProfilePatternReg = Pattern{
	Name:      "tlsprofile",
	Enabled:   func(o Options) bool { return o.RecordConfigMap != "" },
	EnabledBy: "--record-configmap",
	New: func(c *Clients, o Options) (*controller.Controller, error) {
		return controller.New(newTLSProfilePattern(c, o)), nil
	},
	Reasons: []string{ReasonTLSProfileSynced, ReasonTLSProfileInvalid, ReasonTLSProfileUnresolved},
}

// tlsProfilePattern keeps each profile ConfigMap the record names with
// profile.json equal to its profile resolved again (from its recorded
// spec, or from the cluster's APIServer object), and every rollout target
// it lists carrying the profile's hash. Dependencies are two levels deep:
// the record (the root) names the ConfigMaps, each ConfigMap (ours; its
// kind Reshapes) names its targets, never learnt from the targets
// themselves; each ConfigMap, target and the APIServer "cluster" is one
// field-selected watch.
type tlsProfilePattern struct {
	record     controller.Ref
	configmaps *controller.Kind
	targets    map[kube.WorkloadKind]*controller.Kind // by kind
	apiserver  controller.Ref
	core       corev1client.ConfigMapsGetter
	dyn        dynamic.Interface
}

func newTLSProfilePattern(c *Clients, o Options) *tlsProfilePattern {
	records := controller.TypedKind(c.Core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	configmaps := controller.TypedKind(c.Core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	configmaps.Reshapes = true // its targets annotation names what else the key depends on
	p := &tlsProfilePattern{
		record:     controller.Named(records, o.Namespace, o.RecordConfigMap),
		configmaps: configmaps,
		targets:    map[kube.WorkloadKind]*controller.Kind{},
		core:       c.Core.CoreV1(),
		dyn:        c.Dynamic,
	}
	for _, kind := range kube.WorkloadKinds() {
		gvr, _ := kind.GVR()
		p.targets[kind] = controller.DynamicKind(c.Raw, gvr)
	}
	p.apiserver = controller.Named(controller.DynamicKind(c.Raw, tlsprofile.APIServerGVR()), "", tlsprofile.APIServerName)
	return p
}

type tlsProfileObs struct {
	cm      *corev1.ConfigMap
	spec    tlsprofile.Spec
	targets []tlsprofile.Target
	live    map[tlsprofile.Target]string // hash annotation of each existing target
	cluster *unstructured.Unstructured   // the APIServer object; nil when absent
	err     error                        // the ConfigMap's annotations do not parse
}

type tlsProfileDesired struct {
	resolved tlsprofile.Resolved
	warnings []string
}

func (p *tlsProfilePattern) Name() string { return "tlsprofile" }

func (p *tlsProfilePattern) Roots() []controller.Ref { return []controller.Ref{p.record} }

func (p *tlsProfilePattern) targetRef(t tlsprofile.Target) (controller.Ref, bool) {
	k, ok := p.targets[t.Kind]
	return controller.Named(k, t.Namespace, t.Name), ok
}

// configMapRef is the profile ConfigMap of key (<namespace>/<name>).
func (p *tlsProfilePattern) configMapRef(key string) controller.Ref {
	ns, name, _ := strings.Cut(key, "/")
	return controller.Named(p.configmaps, ns, name)
}

// Deps: each profile ConfigMap the record names is a key; it depends on
// itself, each target its annotations list and, for a cluster profile,
// the APIServer object. The record's own targets are what RBAC grants,
// not what is kept: the ConfigMap, written by its resource, says that.
func (p *tlsProfilePattern) Deps(c controller.Cache) map[string][]controller.Ref {
	obj, ok := c.Get(p.record)
	if !ok {
		return nil
	}
	kept := tlsprofile.FromRecord(obj.(*corev1.ConfigMap).Data)
	deps := make(map[string][]controller.Ref, len(kept))
	for _, k := range kept {
		root := p.configMapRef(k.ID())
		refs := []controller.Ref{root}
		if obj, ok := c.Get(root); ok {
			spec, targets, err := tlsprofile.FromConfigMap(obj.(*corev1.ConfigMap).Annotations)
			if err == nil {
				for _, t := range targets {
					if r, ok := p.targetRef(t); ok {
						refs = append(refs, r)
					}
				}
				if spec.Source == tlsprofile.SourceCluster {
					refs = append(refs, p.apiserver)
				}
			}
		}
		deps[k.ID()] = refs
	}
	return deps
}

// Observe reads the profile ConfigMap of key; a key the record no longer
// names has no watch left, so it reads as not synced: nothing to do.
func (p *tlsProfilePattern) Observe(c controller.Cache, key string) (tlsProfileObs, bool, error) {
	root := p.configMapRef(key)
	if !c.Synced(root) {
		return tlsProfileObs{}, false, nil
	}
	obj, ok := c.Get(root)
	if !ok {
		return tlsProfileObs{}, false, nil // not created yet (or destroyed): nothing to keep
	}
	obs := tlsProfileObs{cm: obj.(*corev1.ConfigMap), live: map[tlsprofile.Target]string{}}
	obs.spec, obs.targets, obs.err = tlsprofile.FromConfigMap(obs.cm.Annotations)
	if obs.err != nil {
		return obs, true, nil //nolint:nilerr // judged by Desired
	}
	for _, t := range obs.targets {
		r, ok := p.targetRef(t)
		if !ok {
			continue
		}
		if !c.Synced(r) {
			return obs, false, nil // the first list enqueues it again
		}
		if o, ok := c.Get(r); ok {
			h, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "template", "metadata", "annotations", tlsprofile.HashAnnotation)
			obs.live[t] = h
		}
	}
	if obs.spec.Source == tlsprofile.SourceCluster {
		if !c.Synced(p.apiserver) && c.Err(p.apiserver) == nil {
			return obs, false, nil
		}
		if o, ok := c.Get(p.apiserver); ok {
			obs.cluster = o.(*unstructured.Unstructured)
		}
	}
	return obs, true, nil
}

func (p *tlsProfilePattern) Desired(obs tlsProfileObs) (tlsProfileDesired, error) {
	if obs.err != nil {
		return tlsProfileDesired{}, &controller.Problem{Reason: ReasonTLSProfileInvalid, Metric: "invalid_record",
			Err: fmt.Errorf("ConfigMap %s/%s: %w; left as it is: apply its kmshealth_tls_profile_configmap again", obs.cm.Namespace, obs.cm.Name, obs.err)}
	}
	spec, adherence := obs.spec, tlsprofile.AdherenceNoOpinion
	if spec.Source == tlsprofile.SourceCluster {
		var err error
		if spec, adherence, err = tlsprofile.FromAPIServer(obs.cluster); err != nil {
			return tlsProfileDesired{}, &controller.Problem{Reason: ReasonTLSProfileUnresolved, Metric: "source_invalid", Err: err}
		}
		spec.FIPS = obs.spec.FIPS // recorded by the resource; the cluster does not say
	}
	res, warnings, err := tlsprofile.Resolve(spec, adherence)
	if err != nil {
		return tlsProfileDesired{}, &controller.Problem{Reason: ReasonTLSProfileUnresolved, Metric: "source_invalid",
			Err: fmt.Errorf("the profile cannot be honoured (%w); ConfigMap %s/%s and its targets are left as they are", err, obs.cm.Namespace, obs.cm.Name)}
	}
	return tlsProfileDesired{resolved: res, warnings: warnings}, nil
}

func (p *tlsProfilePattern) InSync(obs tlsProfileObs, want tlsProfileDesired) bool {
	if obs.cm.Data[tlsprofile.DocumentKey] != string(want.resolved.JSON) {
		return false
	}
	for _, h := range obs.live {
		if h != want.resolved.Hash {
			return false
		}
	}
	return true
}

// Apply rewrites the ConfigMap's profile.json when it differs, then the
// hash on every existing target that does not carry it (which rolls it).
func (p *tlsProfilePattern) Apply(ctx context.Context, obs tlsProfileObs, want tlsProfileDesired) (controller.Change, error) {
	var did []string
	if obs.cm.Data[tlsprofile.DocumentKey] != string(want.resolved.JSON) {
		ac, err := tlsprofile.ConfigMap(obs.cm.Namespace, obs.cm.Name, obs.spec, want.resolved, obs.targets)
		if err != nil {
			return controller.Change{}, err
		}
		if err := tlsprofile.ApplyConfigMap(ctx, p.core, ac); err != nil {
			if errors.Is(err, tlsprofile.ErrNotOurs) {
				return controller.Change{}, fmt.Errorf("%w: %w", controller.ErrGone, err)
			}
			return controller.Change{}, err
		}
		did = append(did, "profile.json")
	}
	for t, h := range obs.live {
		if h == want.resolved.Hash {
			continue
		}
		if err := tlsprofile.AnnotateTarget(ctx, p.dyn, t, want.resolved.Hash); err != nil {
			return controller.Change{}, err
		}
		did = append(did, t.String())
	}
	return controller.Change{
		Reason: ReasonTLSProfileSynced,
		Action: "Sync",
		Note:   fmt.Sprintf("Wrote TLS profile %s (hash %.16s) to %s", want.resolved.Document.Type, want.resolved.Hash, strings.Join(did, ", ")),
	}, nil
}

func (p *tlsProfilePattern) Subject(obs tlsProfileObs) runtime.Object {
	if obs.cm == nil {
		return nil
	}
	return obs.cm
}
