package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// bundleModel is what every caBundle resource's model holds about the
// bundle rather than the object it goes into: where it comes from
// (source or inline ca_bundle), how it is written (field_manager,
// force_conflicts), and the computed attributes that describe the live
// bytes. The resources embed it by value, as the framework requires; the
// attributes stay top-level in the schema.
type bundleModel struct {
	CABundle          types.String `tfsdk:"ca_bundle"`
	Source            *sourceModel `tfsdk:"source"`
	BundleNamespace   types.String `tfsdk:"bundle_namespace"`
	FieldManager      types.String `tfsdk:"field_manager"`
	ForceConflicts    types.Bool   `tfsdk:"force_conflicts"`
	FingerprintSHA256 types.String `tfsdk:"fingerprint_sha256"`
	CertificateCount  types.Int64  `tfsdk:"certificate_count"`
	NotAfter          types.String `tfsdk:"not_after"`
	Certificates      types.List   `tfsdk:"certificates"`
	CABundleSource    types.String `tfsdk:"ca_bundle_source"`
}

// certificateType is one element of `certificates`.
var certificateType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"subject": types.StringType, "issuer": types.StringType, "not_after": types.StringType, "sha256_fingerprint": types.StringType,
}}

type sourceModel struct {
	Kind      types.String `tfsdk:"kind"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
	Key       types.String `tfsdk:"key"`
}

// equal reports whether s and o are both absent or hold the same values.
func (s *sourceModel) equal(o *sourceModel) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Kind.Equal(o.Kind) && s.Namespace.Equal(o.Namespace) && s.Name.Equal(o.Name) && s.Key.Equal(o.Key)
}

func (m *bundleModel) inline() bool { return m.Source == nil }

// equal reports whether m and o hold the same values, field by field.
func (m *bundleModel) equal(o *bundleModel) bool {
	return m.CABundle.Equal(o.CABundle) && m.Source.equal(o.Source) && m.BundleNamespace.Equal(o.BundleNamespace) &&
		m.FieldManager.Equal(o.FieldManager) && m.ForceConflicts.Equal(o.ForceConflicts) &&
		m.FingerprintSHA256.Equal(o.FingerprintSHA256) && m.CertificateCount.Equal(o.CertificateCount) &&
		m.NotAfter.Equal(o.NotAfter) && m.Certificates.Equal(o.Certificates) && m.CABundleSource.Equal(o.CABundleSource)
}

// sourceFor is the authoritative object: the user's source, or the inline
// ConfigMap inlineName (the name the resource derives from its target).
func (m *bundleModel) sourceFor(inlineName string) cabundle.Source {
	if m.inline() {
		return cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: m.BundleNamespace.ValueString(), Name: inlineName, Key: cabundle.InlineKey}
	}
	return cabundle.Source{
		Kind: m.Source.Kind.ValueString(), Namespace: m.Source.Namespace.ValueString(),
		Name: m.Source.Name.ValueString(), Key: m.Source.Key.ValueString(),
	}
}

// sourceKnownFor reports whether sourceFor is known at plan time;
// targetKnown is whether the attributes that name the inline ConfigMap
// are.
func (m *bundleModel) sourceKnownFor(targetKnown bool) bool {
	if m.inline() {
		return !m.BundleNamespace.IsUnknown() && targetKnown
	}
	return !m.Source.Kind.IsUnknown() && !m.Source.Namespace.IsUnknown() && !m.Source.Name.IsUnknown() && !m.Source.Key.IsUnknown()
}

// setBundle fills the computed attributes that describe a bundle.
func (m *bundleModel) setBundle(bundle []byte, now time.Time) {
	m.FingerprintSHA256, m.CertificateCount, m.NotAfter, m.Certificates = describeBundle(bundle, now)
}

// setBundleFrom fills the computed attributes that describe bundle, taking
// them from prior when prior already describes the same bytes (the same
// fingerprint): a no-op plan then parses no certificate for them.
func (m *bundleModel) setBundleFrom(prior *bundleModel, bundle []byte, now time.Time) {
	if !m.keepDescription(prior, bundle) {
		m.setBundle(bundle, now)
	}
}

// keepDescription copies the computed attributes from prior (nil on
// create) when they describe bundle, and reports whether it did.
func (m *bundleModel) keepDescription(prior *bundleModel, bundle []byte) bool {
	if prior == nil || !prior.describes(bundle) {
		return false
	}
	m.FingerprintSHA256, m.CertificateCount, m.NotAfter, m.Certificates = prior.FingerprintSHA256, prior.CertificateCount, prior.NotAfter, prior.Certificates
	return true
}

// describes reports whether the four computed attributes are known and
// were made by describeBundle from bundle: they are set together, always,
// so the fingerprint of the same bytes vouches for all four.
func (m *bundleModel) describes(bundle []byte) bool {
	for _, v := range []attr.Value{m.FingerprintSHA256, m.CertificateCount, m.NotAfter, m.Certificates} {
		if v.IsNull() || v.IsUnknown() {
			return false
		}
	}
	return m.FingerprintSHA256.ValueString() == cabundle.Fingerprint(bundle)
}

// describeBundle is the computed attributes of every caBundle resource
// that describe a bundle: fingerprint_sha256, certificate_count,
// not_after and certificates.
func describeBundle(bundle []byte, now time.Time) (fingerprint types.String, count types.Int64, notAfter types.String, certificates types.List) {
	info, _ := cabundle.Inspect(bundle, now)
	certs := make([]attr.Value, len(info.Certificates))
	for i, c := range info.Certificates {
		certs[i] = types.ObjectValueMust(certificateType.AttrTypes, map[string]attr.Value{
			"subject": types.StringValue(c.Subject), "issuer": types.StringValue(c.Issuer),
			"not_after": types.StringValue(c.NotAfter.UTC().Format(time.RFC3339)), "sha256_fingerprint": types.StringValue(c.SHA256Fingerprint),
		})
	}
	notAfter = types.StringValue("")
	if !info.NotAfter.IsZero() {
		notAfter = types.StringValue(info.NotAfter.UTC().Format(time.RFC3339))
	}
	return types.StringValue(info.FingerprintSHA256), types.Int64Value(int64(info.CertificateCount)), notAfter, types.ListValueMust(certificateType, certs)
}

func (m *bundleModel) setBundleUnknown() {
	m.Certificates = types.ListUnknown(certificateType)
	m.FingerprintSHA256 = types.StringUnknown()
	m.CertificateCount = types.Int64Unknown()
	m.NotAfter = types.StringUnknown()
}

// options is how a write applies the bundle. Once the resource manages
// the bundle (updating), an out-of-band overwrite is drift to correct, not
// a conflict to report: force_conflicts only decides whether a create may
// take the field from another manager.
func (m *bundleModel) options(updating bool) cabundle.ApplyOptions {
	return cabundle.ApplyOptions{FieldManager: m.FieldManager.ValueString(), Force: m.ForceConflicts.ValueBool() || updating}
}

// The steps below are those of a caBundle resource's write that are about
// the bundle, whatever object it goes into: the resource checks its
// target, then calls bundleToWrite, dry-runs its apply, storeInline,
// applies, and cleanUpAfter.

// bundleToWrite returns the bytes the plan applies: the inline ca_bundle
// (checked at plan time), or src's bytes read now and checked, every
// finding reported on `source`. ok is false when diags holds why not.
func (m *bundleModel) bundleToWrite(ctx context.Context, c *Clients, core clientset.Core, src cabundle.Source, now time.Time, diags *diag.Diagnostics) (bundle []byte, ok bool) {
	if m.inline() {
		return []byte(m.CABundle.ValueString()), true
	}
	bundle, err := cabundle.ReadSource(ctx, core, src)
	switch {
	case errors.Is(err, cabundle.ErrSourceMissing):
		diags.AddAttributeError(path.Root("source"), "CA bundle source unavailable", err.Error())
		return nil, false
	case err != nil:
		c.addAPIError(diags, sourceRequest("Cannot read CA bundle source", "get", src, path.Root("source")), err)
		return nil, false
	}
	_, findings := cabundle.Inspect(bundle, now)
	addFindings(diags, path.Root("source"), findings)
	return bundle, !diags.HasError()
}

// storeInline, for an inline plan, writes the inline ConfigMap src through
// ensure and reports whether this write created it (so that a failed
// apply after it deletes it again, leaving nothing half-written); for a
// plan with a source it does nothing. ok is false when diags holds why
// not.
func (m *bundleModel) storeInline(ctx context.Context, c *Clients, core clientset.Core, src cabundle.Source, ensure func() error, diags *diag.Diagnostics) (created, ok bool) {
	if !m.inline() {
		return false, true
	}
	_, err := core.CoreV1().ConfigMaps(src.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.addAPIError(diags, sourceRequest("Cannot read inline CA bundle ConfigMap", "get", src, path.Root("ca_bundle")), err)
		return false, false
	}
	existed := err == nil
	if err := ensure(); err != nil {
		// Plain errors (a foreign ConfigMap of that name) come out as they are.
		c.addAPIError(diags, sourceRequest("Cannot store inline CA bundle", "", src, path.Root("ca_bundle")), err)
		return false, false
	}
	return !existed, true
}

// cleanUpAfter, once an update from prior (nil on create) has applied m,
// releases prior's field manager when it changed and deletes prior's
// inline ConfigMap (in its bundle_namespace) when the bundle is no longer
// inline. A failure is a warning: the write itself has succeeded.
func (m *bundleModel) cleanUpAfter(prior *bundleModel, release func(manager string) error, deleteInline func(namespace string) error, diags *diag.Diagnostics) {
	if prior == nil {
		return
	}
	if old := prior.FieldManager.ValueString(); old != m.FieldManager.ValueString() {
		if err := release(old); err != nil {
			diags.AddWarning("Previous field manager not released", fmt.Sprintf("release field manager %q: %v", old, err))
		}
	}
	if prior.inline() && !m.inline() {
		if err := deleteInline(prior.BundleNamespace.ValueString()); err != nil {
			diags.AddWarning("Inline CA bundle ConfigMap not deleted", err.Error())
		}
	}
}

// The steps below are those of a caBundle resource's Read that are about
// the bundle.

// adoptSource sets, on import, where the bundle comes from, given src,
// the source the kept object's annotation names: the inline ca_bundle when
// src is our inline ConfigMap inlineName (labelled as ours), else src as
// the user's source. A failed read of that ConfigMap makes it a source.
func (m *bundleModel) adoptSource(ctx context.Context, core clientset.Core, src cabundle.Source, inlineName string) {
	m.BundleNamespace = types.StringValue(cabundle.DefaultBundleNamespace)
	if src.Kind == cabundle.KindConfigMap && src.Name == inlineName && src.Key == cabundle.InlineKey {
		cm, err := core.CoreV1().ConfigMaps(src.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
		if err == nil && cm.Labels[cabundle.ManagedByLabel] == cabundle.ManagedByValue {
			m.BundleNamespace = types.StringValue(src.Namespace)
			m.CABundle = types.StringValue(cm.Data[cabundle.InlineKey])
			return
		}
	}
	m.Source = &sourceModel{
		Kind: types.StringValue(src.Kind), Namespace: types.StringValue(src.Namespace),
		Name: types.StringValue(src.Name), Key: types.StringValue(src.Key),
	}
}

// setDefaults fills the optional attributes a state can lack (after an
// import) with the defaults the schema gives them.
func (m *bundleModel) setDefaults() {
	if m.FieldManager.IsNull() {
		m.FieldManager = types.StringValue(cabundle.DefaultFieldManager)
	}
	if m.ForceConflicts.IsNull() {
		m.ForceConflicts = types.BoolValue(false)
	}
	if m.BundleNamespace.IsNull() {
		m.BundleNamespace = types.StringValue(cabundle.DefaultBundleNamespace)
	}
}

// readInlineDrift, for an inline bundle, reads our inline ConfigMap src
// (through ahead, the read started beside the kept object's) and sets
// ca_bundle to whichever of live (the kept object's bundle) and the
// ConfigMap's drifted from applied, the canonical form of the last
// applied ca_bundle, so that either shows as a diff. Equivalent is not
// drift: the live bundle is applied's certificates re-encoded. It does
// nothing for a bundle from a source; false means diags holds why not.
func (m *bundleModel) readInlineDrift(ctx context.Context, c *Clients, core clientset.Core, ahead *inlineRead, src cabundle.Source, live, applied []byte, diags *diag.Diagnostics) bool {
	if !m.inline() {
		return true
	}
	held, err := heldIn(ctx, core, ahead, src)
	if err != nil {
		c.addAPIError(diags, sourceRequest("Cannot read inline CA bundle ConfigMap", "get", src, path.Root("ca_bundle")), err)
		return false
	}
	switch {
	case !cabundle.Equivalent(live, applied):
		m.CABundle = types.StringValue(string(live))
	case !cabundle.Equivalent([]byte(held), applied):
		m.CABundle = types.StringValue(held)
	}
	return true
}
