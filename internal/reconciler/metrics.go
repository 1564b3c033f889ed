package reconciler

import (
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

// countRequests counts one request to the API server.
func (m *metrics) countRequests(verb, resource string) {
	m.requests.WithLabelValues(verb, resource).Inc()
}
