package reporter

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// jitter spreads the ticks of many nodes: each period is up to 10% longer.
const jitter = 0.1

// Main is `terraform-provider-kmshealth report [flags]`; it returns the
// process exit code.
func Main(version string, args []string) int {
	var o Options
	if code := incluster.Parse("report", args, &o); code >= 0 {
		return code
	}
	log := klog.Background().WithValues("node", o.NodeName)
	log.Info("Starting", "component", "kmshealth-reporter", "version", version)
	return incluster.RunUntilSignal("reporter", func(ctx context.Context) error { return Run(ctx, o, version, log) })
}

// Reporter is one node's probe-and-write loop.
type Reporter struct {
	opts    Options
	target  kmshealth.Target
	dyn     dynamic.Interface
	api     *incluster.JSONClient // the one discovery GET of a non-default target
	kind    string                // resolved on the first write, then cached
	builder kmshealth.ConditionBuilder
	now     func() time.Time
	log     klog.Logger
	metrics *metrics
	lastRun atomic.Int64 // unix nanoseconds of the last finished tick
}

// New builds a reporter; it does not contact the API server.
func New(o Options, cfg *rest.Config, log klog.Logger) (*Reporter, error) {
	target, err := kmshealth.ParseTarget(o.Target)
	if err != nil {
		return nil, err
	}
	m := newMetrics()
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(kube.CountRequests(m.countRequest))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	api, err := incluster.NewJSONClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Reporter{
		opts: o, target: target, dyn: dyn, api: api,
		builder: kmshealth.ConditionBuilder{Node: o.NodeName},
		now:     time.Now, log: log, metrics: m,
	}, nil
}

// Run probes and writes every --interval until ctx ends. It fails only when
// its flags or HTTP listeners are unusable, never because of the API server
// or a plugin.
func Run(ctx context.Context, o Options, version string, log klog.Logger) error {
	cfg, err := incluster.RESTConfig(o.Kubeconfig, "kmshealth-reporter/"+version)
	if err != nil {
		return err
	}
	r, err := New(o, cfg, log)
	if err != nil {
		return err
	}
	health := http.NewServeMux()
	health.HandleFunc("/healthz", r.healthz)
	if err := incluster.Serve(ctx, o.HealthProbeBindAddress, health); err != nil {
		return err
	}
	if err := incluster.ServeMetrics(ctx, o.Metrics, cfg, r.metrics.registry, incluster.ReviewGuard); err != nil {
		return err
	}
	log.Info("Started", "target", r.target.String(), "interval", o.Interval.String(), "sockets", o.Sockets, "socketDir", o.SocketDir)
	wait.JitterUntilWithContext(ctx, r.Tick, o.Interval, jitter, true)
	return nil
}

// Tick probes every plugin and writes this node's condition once. A write
// that fails is logged, counted and dropped: the next tick writes fresher
// data anyway.
func (r *Reporter) Tick(ctx context.Context) {
	defer r.lastRun.Store(time.Now().UnixNano())
	plugins := r.probe(ctx)
	cond := r.builder.Build(plugins, r.now())
	// A write (with the one-time kind discovery) that cannot finish within
	// --write-timeout is dropped.
	wctx, cancel := context.WithTimeout(ctx, r.opts.writeTimeout())
	defer cancel()
	if err := r.write(wctx, plugins, cond); err != nil {
		r.metrics.writes.WithLabelValues("dropped").Inc()
		r.log.Error(err, "Condition write dropped", "status", string(cond.Status), "reason", cond.Reason)
		return
	}
	r.metrics.writes.WithLabelValues("ok").Inc()
	r.log.V(2).Info("Condition written", "status", string(cond.Status), "reason", cond.Reason)
}

func (r *Reporter) probe(ctx context.Context) []kmshealth.Plugin {
	sockets, err := r.opts.sockets()
	if err != nil {
		// An unreadable socket directory: report no plugins (Unknown/Error)
		// rather than nothing at all.
		r.log.Error(err, "Cannot list KMS sockets")
	}
	start := time.Now()
	results := kmshealth.Probe(ctx, sockets, r.opts.readTimeout(), r.now)
	r.metrics.probeSeconds.Observe(time.Since(start).Seconds())
	plugins := make([]kmshealth.Plugin, len(results))
	for i, res := range results {
		plugins[i] = res.Plugin()
		r.metrics.pluginHealthy.WithLabelValues(res.Socket.KeyID).Set(boolFloat(plugins[i].Status == kmshealth.StatusHealthy))
		for _, st := range pluginStatuses {
			r.metrics.pluginStatus.WithLabelValues(res.Socket.KeyID, string(st)).Set(boolFloat(plugins[i].Status == st))
		}
		if plugins[i].Status != kmshealth.StatusHealthy {
			r.log.Info("KMS plugin not healthy", "keyID", plugins[i].KeyID, "status", string(plugins[i].Status), "detail", plugins[i].Detail)
		}
	}
	return plugins
}

// write delivers this tick's report in the --report-format: cond, or the
// plugins as typed healthReports entries.
func (r *Reporter) write(ctx context.Context, plugins []kmshealth.Plugin, cond metav1.Condition) error {
	if r.kind == "" {
		kind, err := kmshealth.ResolveKind(ctx, lister{ctx, r.api}, r.target)
		if err != nil {
			return err
		}
		r.kind = kind
	}
	fm := kmshealth.ReporterFieldManager(r.opts.NodeName)
	if r.opts.ReportFormat == string(kmshealth.FormatOpenShiftTyped) {
		return kmshealth.ApplyHealthReports(ctx, r.dyn, r.target, r.kind, r.opts.NodeName, plugins, r.now(), fm)
	}
	return kmshealth.ApplyCondition(ctx, r.dyn, r.target, r.kind, cond, fm)
}

// lister is the reporter's kmshealth.ResourceLister: one GET, bounded by
// the write's context.
type lister struct {
	ctx context.Context
	api *incluster.JSONClient
}

func (l lister) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return l.api.ServerResources(l.ctx, gv)
}

// healthz answers ok while ticks keep finishing; a loop stuck for three
// intervals (plus the timeouts) makes the kubelet restart the pod.
func (r *Reporter) healthz(w http.ResponseWriter, _ *http.Request) {
	last := r.lastRun.Load()
	limit := 3*r.opts.Interval + r.opts.readTimeout() + r.opts.writeTimeout()
	if last != 0 && time.Since(time.Unix(0, last)) > limit {
		http.Error(w, "no probe finished in "+limit.String(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// pluginStatuses are a plugin's possible verdicts, each a fixed series.
var pluginStatuses = []kmshealth.PluginStatus{kmshealth.StatusHealthy, kmshealth.StatusUnhealthy, kmshealth.StatusError}

// metrics are the reporter's series; the per-plugin ones have one child
// per socket (keyID) of the node, times three for the status.
type metrics struct {
	registry      *prometheus.Registry
	writes        *prometheus.CounterVec
	requests      *prometheus.CounterVec
	probeSeconds  prometheus.Histogram
	pluginHealthy *prometheus.GaugeVec
	pluginStatus  *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmshealth_reporter_writes_total",
			Help: "Condition writes by result: ok, or dropped (not retried; the next tick writes fresher data).",
		}, []string{"result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmshealth_kube_api_requests_total",
			Help: "Requests this process sent to the Kubernetes API server, by verb and resource.",
		}, []string{"verb", "resource"}),
		probeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kmshealth_reporter_probe_duration_seconds",
			Help:    "Wall time of one probe of all plugins (concurrent Status calls).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		pluginHealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kmshealth_reporter_plugin_healthy",
			Help: "1 when the plugin's last Status was healthy, by keyID.",
		}, []string{"key_id"}),
		pluginStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kmshealth_reporter_plugin_status",
			Help: "1 for the plugin's last verdict (healthy, unhealthy, error), 0 for the others, by key_id and status.",
		}, []string{"key_id", "status"}),
	}
	m.registry.MustRegister(m.collectors()...)
	return m
}

// collectors are every series the reporter serves.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.writes, m.requests, m.probeSeconds, m.pluginHealthy, m.pluginStatus}
}

func (m *metrics) countRequest(verb, resource string) {
	m.requests.WithLabelValues(verb, resource).Inc()
}

// Collectors are the series a reporter serves (fresh, unregistered
// collectors): what the metrics table documents.
func Collectors() []prometheus.Collector { return newMetrics().collectors() }
