package provider

import (
	"context"
	"errors"

	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
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
func startInlineRead(ctx context.Context, core kubernetes.Interface, reader *cabundle.InlineReader, inline, imported bool, src cabundle.Source) *inlineRead {
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
func heldIn(ctx context.Context, core kubernetes.Interface, ahead *inlineRead, src cabundle.Source) (string, error) {
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
