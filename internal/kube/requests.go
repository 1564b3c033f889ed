package kube

import (
	"net/http"
	"strings"
)

// CountRequests wraps a client transport and calls count with the verb
// (WATCH told apart from GET) and resource of every request, so the
// in-cluster modes can export how many requests they send and the
// benchmarks can prove there is no polling.
func CountRequests(count func(verb, resource string)) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			verb := req.Method
			if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
				verb = "WATCH"
			}
			count(verb, ResourceOf(req.URL.Path))
			return rt.RoundTrip(req)
		})
	}
}

// RoundTripperFunc is a function that serves as an http.RoundTripper: the
// one adapter the module's transport wrappers and tests use.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f(r).
func (f RoundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ResourceOf extracts the resource from an API path:
// /api/v1/namespaces/ns/secrets/x -> secrets; /apis/g/v/apiservices/x -> apiservices.
func ResourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return "namespaces"
	}
	return parts[0]
}
