package install

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The prometheus-operator kinds both installers' opt-in monitoring writes,
// and the scraper's token Secret (a Secret of type
// kubernetes.io/service-account-token, written as unstructured).
var (
	monitoringGV    = schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}
	PodMonitors     = CustomKind("PodMonitor", monitoringGV.WithResource("podmonitors"), true)
	PrometheusRules = CustomKind("PrometheusRule", monitoringGV.WithResource("prometheusrules"), true)
	Secrets         = CustomKind("Secret", corev1.SchemeGroupVersion.WithResource("secrets"), true)
)

// MonitoringAvailable reports whether the API server serves PodMonitors
// and PrometheusRules (the prometheus-operator CRDs are installed).
func MonitoringAvailable(ctx context.Context, cl Clients) (bool, error) {
	_ = ctx // discovery takes no context
	list, err := cl.Core.Discovery().ServerResourcesForGroupVersion(monitoringGV.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", monitoringGV, err)
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		served[r.Name] = true
	}
	return served[PodMonitors.GVR.Resource] && served[PrometheusRules.GVR.Resource], nil
}
