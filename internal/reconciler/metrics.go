package reconciler

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the reconciler's Prometheus series.
type metrics struct {
	registry    *prometheus.Registry
	corrections prometheus.Counter
	errors      *prometheus.CounterVec
	requests    *prometheus.CounterVec
	leader      prometheus.Gauge
	lastSync    atomic.Int64 // unix nanoseconds of the last successful reconcile
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		corrections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kmshealth_cabundle_corrections_total",
			Help: "APIService caBundles restored after drift or carried over from a rotated source.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmshealth_reconcile_errors_total",
			Help: "Reconciles that could not bring an object to its desired state, by reason (source_missing, source_invalid, invalid_annotation, not_applicable, apply).",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmshealth_kube_api_requests_total",
			Help: "Requests this process sent to the Kubernetes API server, by verb (WATCH separated from GET/LIST) and resource.",
		}, []string{"verb", "resource"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kmshealth_leader",
			Help: "1 while this replica holds the leader-election Lease (only the leader writes).",
		}),
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kmshealth_last_successful_sync_age_seconds",
		Help: "Seconds since the last reconcile that left an object in its desired state; -1 before the first.",
	}, func() float64 {
		last := m.lastSync.Load()
		if last == 0 {
			return -1
		}
		return time.Since(time.Unix(0, last)).Seconds()
	})
	m.registry.MustRegister(m.corrections, m.errors, m.requests, m.leader, age,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) synced() { m.lastSync.Store(time.Now().UnixNano()) }

// countRequests wraps the client transport to count requests by verb and
// resource, so the idle benchmark can prove there is no polling.
func (m *metrics) countRequests(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		verb := req.Method
		if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
			verb = "WATCH"
		}
		m.requests.WithLabelValues(verb, resourceOf(req.URL.Path)).Inc()
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf extracts the resource from an API path:
// /api/v1/namespaces/ns/secrets/x -> secrets; /apis/g/v/apiservices/x -> apiservices.
func resourceOf(path string) string {
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
