package cabundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1ac "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// Kinds of objects a caBundle is injected into (cert-manager's cainjector
// keeps the same four).
const (
	KindAPIService                     = "APIService"
	KindValidatingWebhookConfiguration = "ValidatingWebhookConfiguration"
	KindMutatingWebhookConfiguration   = "MutatingWebhookConfiguration"
	KindCustomResourceDefinition       = "CustomResourceDefinition"
)

// Object is a live object of an injectable kind.
type Object interface {
	metav1.Object
	runtime.Object
}

// Injectable is one kind whose caBundle field(s) kmshealth owns: how to
// read an object, which caBundle fields ("slots") a target selects in
// it, what each holds, who owns it, and how to apply a configuration
// holding only those fields. Sources, bundle checks, comparison, apply and
// release are the same for every kind (Ensure, InSync, Release below).
type Injectable interface {
	// Kind is the object's kind, e.g. ValidatingWebhookConfiguration.
	Kind() string
	// Get reads the live object.
	Get(ctx context.Context, name string) (Object, error)
	// Slots are the caBundle fields of obj the selection names: the
	// webhooks' names for a webhook configuration (every webhook when
	// webhooks is empty), "" for the one field of the other kinds. An
	// object that cannot take a caBundle, or a named webhook it lacks, is
	// an error that says what to do.
	Slots(obj Object, webhooks []string) ([]string, error)
	// Bundle is the live caBundle of slot (nil when absent).
	Bundle(obj Object, slot string) []byte
	// bundlePath is slot's caBundle in managedFields (f:… / k:… steps).
	bundlePath(slot string) []string
	// apply server-side applies the annotations and bundle in slots, with
	// uid as a precondition, and nothing else; no slots and no
	// annotations releases everything the manager owned.
	apply(ctx context.Context, name string, uid types.UID, annotations map[string]string, slots []string, bundle []byte, opts ApplyOptions) (Object, error)
}

// Clients are the clients the injectables need.
type Clients struct {
	Core       clientset.Core
	Aggregator clientset.Aggregator
	Extensions clientset.Extensions
}

// Kinds are the injectable kinds, in the order the docs list them.
func Kinds() []string {
	return []string{KindAPIService, KindValidatingWebhookConfiguration, KindMutatingWebhookConfiguration, KindCustomResourceDefinition}
}

// WebhookKinds are the injectable kinds that kmshealth_webhook_cabundle
// manages (the APIService has its own resource).
func WebhookKinds() []string {
	return []string{KindValidatingWebhookConfiguration, KindMutatingWebhookConfiguration, KindCustomResourceDefinition}
}

// For is the Injectable of kind.
func For(kind string, c Clients) (Injectable, error) {
	switch kind {
	case KindAPIService:
		return apiServiceInjectable{c: c.Aggregator}, nil
	case KindValidatingWebhookConfiguration:
		return validatingInjectable{c: c.Core}, nil
	case KindMutatingWebhookConfiguration:
		return mutatingInjectable{c: c.Core}, nil
	case KindCustomResourceDefinition:
		return crdInjectable{c: c.Extensions}, nil
	}
	return nil, fmt.Errorf("kind %q: must be one of %s", kind, strings.Join(Kinds(), ", "))
}

// Target names the object whose caBundle(s) kmshealth keeps and, for a
// webhook configuration, which webhooks (none named: every webhook).
type Target struct {
	Kind     string
	Name     string
	Webhooks []string
}

// String is Kind/name, the import ID and the reconciler's key.
func (t Target) String() string { return t.Kind + "/" + t.Name }

// ParseTarget reads Kind/name.
func ParseTarget(v string) (Target, error) {
	kind, name, ok := strings.Cut(v, "/")
	if !ok || !slices.Contains(Kinds(), kind) || name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("%q: want <Kind>/<name> with Kind one of %s", v, strings.Join(Kinds(), ", "))
	}
	return Target{Kind: kind, Name: name}, nil
}

// kindShort names kind in inline ConfigMap names and record keys.
var kindShort = map[string]string{
	KindValidatingWebhookConfiguration: "validating",
	KindMutatingWebhookConfiguration:   "mutating",
	KindCustomResourceDefinition:       "crd",
}

// TargetInlineConfigMapName is the ConfigMap that holds an inline bundle
// for t: kmshealth-cabundle-<validating|mutating|crd>-<name>.
func TargetInlineConfigMapName(t Target) string {
	if t.Kind == KindAPIService {
		return InlineConfigMapName(t.Name)
	}
	return "kmshealth-cabundle-" + kindShort[t.Kind] + "-" + t.Name
}

// EnsureTargetInlineConfigMap is EnsureInlineConfigMap for any target.
func EnsureTargetInlineConfigMap(ctx context.Context, core clientset.Core, namespace string, t Target, bundle []byte, manager string) (Source, error) {
	return ensureInline(ctx, core, namespace, TargetInlineConfigMapName(t), t.String(), t.Kind+" name", bundle, manager)
}

// DeleteTargetInlineConfigMap is DeleteInlineConfigMap for any target.
func DeleteTargetInlineConfigMap(ctx context.Context, core clientset.Core, namespace string, t Target) error {
	return deleteInline(ctx, core, namespace, TargetInlineConfigMapName(t))
}

// Want is what a target's object must carry: bundle (certificates alone)
// in each slot and the annotation naming its source, on the object of UID.
type Want struct {
	Name   string
	UID    types.UID
	Slots  []string
	Bundle []byte
	Source Source
}

// WantFor computes the desired state of live from a bundle that already
// passed Inspect (canonical): the slots the selection names.
func WantFor(inj Injectable, live Object, webhooks []string, canonical []byte, src Source) (*Want, error) {
	slots, err := inj.Slots(live, webhooks)
	if err != nil {
		return nil, err
	}
	return &Want{Name: live.GetName(), UID: live.GetUID(), Slots: slots, Bundle: canonical, Source: src}, nil
}

// OwnedSlots are the slots of live whose caBundle manager owns by
// server-side apply.
func OwnedSlots(inj Injectable, live Object, manager string) []string {
	all, _ := inj.Slots(live, nil)
	var out []string
	for _, s := range all {
		if slices.Contains(appliers(live, inj.bundlePath(s)...), manager) {
			out = append(out, s)
		}
	}
	return out
}

// BundleOwnersOf are the managers that own slot's caBundle by apply.
func BundleOwnersOf(inj Injectable, live Object, slot string) []string {
	return appliers(live, inj.bundlePath(slot)...)
}

// InSyncWith reports whether live carries want, every field owned by
// manager and no other caBundle of live owned by manager: then there is
// nothing to write.
func InSyncWith(inj Injectable, live Object, want *Want, manager string) bool {
	if live.GetAnnotations()[SourceAnnotation] != want.Source.String() ||
		!slices.Contains(appliers(live, "f:metadata", "f:annotations", "f:"+SourceAnnotation), manager) {
		return false
	}
	for _, s := range want.Slots {
		if !bytes.Equal(inj.Bundle(live, s), want.Bundle) {
			return false
		}
	}
	owned := OwnedSlots(inj, live, manager)
	slices.Sort(owned)
	wanted := slices.Sorted(slices.Values(want.Slots))
	return slices.Equal(owned, wanted)
}

// ApplyWant writes want by server-side apply of only its fields.
func ApplyWant(ctx context.Context, inj Injectable, want *Want, opts ApplyOptions) (Object, error) {
	return inj.apply(ctx, want.Name, want.UID, map[string]string{SourceAnnotation: want.Source.String()}, want.Slots, want.Bundle, opts)
}

// EnsureTarget makes live carry bundle (as its certificates alone) in the
// caBundle fields t selects and the annotation naming src, by server-side
// apply of only those fields, and writes nothing when they are already
// there and ours. It returns the resulting object and whether it wrote.
func EnsureTarget(ctx context.Context, inj Injectable, live Object, t Target, bundle []byte, src Source, opts ApplyOptions) (Object, bool, error) {
	info, findings := Inspect(bundle, time.Time{})
	if info.Canonical == nil {
		return nil, false, fmt.Errorf("the CA bundle is not certificates alone: %w", FirstError(findings))
	}
	want, err := WantFor(inj, live, t.Webhooks, info.Canonical, src)
	if err != nil {
		return nil, false, err
	}
	if InSyncWith(inj, live, want, opts.FieldManager) {
		return live, false, nil
	}
	out, err := ApplyWant(ctx, inj, want, opts)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// GetTarget reads the target's object, turning NotFound into an error
// that says what to do.
func GetTarget(ctx context.Context, inj Injectable, name string) (Object, error) {
	obj, err := inj.Get(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s %q not found: create it (usually with the webhook's own installation) before managing its caBundle: %w", inj.Kind(), name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %q: %w", inj.Kind(), name, err)
	}
	return obj, nil
}

// ReleaseTarget gives up manager's ownership of every caBundle of the
// object and the annotation: fields nobody else owns disappear; nothing
// else is touched. A missing object is not an error.
func ReleaseTarget(ctx context.Context, inj Injectable, name, manager string) error {
	live, err := inj.Get(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %q: %w", inj.Kind(), name, err)
	}
	if len(OwnedSlots(inj, live, manager)) == 0 && !slices.Contains(appliers(live, "f:metadata", "f:annotations", "f:"+SourceAnnotation), manager) {
		return nil
	}
	_, err = inj.apply(ctx, name, live.GetUID(), nil, nil, nil, ApplyOptions{FieldManager: manager})
	if errors.Is(err, ErrGone) {
		return nil
	}
	return err
}

func applyOptions(o ApplyOptions) metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: o.FieldManager, Force: o.Force, DryRun: dryRun(o.DryRun)}
}

// missingWebhooks is the error for named webhooks obj lacks.
func missingWebhooks(kind, name string, have, want []string) error {
	var missing []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			missing = append(missing, w)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s %q has no webhook named %s (it has: %s): fix webhooks, or add the webhook to the configuration first",
		kind, name, strings.Join(quoted(missing), ", "), strings.Join(quoted(have), ", "))
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// webhookSlots selects webhooks among the names of a configuration.
func webhookSlots(kind, name string, have, webhooks []string) ([]string, error) {
	if len(have) == 0 {
		return nil, fmt.Errorf("%s %q has no webhooks, so there is no caBundle to keep: add its webhooks first", kind, name)
	}
	if len(webhooks) == 0 {
		return have, nil
	}
	if err := missingWebhooks(kind, name, have, webhooks); err != nil {
		return nil, err
	}
	return slices.Clone(webhooks), nil
}

// webhookBundlePath is a webhook's clientConfig.caBundle in managedFields:
// webhooks is a list map keyed by name.
func webhookBundlePath(slot string) []string {
	key, _ := json.Marshal(map[string]string{"name": slot})
	return []string{"f:webhooks", "k:" + string(key), "f:clientConfig", "f:caBundle"}
}

type validatingInjectable struct{ c clientset.Core }

func (validatingInjectable) Kind() string { return KindValidatingWebhookConfiguration }

func (i validatingInjectable) Get(ctx context.Context, name string) (Object, error) {
	return object(i.c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{}))
}

func (i validatingInjectable) Slots(obj Object, webhooks []string) ([]string, error) {
	o := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	var have []string
	for _, w := range o.Webhooks {
		have = append(have, w.Name)
	}
	return webhookSlots(i.Kind(), o.Name, have, webhooks)
}

func (validatingInjectable) Bundle(obj Object, slot string) []byte {
	for _, w := range obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks {
		if w.Name == slot {
			return w.ClientConfig.CABundle
		}
	}
	return nil
}

func (validatingInjectable) bundlePath(slot string) []string { return webhookBundlePath(slot) }

func (i validatingInjectable) apply(ctx context.Context, name string, uid types.UID, annotations map[string]string, slots []string, bundle []byte, opts ApplyOptions) (Object, error) {
	ac := admissionregistrationv1ac.ValidatingWebhookConfiguration(name).WithUID(uid)
	if len(annotations) > 0 {
		ac.WithAnnotations(annotations)
	}
	for _, s := range slots {
		ac.WithWebhooks(admissionregistrationv1ac.ValidatingWebhook().WithName(s).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(bundle...)))
	}
	out, err := i.c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Apply(ctx, ac, applyOptions(opts))
	if err != nil {
		return nil, applyError(i.Kind(), name, opts.FieldManager, err)
	}
	return out, nil
}

type mutatingInjectable struct{ c clientset.Core }

func (mutatingInjectable) Kind() string { return KindMutatingWebhookConfiguration }

func (i mutatingInjectable) Get(ctx context.Context, name string) (Object, error) {
	return object(i.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{}))
}

func (i mutatingInjectable) Slots(obj Object, webhooks []string) ([]string, error) {
	o := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	var have []string
	for _, w := range o.Webhooks {
		have = append(have, w.Name)
	}
	return webhookSlots(i.Kind(), o.Name, have, webhooks)
}

func (mutatingInjectable) Bundle(obj Object, slot string) []byte {
	for _, w := range obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
		if w.Name == slot {
			return w.ClientConfig.CABundle
		}
	}
	return nil
}

func (mutatingInjectable) bundlePath(slot string) []string { return webhookBundlePath(slot) }

func (i mutatingInjectable) apply(ctx context.Context, name string, uid types.UID, annotations map[string]string, slots []string, bundle []byte, opts ApplyOptions) (Object, error) {
	ac := admissionregistrationv1ac.MutatingWebhookConfiguration(name).WithUID(uid)
	if len(annotations) > 0 {
		ac.WithAnnotations(annotations)
	}
	for _, s := range slots {
		ac.WithWebhooks(admissionregistrationv1ac.MutatingWebhook().WithName(s).
			WithClientConfig(admissionregistrationv1ac.WebhookClientConfig().WithCABundle(bundle...)))
	}
	out, err := i.c.AdmissionregistrationV1().MutatingWebhookConfigurations().Apply(ctx, ac, applyOptions(opts))
	if err != nil {
		return nil, applyError(i.Kind(), name, opts.FieldManager, err)
	}
	return out, nil
}

type crdInjectable struct{ c clientset.Extensions }

func (crdInjectable) Kind() string { return KindCustomResourceDefinition }

func (i crdInjectable) Get(ctx context.Context, name string) (Object, error) {
	return object(i.c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{}))
}

// Slots: a CRD has one conversion webhook, used only with strategy Webhook
// (the API server forbids spec.conversion.webhook otherwise).
func (i crdInjectable) Slots(obj Object, webhooks []string) ([]string, error) {
	o := obj.(*apiextensionsv1.CustomResourceDefinition)
	if len(webhooks) > 0 {
		return nil, fmt.Errorf("CustomResourceDefinition %q has one conversion webhook and no named webhooks: remove webhooks", o.Name)
	}
	conv := o.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		strategy := apiextensionsv1.NoneConverter
		if conv != nil && conv.Strategy != "" {
			strategy = conv.Strategy
		}
		return nil, fmt.Errorf("CustomResourceDefinition %q has spec.conversion.strategy %q: a caBundle is only used by a conversion webhook; set spec.conversion.strategy: Webhook with its webhook.clientConfig in the CRD's own manifest first", o.Name, strategy)
	}
	return []string{""}, nil
}

func (crdInjectable) Bundle(obj Object, _ string) []byte {
	conv := obj.(*apiextensionsv1.CustomResourceDefinition).Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil
	}
	return conv.Webhook.ClientConfig.CABundle
}

func (crdInjectable) bundlePath(string) []string {
	return []string{"f:spec", "f:conversion", "f:webhook", "f:clientConfig", "f:caBundle"}
}

func (i crdInjectable) apply(ctx context.Context, name string, uid types.UID, annotations map[string]string, slots []string, bundle []byte, opts ApplyOptions) (Object, error) {
	ac := apiextensionsv1ac.CustomResourceDefinition(name).WithUID(uid)
	if len(annotations) > 0 {
		ac.WithAnnotations(annotations)
	}
	if len(slots) > 0 {
		ac.WithSpec(apiextensionsv1ac.CustomResourceDefinitionSpec().WithConversion(apiextensionsv1ac.CustomResourceConversion().
			WithWebhook(apiextensionsv1ac.WebhookConversion().WithClientConfig(apiextensionsv1ac.WebhookClientConfig().WithCABundle(bundle...)))))
	}
	out, err := i.c.ApiextensionsV1().CustomResourceDefinitions().Apply(ctx, ac, applyOptions(opts))
	if err != nil {
		return nil, applyError(i.Kind(), name, opts.FieldManager, err)
	}
	return out, nil
}

// apiServiceInjectable is the APIService in the same shape; its own
// functions (Ensure, InSync, Release) remain what the APIService resource
// and controller call.
type apiServiceInjectable struct{ c clientset.Aggregator }

func (apiServiceInjectable) Kind() string { return KindAPIService }

func (i apiServiceInjectable) Get(ctx context.Context, name string) (Object, error) {
	return object(i.c.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{}))
}

func (apiServiceInjectable) Slots(obj Object, webhooks []string) ([]string, error) {
	if len(webhooks) > 0 {
		return nil, fmt.Errorf("APIService %q has no webhooks: remove webhooks", obj.GetName())
	}
	if err := CheckAPIService(obj.(*apiregv1.APIService)); err != nil {
		return nil, err
	}
	return []string{""}, nil
}

func (apiServiceInjectable) Bundle(obj Object, _ string) []byte {
	return obj.(*apiregv1.APIService).Spec.CABundle
}

func (apiServiceInjectable) bundlePath(string) []string { return []string{"f:spec", "f:caBundle"} }

func (i apiServiceInjectable) apply(ctx context.Context, name string, uid types.UID, annotations map[string]string, slots []string, bundle []byte, opts ApplyOptions) (Object, error) {
	want := &Desired{
		APIVersion: "apiregistration.k8s.io/v1", Kind: KindAPIService,
		Metadata: applyMeta{Name: name, UID: uid, Annotations: annotations},
	}
	if len(slots) > 0 {
		want.Spec = &apiServiceFields{CABundle: bundle}
	}
	return object(Apply(ctx, i.c.ApiregistrationV1(), want, opts))
}

// object keeps a failed call's typed nil pointer out of the interface.
func object[T Object](obj T, err error) (Object, error) {
	if err != nil {
		return nil, err
	}
	return obj, nil
}
