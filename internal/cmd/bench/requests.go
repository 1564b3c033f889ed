package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

// requestKey identifies a kind of request: verb and resource (with
// "/subresource" when there is one), or verb and path for the non-resource
// requests kube-apiserver's apiserver_request_total counts: discovery
// ("/api", "/apis") and health checks. (That metric does not count
// /version, /openapi or /metrics, so scraping does not disturb it.)
type requestKey struct{ verb, resource string }

// requestCounts are request totals by kind, summed over every other label
// (code, group, version, scope, component, dry_run).
type requestCounts map[requestKey]float64

// countRequests sums the samples of metric, a request counter labelled by
// verb and resource (and, for kube-apiserver's, subresource), by requestKey:
// apiserver_request_total, or kmshealth_kube_api_requests_total of the
// in-cluster modes.
func countRequests(samples []devenv.Sample, metric string) requestCounts {
	counts := requestCounts{}
	for _, s := range samples {
		if s.Name != metric {
			continue
		}
		k := requestKey{verb: s.Labels["verb"], resource: s.Labels["resource"]}
		switch sub := s.Labels["subresource"]; {
		case k.resource == "": // the path is in subresource, with or without "/"
			k.resource = "/" + strings.TrimPrefix(sub, "/")
		case sub != "":
			k.resource += "/" + sub
		}
		counts[k] += s.Value
	}
	return counts
}

// sum adds up the samples of metric whose labels include every pair of
// match.
func sum(samples []devenv.Sample, metric string, match map[string]string) float64 {
	var total float64
next:
	for _, s := range samples {
		if s.Name != metric {
			continue
		}
		for k, v := range match {
			if s.Labels[k] != v {
				continue next
			}
		}
		total += s.Value
	}
	return total
}

// sub returns the counts that grew from before to c.
func (c requestCounts) sub(before requestCounts) requestCounts {
	d := requestCounts{}
	for k, v := range c {
		if v -= before[k]; v > 0 {
			d[k] = v
		}
	}
	return d
}

// alwaysShown are the verbs whose absence is the point: a plan must not
// list, watch, write or discover per resource.
var alwaysShown = []string{"LIST", "WATCH", "PATCH", "APPLY"}

// String lists the non-zero counts, GETs first, then the zero counts that
// matter, e.g.
// "GET apiservices=50 GET configmaps=50 LIST=0 WATCH=0 PATCH=0 APPLY=0 discovery=0".
func (c requestCounts) String() string {
	keys := make([]requestKey, 0, len(c))
	totals := map[string]float64{}
	for k, v := range c {
		keys = append(keys, k)
		totals[k.verb] += v
	}
	rank := func(verb string) string { // GET first, then alphabetical
		if verb == "GET" {
			return ""
		}
		return verb
	}
	slices.SortFunc(keys, func(a, b requestKey) int {
		return cmp.Or(strings.Compare(rank(a.verb), rank(b.verb)), strings.Compare(a.resource, b.resource))
	})
	var parts []string
	discovery := false
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s=%g", k.verb, k.resource, c[k]))
		discovery = discovery || strings.HasPrefix(k.resource, "/api")
	}
	for _, verb := range alwaysShown {
		if totals[verb] == 0 {
			parts = append(parts, verb+"=0")
		}
	}
	if !discovery {
		parts = append(parts, "discovery=0")
	}
	return strings.Join(parts, " ")
}
