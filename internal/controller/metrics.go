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
// series here too.
var Registry = crmetrics.Registry

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
		Registry.MustRegister(reconciles, corrections, problems, watchEvents, scrapeCollector{})
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

func (m *metrics) result(r string)       { reconciles.WithLabelValues(m.name, r).Inc() }
func (m *metrics) written()              { corrections.WithLabelValues(m.name).Inc() }
func (m *metrics) problem(reason string) { problems.WithLabelValues(m.name, reason).Inc() }
func (m *metrics) synced()               { m.lastSync.Store(time.Now().UnixNano()) }

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
