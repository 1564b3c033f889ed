package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// inlineRead is the read of an inline bundle's ConfigMap that a caBundle
// resource's Read starts before it GETs the kept object, so that a refresh
// costs one round trip for both; the read goes through the process's
// cabundle.InlineReader, so the refreshes of one plan share one LIST of
// the namespace's inline ConfigMaps (ARCHITECTURE.md, "Refresh of an
// inline bundle"). nil when there is nothing to read ahead: a bundle from the
// user's own source (not read on refresh), or an import, which learns its
// source from the kept object.
type inlineRead struct {
	src  cabundle.Source
	wait func() ([]byte, error)
}

// startInlineRead reads src ahead when the state holds an inline bundle
// (inline, with an applied value). namespace defaults as Read defaults
// bundle_namespace.
func startInlineRead(ctx context.Context, core clientset.Core, reader *cabundle.InlineReader, inline, imported bool, src cabundle.Source) *inlineRead {
	if !inline || imported || core == nil {
		return nil
	}
	if src.Namespace == "" {
		src.Namespace = cabundle.DefaultBundleNamespace
	}
	return &inlineRead{src: src, wait: reader.ReadAhead(ctx, core, src)}
}

// heldIn returns the bundle our inline ConfigMap src holds, "" when the
// ConfigMap or its key is missing: the read started ahead when it was for
// src, else a read now.
func heldIn(ctx context.Context, core clientset.Core, ahead *inlineRead, src cabundle.Source) (string, error) {
	var held []byte
	var err error
	if ahead != nil && ahead.src == src {
		held, err = ahead.wait()
	} else {
		held, err = cabundle.ReadSource(ctx, core, src)
	}
	if errors.Is(err, cabundle.ErrSourceMissing) {
		return "", nil
	}
	return string(held), err
}

// unchangedInlinePlan reports whether ModifyPlan of an inline caBundle
// resource has nothing to change: the proposed plan is the prior state
// (nothing configured changed, every computed attribute copied from the
// state), the bundle is inline, and what ModifyPlan would set already
// stands — id and ca_bundle_source as want derives them from the plan, and
// the four attributes that describe the bundle, made from the applied
// bundle's canonical form. It reads the raw values: decoding the plan and
// the state into the model struct and encoding the plan back is most of
// what ModifyPlan costs on a no-op plan (BENCHMARKS.md, "Where a no-op
// plan's provider CPU goes").
func unchangedInlinePlan(plan, state tftypes.Value, want func(vals map[string]tftypes.Value) (id, source string, ok bool)) bool {
	if plan.IsNull() || state.IsNull() || !plan.IsFullyKnown() || !plan.Equal(state) {
		return false
	}
	var vals map[string]tftypes.Value
	if err := plan.As(&vals); err != nil {
		return false
	}
	if src, ok := vals["source"]; !ok || !src.IsNull() {
		return false // a source: ModifyPlan reads it
	}
	for _, name := range []string{"certificate_count", "not_after", "certificates"} {
		if v, ok := vals[name]; !ok || v.IsNull() {
			return false
		}
	}
	id, source, ok := want(vals)
	if !ok {
		return false
	}
	gotID, okID := rawString(vals, "id")
	gotSource, okSource := rawString(vals, "ca_bundle_source")
	bundle, okBundle := rawString(vals, "ca_bundle")
	fingerprint, okFingerprint := rawString(vals, "fingerprint_sha256")
	return okID && okSource && okBundle && okFingerprint && gotID == id && gotSource == source &&
		fingerprint == cabundle.Fingerprint(cabundle.Canonical([]byte(bundle)))
}

// rawString is the string attribute name of an object's raw values;
// false when it is absent, null or not a string.
func rawString(vals map[string]tftypes.Value, name string) (string, bool) {
	var s string
	v, ok := vals[name]
	if !ok || v.IsNull() || v.As(&s) != nil {
		return "", false
	}
	return s, true
}
