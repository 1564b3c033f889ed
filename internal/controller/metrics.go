package controller

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The series every controller exports, labelled by controller; they are
// served beside controller-runtime's own (workqueue, REST client, leader
// election, reconcile totals) on the manager's /metrics.
var (
	reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kmshealth_reconciles_total",
		Help: "Reconciles by controller and result: in_sync (nothing written), written, error.",
	}, []string{"controller", "result"})
	corrections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kmshealth_corrections_total",
		Help: "Writes that brought a live object back to its desired state (drift restored, a rotated source carried over), by controller.",
	}, []string{"controller"})
	problems = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kmshealth_reconcile_errors_total",
		Help: "Reconciles that could not bring an object to its desired state, by controller and reason (e.g. source_missing, source_invalid, source_forbidden, not_applicable, apply).",
	}, []string{"controller", "reason"})
	watchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kmshealth_watch_events_total",
		Help: "Events the watches received (adds, relevant updates, deletes, first lists), by controller and resource.",
	}, []string{"controller", "resource"})
	// objectCorrections and notAfter are per kept object (label object =
	// the controller's key), so their cardinality is the number of objects
	// the reconciler keeps; a key's series go when it is no longer kept.
	objectCorrections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kmshealth_object_corrections_total",
		Help: "Writes that brought one kept object back to its desired state, by controller and object (the controller's key); a steady rise means another writer keeps undoing ours.",
	}, []string{"controller", "object"})
	notAfter = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kmshealth_cabundle_not_after_timestamp_seconds",
		Help: "Expiry (unix seconds) of the earliest-expiring certificate in the caBundle a controller keeps on an object, by controller and object.",
	}, []string{"controller", "object"})
	syncAgeDesc = prometheus.NewDesc("kmshealth_last_successful_sync_age_seconds",
		"Seconds since the last reconcile that left an object in its desired state, by controller; -1 before the first.",
		[]string{"controller"}, nil)
	watchesDesc = prometheus.NewDesc("kmshealth_watches",
		"Watches running, by controller: one per named object a key depends on (field-selected), or per kind followed whole.",
		[]string{"controller"}, nil)

	registerOnce sync.Once
)

// Registry is where every kmshealth series is registered: controller-
// runtime's, which the manager's /metrics serves. Modes register their own
// series through MustRegister, so Collectors can list them.
var Registry = crmetrics.Registry

// registered are kmshealth's own collectors in Registry (not
// controller-runtime's), for the documentation check.
var registered struct {
	sync.Mutex
	collectors []prometheus.Collector
}

// MustRegister registers kmshealth collectors in Registry and remembers
// them for Collectors.
func MustRegister(cs ...prometheus.Collector) {
	Registry.MustRegister(cs...)
	registered.Lock()
	defer registered.Unlock()
	registered.collectors = append(registered.collectors, cs...)
}

// Collectors are every kmshealth collector registered so far, the
// controllers' own included: what the metrics table documents.
func Collectors() []prometheus.Collector {
	register()
	registered.Lock()
	defer registered.Unlock()
	return append([]prometheus.Collector(nil), registered.collectors...)
}

// metrics are one controller's series.
type metrics struct {
	name     string
	lastSync atomic.Int64
	count    func() int // running watches
}

// all are the controllers whose scrape-time gauges the collector reports.
var all struct {
	sync.Mutex
	metrics []*metrics
}

func register() {
	registerOnce.Do(func() {
		MustRegister(reconciles, corrections, problems, watchEvents, objectCorrections, notAfter, scrapeCollector{})
	})
}

func metricsFor(name string, count func() int) *metrics {
	register()
	m := &metrics{name: name, count: count}
	all.Lock()
	defer all.Unlock()
	all.metrics = append(all.metrics, m)
	return m
}

func (m *metrics) result(r string) { reconciles.WithLabelValues(m.name, r).Inc() }
func (m *metrics) written(key string) {
	corrections.WithLabelValues(m.name).Inc()
	objectCorrections.WithLabelValues(m.name, key).Inc()
}
func (m *metrics) problem(reason string) { problems.WithLabelValues(m.name, reason).Inc() }
func (m *metrics) synced()               { m.lastSync.Store(time.Now().UnixNano()) }

func (m *metrics) expires(key string, t time.Time) {
	if t.IsZero() {
		notAfter.DeleteLabelValues(m.name, key)
		return
	}
	notAfter.WithLabelValues(m.name, key).Set(float64(t.Unix()))
}

// forget drops a key's per-object series: it is no longer kept.
func (m *metrics) forget(key string) {
	objectCorrections.DeleteLabelValues(m.name, key)
	notAfter.DeleteLabelValues(m.name, key)
}

// scrapeCollector reports the gauges computed when scraped: each
// controller's sync age and running watches.
type scrapeCollector struct{}

func (scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncAgeDesc
	ch <- watchesDesc
}

func (scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	all.Lock()
	defer all.Unlock()
	for _, m := range all.metrics {
		age := -1.0
		if last := m.lastSync.Load(); last != 0 {
			age = time.Since(time.Unix(0, last)).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(syncAgeDesc, prometheus.GaugeValue, age, m.name)
		ch <- prometheus.MustNewConstMetric(watchesDesc, prometheus.GaugeValue, float64(m.count()), m.name)
	}
}
