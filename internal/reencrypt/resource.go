package reencrypt

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// DefaultResources is what a run rewrites when it is not told: Secrets,
// the one resource every KMS EncryptionConfiguration encrypts (the API does
// not expose the EncryptionConfiguration, so the cluster cannot be asked).
var DefaultResources = []string{"secrets"}

// ParseResource reads a resource as a run takes it: "secrets" (core group)
// or "<resource>.<group>" (e.g. "configmaps", "widgets.example.com"), the
// spelling of EncryptionConfiguration's resources list. Wildcards and
// versions are not resources of their own.
func ParseResource(s string) (schema.GroupResource, error) {
	if s == "" {
		return schema.GroupResource{}, fmt.Errorf("resource is empty: name a resource such as %q or %q", "secrets", "widgets.example.com")
	}
	if strings.Contains(s, "*") {
		return schema.GroupResource{}, fmt.Errorf("resource %q: wildcards are not rewritten, list each resource (e.g. %q)", s, "secrets")
	}
	gr := schema.ParseGroupResource(s)
	if errs := validation.IsDNS1123Label(gr.Resource); len(errs) > 0 {
		return schema.GroupResource{}, fmt.Errorf("resource %q: %q is not a resource name (lower-case plural, e.g. %q): %s",
			s, gr.Resource, "secrets", strings.Join(errs, "; "))
	}
	if gr.Group != "" {
		if errs := validation.IsDNS1123Subdomain(gr.Group); len(errs) > 0 {
			return schema.GroupResource{}, fmt.Errorf("resource %q: %q is not an API group (write <resource>.<group>, e.g. %q): %s",
				s, gr.Group, "widgets.example.com", strings.Join(errs, "; "))
		}
	}
	return gr, nil
}

// Resolved is a resource as the API server serves it.
type Resolved struct {
	Name       string // as requested: "secrets", "<resource>.<group>"
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// Resolve maps each requested resource to the version the API server
// prefers, by discovery: a resource it does not serve is an error that
// says so.
func Resolve(ctx context.Context, disc discovery.DiscoveryInterface, names []string) ([]Resolved, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	out := make([]Resolved, 0, len(names))
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		gr, err := ParseResource(n)
		if err != nil {
			return nil, err
		}
		gvr, err := mapper.ResourceFor(gr.WithVersion(""))
		if meta.IsNoMatchError(err) {
			return nil, &UnservedError{Resource: n, Err: err}
		}
		if err != nil {
			return nil, fmt.Errorf("resource %q: discovery: %w", n, err)
		}
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			return nil, fmt.Errorf("resource %q: find its kind: %w", n, err)
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("resource %q: find its scope: %w", n, err)
		}
		out = append(out, Resolved{Name: n, GVR: gvr, Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace})
	}
	return out, nil
}

// UnservedError says a requested resource is not served by the API server.
type UnservedError struct {
	Resource string
	Err      error
}

func (e *UnservedError) Error() string {
	return fmt.Sprintf("resource %q: the API server does not serve it (%v); list only resources the cluster has, as its EncryptionConfiguration names them",
		e.Resource, e.Err)
}

func (e *UnservedError) Unwrap() error { return e.Err }

// Planned is what a run would rewrite of one resource.
type Planned struct {
	Resource string
	GVR      schema.GroupVersionResource
	Objects  int64 // -1: the API server does not say
}

// Plan resolves the resources and counts their objects, writing nothing:
// what a plan shows.
func Plan(ctx context.Context, cfg *rest.Config, resources []string) ([]Planned, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("re-encryption client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("re-encryption client: %w", err)
	}
	resolved, err := Resolve(ctx, disc, resources)
	if err != nil {
		return nil, err
	}
	out := make([]Planned, 0, len(resolved))
	for _, r := range resolved {
		n, err := Count(ctx, dyn, r.GVR)
		if err != nil {
			return nil, err
		}
		out = append(out, Planned{Resource: r.Name, GVR: r.GVR, Objects: n})
	}
	return out, nil
}

// Count is how many objects of the resource exist, from one LIST of one
// object (the API server's metadata.remainingItemCount); -1 when the API
// server does not say (an aggregated API may not).
func Count(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) (int64, error) {
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", gvr.GroupResource(), err)
	}
	n := int64(len(list.Items))
	switch {
	case list.GetContinue() == "":
		return n, nil
	case list.GetRemainingItemCount() != nil:
		return n + *list.GetRemainingItemCount(), nil
	}
	return -1, nil
}
