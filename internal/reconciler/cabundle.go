package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
)

// Event reasons of the caBundle controller, documented for alerting.
const (
	ReasonRestored        = "CABundleRestored"
	ReasonSourceMissing   = "CABundleSourceMissing"
	ReasonSourceInvalid   = "CABundleSourceInvalid"
	ReasonSourceForbidden = "CABundleSourceUnreadable"
	ReasonNotApplicable   = "CABundleNotApplicable"
	ReasonInvalidRecord   = "CABundleRecordInvalid"
)

// caBundlePatternReg is pattern 1 for APIServices. It runs whenever there
// is a record (--record-configmap): the record's cabundle.<apiservice>
// entries are its input, so a new one needs no restart.
var caBundlePatternReg = Pattern{
	Name:      "cabundle",
	Enabled:   func(o Options) bool { return o.RecordConfigMap != "" },
	EnabledBy: "--record-configmap",
	New: func(c *Clients, o Options) (*controller.Controller, error) {
		return controller.New(newCABundlePattern(c, o)), nil
	},
	Reasons: []string{ReasonRestored, ReasonSourceMissing, ReasonSourceInvalid, ReasonSourceForbidden, ReasonNotApplicable, ReasonInvalidRecord},
}

// caBundlePattern keeps every APIService the reconciler's record names
// equal to its source. The record (a ConfigMap of the installation) is
// the root; the APIServices are one watch of every APIService (a
// ClusterWide kind), each source one field-selected watch.
type caBundlePattern struct {
	record       controller.Ref
	apiservices  *controller.Kind
	secrets      *controller.Kind
	configmaps   *controller.Kind
	client       apiregclient.APIServicesGetter
	fieldManager string
	parsed       *parsedRecord[cabundle.Source]
}

func newCABundlePattern(c *Clients, o Options) *caBundlePattern {
	configmaps := controller.TypedKind(c.Core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	apiservices := controller.TypedKind(c.Aggregator.ApiregistrationV1().RESTClient(), "apiservices", &apiregv1.APIService{})
	apiservices.ManagedFields = true // ownership of spec.caBundle is part of "in sync"
	apiservices.ClusterWide = true   // few and not secret: one watch for every kept APIService
	apiservices.Trim = trimAPIService(o.FieldManager)
	return &caBundlePattern{
		record:       controller.Named(configmaps, o.Namespace, o.RecordConfigMap),
		apiservices:  apiservices,
		secrets:      controller.TypedKind(c.Core.CoreV1().RESTClient(), "secrets", &corev1.Secret{}),
		configmaps:   configmaps,
		client:       c.Aggregator.ApiregistrationV1(),
		fieldManager: o.FieldManager,
		parsed:       newParsedRecord(cabundle.FromRecord),
	}
}

// caBundleObs is what one APIService's reconcile reads from the watches.
type caBundleObs struct {
	name      string
	svc       *apiregv1.APIService
	src       cabundle.Source
	recordErr error  // the record's entry does not parse
	sourceErr error  // the source cannot be listed (e.g. RBAC)
	bundle    []byte // nil when the source or its key is missing
}

func (p *caBundlePattern) Name() string { return "cabundle" }

func (p *caBundlePattern) Roots() []controller.Ref { return []controller.Ref{p.record} }

// entries are the record's APIService entries, parsed once per record
// (parsedRecord): shared, never modify them.
func (p *caBundlePattern) entries(c controller.Cache) (map[string]cabundle.Source, map[string]error) {
	obj, ok := c.Get(p.record)
	if !ok {
		return nil, nil
	}
	return p.parsed.of(obj.(*corev1.ConfigMap))
}

func (p *caBundlePattern) sourceRef(s cabundle.Source) controller.Ref {
	kind := p.configmaps
	if s.Kind == cabundle.KindSecret {
		kind = p.secrets
	}
	return controller.Named(kind, s.Namespace, s.Name)
}

// Deps: every APIService in the record depends on itself and its source;
// one with an invalid entry on itself only (to report it).
func (p *caBundlePattern) Deps(c controller.Cache) map[string][]controller.Ref {
	good, bad := p.entries(c)
	deps := make(map[string][]controller.Ref, len(good)+len(bad))
	for name, src := range good {
		deps[name] = []controller.Ref{controller.Named(p.apiservices, "", name), p.sourceRef(src)}
	}
	for name := range bad {
		deps[name] = []controller.Ref{controller.Named(p.apiservices, "", name)}
	}
	return deps
}

func (p *caBundlePattern) Observe(c controller.Cache, name string) (caBundleObs, bool, error) {
	good, bad := p.entries(c)
	src, kept := good[name]
	obs := caBundleObs{name: name, src: src, recordErr: bad[name]}
	if !kept && obs.recordErr == nil {
		return obs, false, nil // no longer in the record
	}
	svcRef := controller.Named(p.apiservices, "", name)
	if !c.Synced(svcRef) {
		return obs, false, nil
	}
	obj, exists := c.Get(svcRef)
	if !exists {
		return obs, false, nil // nothing to keep until it exists; its creation is an event
	}
	obs.svc = obj.(*apiregv1.APIService)
	if obs.recordErr != nil {
		return obs, true, nil //nolint:nilerr // the record's error is carried in obs and judged by Desired
	}
	ref := p.sourceRef(src)
	if !c.Synced(ref) {
		if obs.sourceErr = c.Err(ref); obs.sourceErr == nil {
			return obs, false, nil // the first list enqueues it again
		}
		return obs, true, nil
	}
	if o, ok := c.Get(ref); ok {
		var data map[string][]byte
		switch s := o.(type) {
		case *corev1.Secret:
			data = s.Data
		case *corev1.ConfigMap:
			data = cabundle.ConfigMapData(s)
		}
		obs.bundle = data[src.Key]
	}
	return obs, true, nil
}

func (p *caBundlePattern) Desired(obs caBundleObs) (*cabundle.Desired, error) {
	problem := func(reason, metric string, err error) error {
		return &controller.Problem{Reason: reason, Metric: metric, Err: err}
	}
	switch {
	case obs.recordErr != nil:
		return nil, problem(ReasonInvalidRecord, "invalid_record", fmt.Errorf("the reconciler's record names this APIService with an invalid entry (%w); the live caBundle is left as it is: apply kmshealth_reconciler again", obs.recordErr))
	case obs.sourceErr != nil:
		return nil, problem(ReasonSourceForbidden, "source_unreadable", fmt.Errorf("cannot read %s (%w); the live caBundle is left as it is: add the source to kmshealth_reconciler.ca_bundles so its Role grants it", obs.src, obs.sourceErr))
	case obs.bundle == nil:
		return nil, problem(ReasonSourceMissing, "source_missing", fmt.Errorf("%s %s/%s or its key %q does not exist; the live caBundle is left as it is", obs.src.Kind, obs.src.Namespace, obs.src.Name, obs.src.Key))
	}
	info, findings := cabundle.Inspect(obs.bundle, time.Now())
	if cabundle.HasErrors(findings) {
		return nil, problem(ReasonSourceInvalid, "source_invalid", fmt.Errorf("%s holds no valid CA bundle (%w); the live caBundle is left as it is", obs.src, cabundle.FirstError(findings)))
	}
	if err := cabundle.CheckAPIService(obs.svc); err != nil {
		return nil, problem(ReasonNotApplicable, "not_applicable", err)
	}
	return cabundle.DesiredFor(obs.svc, info.Canonical, obs.src), nil
}

func (p *caBundlePattern) InSync(obs caBundleObs, want *cabundle.Desired) bool {
	return cabundle.InSync(obs.svc, want, p.fieldManager)
}

// Apply forces: the record says the field is ours, so the write takes it
// back from whoever overwrote it.
func (p *caBundlePattern) Apply(ctx context.Context, obs caBundleObs, want *cabundle.Desired) (controller.Change, error) {
	_, err := cabundle.Apply(ctx, p.client, want, cabundle.ApplyOptions{FieldManager: p.fieldManager, Force: true})
	if errors.Is(err, cabundle.ErrGone) {
		return controller.Change{}, fmt.Errorf("%w: %w", controller.ErrGone, err)
	}
	if err != nil {
		return controller.Change{}, err
	}
	return controller.Change{
		Reason: ReasonRestored,
		Action: "Restore",
		Note:   fmt.Sprintf("Restored spec.caBundle from %s (sha256 %.16s)", obs.src, cabundle.Fingerprint(want.Spec.CABundle)),
	}, nil
}

// NotAfter: the earliest expiry in the kept caBundle (controller.Expirer).
func (p *caBundlePattern) NotAfter(want *cabundle.Desired) time.Time {
	info, _ := cabundle.Inspect(want.Spec.CABundle, time.Time{})
	return info.NotAfter
}

func (p *caBundlePattern) Subject(obs caBundleObs) runtime.Object {
	if obs.svc == nil {
		return nil
	}
	return obs.svc
}

// trimAPIService keeps of an APIService what the pattern reads: its name,
// UID and resourceVersion, the source annotation, manager's own apply
// entries of managedFields (whose ownership InSync checks) and its spec;
// no status, labels, other annotations or other managers' entries. Every
// APIService of the cluster is cached, kept or not.
func trimAPIService(manager string) func(any) any {
	return func(obj any) any {
		svc, ok := obj.(*apiregv1.APIService)
		if !ok {
			return obj
		}
		trimMeta(&svc.ObjectMeta, manager)
		svc.Status = apiregv1.APIServiceStatus{}
		return svc
	}
}

// trimMeta keeps of m what the caBundle patterns read: identity, the
// source annotation and manager's apply entries of managedFields.
func trimMeta(m *metav1.ObjectMeta, manager string) {
	*m = metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		Annotations:   keepAnnotation(m.Annotations, cabundle.SourceAnnotation),
		ManagedFields: keepApplier(m.ManagedFields, manager),
	}
}

func keepAnnotation(in map[string]string, key string) map[string]string {
	v, ok := in[key]
	if !ok {
		return nil
	}
	return map[string]string{key: v}
}

func keepApplier(in []metav1.ManagedFieldsEntry, manager string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range in {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply {
			out = append(out, e)
		}
	}
	return out
}
