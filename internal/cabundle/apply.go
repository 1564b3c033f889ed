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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// Names shared with the reconciler and the docs.
const (
	// SourceAnnotation on an APIService names the Source (Kind/ns/name/key)
	// its caBundle must equal; the reconciler watches APIServices that carry it.
	SourceAnnotation = "kmshealth.io/ca-bundle-source"
	// DefaultFieldManager owns every caBundle kmshealth writes and
	// SourceAnnotation, in the resources and the reconciler alike, unless
	// a resource's field_manager names another (then the reconciler's too).
	DefaultFieldManager = kube.FieldManager
	// ManagedByLabel/ManagedByValue mark objects kmshealth created and may delete.
	ManagedByLabel = kube.ManagedByLabel
	ManagedByValue = kube.ManagedByValue
	// BundleForAnnotation on an inline ConfigMap names the APIService it
	// feeds (an annotation: APIService names outgrow label values).
	BundleForAnnotation = "kmshealth.io/ca-bundle-for"
	// InlineLabel = InlineLabelValue marks an inline ConfigMap, so that a
	// refresh can LIST a namespace's inline ConfigMaps at once
	// (InlineReader).
	InlineLabel      = "kmshealth.io/ca-bundle-inline"
	InlineLabelValue = "true"
	// InlineKey is the key of the bundle in an inline ConfigMap.
	InlineKey = "ca.crt"
	// DefaultBundleNamespace holds inline ConfigMaps unless told otherwise.
	DefaultBundleNamespace = "kube-system"
)

// ErrConflict is wrapped when another field manager owns spec.caBundle.
var ErrConflict = errors.New("spec.caBundle is owned by another field manager")

// InlineConfigMapName is the ConfigMap that holds an inline bundle for the
// APIService.
func InlineConfigMapName(apiservice string) string { return "kmshealth-cabundle-" + apiservice }

// Get reads the APIService, turning NotFound into an error that says what
// to do.
func Get(ctx context.Context, c apiregclient.APIServicesGetter, name string) (*apiregv1.APIService, error) {
	svc, err := c.APIServices().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("APIService %q not found: create it (usually with the aggregated API's installation) before managing its caBundle: %w", name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read APIService %q: %w", name, err)
	}
	return svc, nil
}

// CheckAPIService rejects APIServices that cannot carry a caBundle, with
// the message the API server's validation would otherwise give less clearly.
func CheckAPIService(svc *apiregv1.APIService) error {
	if svc.Spec.Service == nil {
		return fmt.Errorf("APIService %q has no spec.service: it is served by kube-apiserver itself, and local APIServices may not have a caBundle; point apiservice_name at an aggregated API", svc.Name)
	}
	if svc.Spec.InsecureSkipTLSVerify {
		return fmt.Errorf("APIService %q has spec.insecureSkipTLSVerify: true, which the API server does not allow together with a caBundle; set it to false in the APIService's own manifest first (that is the point of a caBundle)", svc.Name)
	}
	return nil
}

// Owned reports whether manager's apply entry in managedFields owns
// spec.caBundle and the SourceAnnotation.
func Owned(svc *apiregv1.APIService, manager string) (bundle, annotation bool) {
	return slices.Contains(BundleOwners(svc), manager), slices.Contains(appliers(svc, "f:metadata", "f:annotations", "f:"+SourceAnnotation), manager)
}

// BundleOwners are the field managers that own spec.caBundle by
// server-side apply.
func BundleOwners(svc *apiregv1.APIService) []string { return appliers(svc, "f:spec", "f:caBundle") }

// appliers are the managers whose server-side apply owns the field at path.
func appliers(obj metav1.Object, path ...string) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) == nil && has(fields, path...) {
			out = append(out, mf.Manager)
		}
	}
	return out
}

func has(m map[string]any, path ...string) bool {
	for _, p := range path {
		v, ok := m[p]
		if !ok {
			return false
		}
		m, _ = v.(map[string]any)
	}
	return true
}

// ApplyOptions control a server-side apply.
type ApplyOptions struct {
	FieldManager string
	Force        bool // take ownership from other managers
	DryRun       bool // let the API server check everything, write nothing
}

// Desired is the apply configuration that makes an APIService carry
// bundle and the annotation naming src: only those two fields, and the
// UID of live as a precondition, so a deleted APIService is never
// re-created by the write. The provider resource and the reconciler both
// write exactly this.
type Desired struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   applyMeta         `json:"metadata"`
	Spec       *apiServiceFields `json:"spec,omitempty"`
}

type applyMeta struct {
	Name        string            `json:"name"`
	UID         types.UID         `json:"uid,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type apiServiceFields struct {
	CABundle []byte `json:"caBundle"`
}

// DesiredFor returns the desired apply configuration of live.
func DesiredFor(live *apiregv1.APIService, bundle []byte, src Source) *Desired {
	return &Desired{
		APIVersion: apiregv1.SchemeGroupVersion.String(),
		Kind:       "APIService",
		Metadata:   applyMeta{Name: live.Name, UID: live.UID, Annotations: map[string]string{SourceAnnotation: src.String()}},
		Spec:       &apiServiceFields{CABundle: bundle},
	}
}

// InSync reports whether live already carries what want applies, both
// fields owned by manager: then there is nothing to write.
func InSync(live *apiregv1.APIService, want *Desired, manager string) bool {
	if want.Spec == nil || !bytes.Equal(live.Spec.CABundle, want.Spec.CABundle) ||
		live.Annotations[SourceAnnotation] != want.Metadata.Annotations[SourceAnnotation] {
		return false
	}
	ownsBundle, ownsAnnotation := Owned(live, manager)
	return ownsBundle && ownsAnnotation
}

// Ensure makes live carry bundle, as its certificates alone (Canonical,
// what the reconciler writes too), and the annotation naming src, by
// server-side apply of only those two fields, and writes nothing when they
// are already there and ours. It returns the resulting object and whether
// it wrote. live is a fresh GET (provider) or an informer's copy (reconciler).
func Ensure(ctx context.Context, c apiregclient.APIServicesGetter, live *apiregv1.APIService, bundle []byte, src Source, opts ApplyOptions) (*apiregv1.APIService, bool, error) {
	if err := CheckAPIService(live); err != nil {
		return nil, false, err
	}
	info, findings := Inspect(bundle, time.Time{})
	if info.Canonical == nil {
		return nil, false, fmt.Errorf("the CA bundle is not certificates alone: %w", FirstError(findings))
	}
	want := DesiredFor(live, info.Canonical, src)
	if InSync(live, want, opts.FieldManager) {
		return live, false, nil
	}
	out, err := Apply(ctx, c, want, opts)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// Release gives up manager's ownership of spec.caBundle and the annotation.
// Fields nobody else owns disappear from the live object; nothing else is
// touched. A missing APIService is not an error.
func Release(ctx context.Context, c apiregclient.APIServicesGetter, name, manager string) error {
	live, err := c.APIServices().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read APIService %q: %w", name, err)
	}
	if b, a := Owned(live, manager); !b && !a {
		return nil
	}
	body := &Desired{
		APIVersion: apiregv1.SchemeGroupVersion.String(),
		Kind:       "APIService",
		Metadata:   applyMeta{Name: name, UID: live.UID},
	}
	_, err = Apply(ctx, c, body, ApplyOptions{FieldManager: manager})
	if errors.Is(err, ErrGone) {
		return nil
	}
	return err
}

// ErrGone is wrapped when the APIService a write was for no longer exists
// (deleted, or deleted and re-created with a new UID): nothing was written.
var ErrGone = errors.New("the APIService is gone")

// Apply server-side applies want. A failed UID precondition or a missing
// APIService wraps ErrGone; a field owned by another manager wraps
// ErrConflict.
func Apply(ctx context.Context, c apiregclient.APIServicesGetter, want *Desired, opts ApplyOptions) (*apiregv1.APIService, error) {
	data, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	name := want.Metadata.Name
	out, err := c.APIServices().Patch(ctx, name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: opts.FieldManager, Force: &opts.Force, DryRun: dryRun(opts.DryRun)})
	if err != nil {
		return nil, applyError(KindAPIService, name, opts.FieldManager, err)
	}
	return out, nil
}

// applyError classifies a failed server-side apply of the kind's object
// name: gone (ErrGone), a field owned by another manager (ErrConflict), or
// anything else.
func applyError(kind, name, manager string, err error) error {
	switch {
	case kube.Replaced(err):
		// The object we read is gone; the UID precondition kept the write
		// from re-creating it (NotFound, Conflict) or rewriting its
		// successor (Invalid metadata.uid).
		return fmt.Errorf("%w: %s %q was deleted while being updated: %w", ErrGone, kind, name, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w on %s %q: %w; set force_conflicts = true to take ownership, or stop the other writer", ErrConflict, kind, name, err)
	}
	return fmt.Errorf("server-side apply of %s %q as %q: %w", kind, name, manager, err)
}

func dryRun(on bool) []string {
	if on {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// EnsureInlineConfigMap writes an inline bundle into the ConfigMap kmshealth
// owns for the APIService and returns it as the Source. It refuses to take
// over a ConfigMap of that name that kmshealth did not create.
func EnsureInlineConfigMap(ctx context.Context, core clientset.Core, namespace, apiservice string, bundle []byte, manager string) (Source, error) {
	return ensureInline(ctx, core, namespace, InlineConfigMapName(apiservice), apiservice, "APIService name", bundle, manager)
}

// ensureInline writes bundle into the inline ConfigMap name, annotated
// with the target (owner) it feeds; what names the target in errors.
func ensureInline(ctx context.Context, core clientset.Core, namespace, name, owner, what string, bundle []byte, manager string) (Source, error) {
	src := Source{Kind: KindConfigMap, Namespace: namespace, Name: name, Key: InlineKey}
	cms := core.CoreV1().ConfigMaps(namespace)
	existing, err := cms.Get(ctx, src.Name, metav1.GetOptions{})
	switch {
	case err == nil && existing.Labels[ManagedByLabel] != ManagedByValue:
		return src, fmt.Errorf("ConfigMap %s/%s already exists and is not managed by kmshealth (no %s=%s label); kmshealth will not overwrite it: rename or delete it, or point source at it instead of ca_bundle",
			namespace, src.Name, ManagedByLabel, ManagedByValue)
	case err != nil && !apierrors.IsNotFound(err):
		return src, fmt.Errorf("read ConfigMap %s/%s: %w", namespace, src.Name, err)
	case err == nil && bytes.Equal([]byte(existing.Data[InlineKey]), bundle) && existing.Annotations[BundleForAnnotation] == owner &&
		existing.Labels[InlineLabel] == InlineLabelValue:
		return src, nil
	}
	if msgs := validation.IsDNS1123Subdomain(src.Name); len(msgs) > 0 {
		return src, fmt.Errorf("%s %q is too long for an inline ca_bundle (ConfigMap name %q: %s); keep the bundle in a Secret or ConfigMap and use source instead",
			what, owner, src.Name, strings.Join(msgs, "; "))
	}
	ac := corev1ac.ConfigMap(src.Name, namespace).
		WithLabels(map[string]string{ManagedByLabel: ManagedByValue, InlineLabel: InlineLabelValue}).
		WithAnnotations(map[string]string{BundleForAnnotation: owner}).
		WithData(map[string]string{InlineKey: string(bundle)})
	if _, err := cms.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
		return src, fmt.Errorf("write ConfigMap %s/%s: %w", namespace, src.Name, err)
	}
	return src, nil
}

// DeleteInlineConfigMap deletes the inline ConfigMap if kmshealth created it.
func DeleteInlineConfigMap(ctx context.Context, core clientset.Core, namespace, apiservice string) error {
	return deleteInline(ctx, core, namespace, InlineConfigMapName(apiservice))
}

func deleteInline(ctx context.Context, core clientset.Core, namespace, name string) error {
	cms := core.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read ConfigMap %s/%s: %w", namespace, name, err)
	}
	if cm.Labels[ManagedByLabel] != ManagedByValue {
		return nil // not ours: leave it alone
	}
	err = cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ConfigMap %s/%s: %w", namespace, name, err)
	}
	return nil
}
