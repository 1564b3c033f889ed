package controller

import (
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
)

// metricsGuard puts the reconciler's /metrics behind controller-runtime's
// metrics filter (a TokenReview, then a SubjectAccessReview for get on the
// path), as every controller-runtime manager serves its secured metrics.
// The reporter uses incluster.ReviewGuard, which does the same without
// linking k8s.io/apiserver.
func metricsGuard(cfg *rest.Config, h http.Handler) (http.Handler, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return filter(klog.NewKlogr().WithName("metrics"), h)
}
