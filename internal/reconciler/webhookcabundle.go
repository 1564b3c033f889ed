package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
)

// webhookCABundlePatternReg is pattern 1 for webhook configurations and
// CRD conversion webhooks: like caBundlePatternReg, its input is the
// record (cabundle-validating.*, cabundle-mutating.*, cabundle-crd.*), and
// it records the same Event reasons.
var webhookCABundlePatternReg = Pattern{
	Name:      "webhook-cabundle",
	Enabled:   func(o Options) bool { return o.RecordConfigMap != "" },
	EnabledBy: "--record-configmap",
	New: func(c *Clients, o Options) (*controller.Controller, error) {
		return controller.New(newWebhookCABundlePattern(c, o)), nil
	},
	Reasons: []string{ReasonRestored, ReasonSourceMissing, ReasonSourceInvalid, ReasonSourceForbidden, ReasonNotApplicable, ReasonInvalidRecord},
}

// webhookCABundlePattern keeps the caBundles of every webhook
// configuration and CRD conversion webhook the reconciler's record names
// equal to their source: the caBundle controller's loop over
// cabundle.Injectable, one key per object (Kind/name). The record is the
// root; the webhook configurations are one watch of each kind (ClusterWide
// kinds), each CRD and each source one field-selected watch.
type webhookCABundlePattern struct {
	record       controller.Ref
	kinds        map[string]*controller.Kind // by cabundle kind
	injectables  map[string]cabundle.Injectable
	secrets      *controller.Kind
	configmaps   *controller.Kind
	fieldManager string
	parsed       *parsedRecord[cabundle.Kept]
}

func newWebhookCABundlePattern(c *Clients, o Options) *webhookCABundlePattern {
	configmaps := controller.TypedKind(c.Core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	admission := c.Core.AdmissionregistrationV1().RESTClient()
	kinds := map[string]*controller.Kind{
		cabundle.KindValidatingWebhookConfiguration: controller.TypedKind(admission, "validatingwebhookconfigurations", &admissionregistrationv1.ValidatingWebhookConfiguration{}),
		cabundle.KindMutatingWebhookConfiguration:   controller.TypedKind(admission, "mutatingwebhookconfigurations", &admissionregistrationv1.MutatingWebhookConfiguration{}),
		cabundle.KindCustomResourceDefinition:       controller.TypedKind(c.Extensions.ApiextensionsV1().RESTClient(), "customresourcedefinitions", &apiextensionsv1.CustomResourceDefinition{}),
	}
	injectables := map[string]cabundle.Injectable{}
	for kind, k := range kinds {
		k.ManagedFields = true // ownership of the caBundles is part of "in sync"
		k.Trim = trimObjectMeta(o.FieldManager)
		// Webhook configurations are few and not secret: one watch of each
		// kind for every kept one. CRDs stay one field-selected watch each:
		// their schemas make every object large.
		k.ClusterWide = kind != cabundle.KindCustomResourceDefinition
		injectables[kind], _ = cabundle.For(kind, cabundle.Clients{Core: c.Core, Aggregator: c.Aggregator, Extensions: c.Extensions})
	}
	return &webhookCABundlePattern{
		record:       controller.Named(configmaps, o.Namespace, o.RecordConfigMap),
		kinds:        kinds,
		injectables:  injectables,
		secrets:      controller.TypedKind(c.Core.CoreV1().RESTClient(), "secrets", &corev1.Secret{}),
		configmaps:   configmaps,
		fieldManager: o.FieldManager,
		parsed:       newParsedRecord(cabundle.TargetsFromRecord),
	}
}

// webhookCABundleObs is what one object's reconcile reads from the watches.
type webhookCABundleObs struct {
	kept      cabundle.Kept
	inj       cabundle.Injectable
	live      cabundle.Object
	recordErr error
	sourceErr error
	bundle    []byte
}

func (p *webhookCABundlePattern) Name() string { return "webhook-cabundle" }

func (p *webhookCABundlePattern) Roots() []controller.Ref { return []controller.Ref{p.record} }

// entries are the record's webhook and CRD entries, parsed once per
// record (parsedRecord): shared, never modify them.
func (p *webhookCABundlePattern) entries(c controller.Cache) (map[string]cabundle.Kept, map[string]error) {
	obj, ok := c.Get(p.record)
	if !ok {
		return nil, nil
	}
	return p.parsed.of(obj.(*corev1.ConfigMap))
}

func (p *webhookCABundlePattern) objectRef(key string) (controller.Ref, bool) {
	t, err := cabundle.ParseTarget(key)
	if err != nil || p.kinds[t.Kind] == nil {
		return controller.Ref{}, false
	}
	return controller.Named(p.kinds[t.Kind], "", t.Name), true
}

func (p *webhookCABundlePattern) sourceRef(s cabundle.Source) controller.Ref {
	kind := p.configmaps
	if s.Kind == cabundle.KindSecret {
		kind = p.secrets
	}
	return controller.Named(kind, s.Namespace, s.Name)
}

func (p *webhookCABundlePattern) Deps(c controller.Cache) map[string][]controller.Ref {
	good, bad := p.entries(c)
	deps := make(map[string][]controller.Ref, len(good)+len(bad))
	for key, k := range good {
		if ref, ok := p.objectRef(key); ok {
			deps[key] = []controller.Ref{ref, p.sourceRef(k.Source)}
		}
	}
	for key := range bad {
		if ref, ok := p.objectRef(key); ok {
			deps[key] = []controller.Ref{ref}
		}
	}
	return deps
}

func (p *webhookCABundlePattern) Observe(c controller.Cache, key string) (webhookCABundleObs, bool, error) {
	good, bad := p.entries(c)
	kept, ok := good[key]
	obs := webhookCABundleObs{kept: kept, recordErr: bad[key]}
	ref, known := p.objectRef(key)
	if (!ok && obs.recordErr == nil) || !known || !c.Synced(ref) {
		return obs, false, nil
	}
	t, _ := cabundle.ParseTarget(key)
	obs.inj = p.injectables[t.Kind]
	obj, exists := c.Get(ref)
	if !exists {
		return obs, false, nil // nothing to keep until it exists; its creation is an event
	}
	obs.live = obj.(cabundle.Object)
	if obs.recordErr != nil {
		return obs, true, nil //nolint:nilerr // the record's error is carried in obs and judged by Desired
	}
	src := p.sourceRef(kept.Source)
	if !c.Synced(src) {
		if obs.sourceErr = c.Err(src); obs.sourceErr == nil {
			return obs, false, nil // the first list enqueues it again
		}
		return obs, true, nil
	}
	if o, ok := c.Get(src); ok {
		switch s := o.(type) {
		case *corev1.Secret:
			obs.bundle = s.Data[kept.Source.Key]
		case *corev1.ConfigMap:
			obs.bundle = cabundle.ConfigMapData(s)[kept.Source.Key]
		}
	}
	return obs, true, nil
}

func (p *webhookCABundlePattern) Desired(obs webhookCABundleObs) (*cabundle.Want, error) {
	problem := func(reason, metric string, err error) error {
		return &controller.Problem{Reason: reason, Metric: metric, Err: err}
	}
	src := obs.kept.Source
	switch {
	case obs.recordErr != nil:
		return nil, problem(ReasonInvalidRecord, "invalid_record", fmt.Errorf("the reconciler's record names this object with an invalid entry (%w); its caBundle is left as it is: apply kmshealth_reconciler again", obs.recordErr))
	case obs.sourceErr != nil:
		return nil, problem(ReasonSourceForbidden, "source_unreadable", fmt.Errorf("cannot read %s (%w); the live caBundle is left as it is: add the source to kmshealth_reconciler.webhook_ca_bundles so its Role grants it", src, obs.sourceErr))
	case obs.bundle == nil:
		return nil, problem(ReasonSourceMissing, "source_missing", fmt.Errorf("%s %s/%s or its key %q does not exist; the live caBundle is left as it is", src.Kind, src.Namespace, src.Name, src.Key))
	}
	info, findings := cabundle.Inspect(obs.bundle, time.Now())
	if cabundle.HasErrors(findings) {
		return nil, problem(ReasonSourceInvalid, "source_invalid", fmt.Errorf("%s holds no valid CA bundle (%w); the live caBundle is left as it is", src, cabundle.FirstError(findings)))
	}
	want, err := cabundle.WantFor(obs.inj, obs.live, obs.kept.Target.Webhooks, info.Canonical, src)
	if err != nil {
		return nil, problem(ReasonNotApplicable, "not_applicable", err)
	}
	return want, nil
}

func (p *webhookCABundlePattern) InSync(obs webhookCABundleObs, want *cabundle.Want) bool {
	return cabundle.InSyncWith(obs.inj, obs.live, want, p.fieldManager)
}

// Apply forces: the record says the fields are ours, so the write takes
// them back from whoever overwrote them.
func (p *webhookCABundlePattern) Apply(ctx context.Context, obs webhookCABundleObs, want *cabundle.Want) (controller.Change, error) {
	_, err := cabundle.ApplyWant(ctx, obs.inj, want, cabundle.ApplyOptions{FieldManager: p.fieldManager, Force: true})
	if errors.Is(err, cabundle.ErrGone) {
		return controller.Change{}, fmt.Errorf("%w: %w", controller.ErrGone, err)
	}
	if err != nil {
		return controller.Change{}, err
	}
	return controller.Change{
		Reason: ReasonRestored,
		Action: "Restore",
		Note:   fmt.Sprintf("Restored the caBundle of %d webhook(s) from %s (sha256 %.16s)", len(want.Slots), obs.kept.Source, cabundle.Fingerprint(want.Bundle)),
	}, nil
}

// NotAfter: the earliest expiry in the kept caBundle (controller.Expirer).
func (p *webhookCABundlePattern) NotAfter(want *cabundle.Want) time.Time {
	info, _ := cabundle.Inspect(want.Bundle, time.Time{})
	return info.NotAfter
}

func (p *webhookCABundlePattern) Subject(obs webhookCABundleObs) runtime.Object {
	if obs.live == nil {
		return nil
	}
	return obs.live
}

// trimObjectMeta keeps of an object's metadata what the pattern reads
// (trimMeta); the rest of the object — the webhooks, the CRD's spec — is
// what Slots and Bundle read.
func trimObjectMeta(manager string) func(any) any {
	return func(obj any) any {
		switch o := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			trimMeta(&o.ObjectMeta, manager)
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			trimMeta(&o.ObjectMeta, manager)
		case *apiextensionsv1.CustomResourceDefinition:
			trimMeta(&o.ObjectMeta, manager)
			o.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		}
		return obj
	}
}
