package monitoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
	_ "github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler" // registers the reconciler's series
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporter"
)

// TestPromtoolRules runs promtool on the rules: syntax, and a test per
// alert that fires and one that stays silent (testdata/rules_test.yaml).
// make unit sets KMSHEALTH_PROMTOOL; without it the test fails, so a
// missing tool never passes as a skip.
func TestPromtoolRules(t *testing.T) {
	promtool := os.Getenv("KMSHEALTH_PROMTOOL")
	if promtool == "" {
		t.Fatal("KMSHEALTH_PROMTOOL is not set: run KMSHEALTH_PROMTOOL=$(bash tools/install.sh promtool) go test ./internal/monitoring/ (make unit does)")
	}
	for _, args := range [][]string{
		{"check", "rules", "rules.yaml"},
		{"test", "rules", "testdata/rules_test.yaml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestEveryAlertHasTests: every alert of rules.yaml appears in a firing
// and in a silent case of the promtool tests.
func TestEveryAlertHasTests(t *testing.T) {
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	readYAML(t, "testdata/rules_test.yaml", &tests)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, r := range rules(t) {
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("alert %s: promtool tests with it firing: %t, staying silent: %t; want both in testdata/rules_test.yaml", r.Alert, fires[r.Alert], silent[r.Alert])
		}
	}
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func rules(t *testing.T) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(monitoring.Rules, &f); err != nil {
		t.Fatalf("decode rules.yaml: %v", err)
	}
	var all []rule
	for _, g := range f.Groups {
		all = append(all, g.Rules...)
	}
	if len(all) == 0 {
		t.Fatal("rules.yaml has no rules")
	}
	return all
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
}

// controllerRuntimeSeries are the controller-runtime series the rules and
// the dashboard use; controller-runtime registers them in the registry the
// reconciler serves (sigs.k8s.io/controller-runtime/pkg/metrics).
var controllerRuntimeSeries = []string{
	"leader_election_master_status",
	"controller_runtime_reconcile_time_seconds_bucket",
}

// series are the names a scrape of kmshealth shows: every registered
// collector's, a histogram's with its _bucket, _sum and _count.
func series(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, m := range documented(t) {
		names[m.name] = true
		if m.typ == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[m.name+s] = true
			}
		}
	}
	for _, n := range controllerRuntimeSeries {
		names[n] = true
	}
	return names
}

// TestQueriesNameRegisteredMetrics: every metric named in an alert
// expression or a dashboard query is one our code registers (or one of
// controller-runtime's listed above), so a renamed series cannot leave a
// silent alert or an empty panel behind.
func TestQueriesNameRegisteredMetrics(t *testing.T) {
	known := series(t)
	var queries []string
	for _, r := range rules(t) {
		queries = append(queries, r.Expr)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(monitoring.Dashboard, &dash); err != nil {
		t.Fatalf("decode dashboard.json: %v", err)
	}
	panels := 0
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			queries = append(queries, q.Expr)
			panels++
		}
	}
	if panels == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, q := range queries {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("query %q names no metric", q)
		}
		for _, n := range names {
			if !known[n] {
				t.Errorf("query %q names %s, which no kmshealth or listed controller-runtime collector registers", q, n)
			}
		}
	}
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{`max by (namespace, reason) ((a_b == 1) and on (namespace, pod) (c{x="y"} == 1))`, []string{"a_b", "c"}},
		{`time() - max by (node) (x_seconds) > 300`, []string{"x_seconds"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket{a=~"b|c"}[5m])))`, []string{"h_bucket"}},
		{`sum without (pod) (increase(c_total[30m])) > 3 * 86400 unless ignoring(a) group_left(b) d`, []string{"c_total", "d"}},
	} {
		if got := metricNames(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

var (
	quoted    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	matchers  = regexp.MustCompile(`\{[^}]*\}`)
	ranges    = regexp.MustCompile(`\[[^\]]*\]`)
	grouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ident     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	operators = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames are the metric names a PromQL expression selects: what is
// left after strings, label matchers, ranges and grouping clauses are
// removed, that is not a function call or an operator keyword.
func metricNames(q string) []string {
	q = quoted.ReplaceAllString(q, `""`)
	q = matchers.ReplaceAllString(q, " ")
	q = ranges.ReplaceAllString(q, " ")
	q = grouping.ReplaceAllString(q, " ")
	seen := map[string]bool{}
	var names []string
	for _, m := range ident.FindAllString(q, -1) {
		if strings.HasSuffix(m, "(") || operators[strings.ToLower(m)] || seen[m] {
			continue
		}
		seen[m] = true
		names = append(names, m)
	}
	return names
}

type metric struct{ name, typ, labels, servedBy string }

func (m metric) String() string {
	return fmt.Sprintf("%s %s {%s} (%s)", m.name, m.typ, m.labels, m.servedBy)
}

// idle is a pattern that keeps nothing: one controller, so the scrape-time
// collectors have something to collect and show their type.
type idle struct{}

func (idle) Name() string                                      { return "idle" }
func (idle) Roots() []controller.Ref                           { return nil }
func (idle) Deps(controller.Cache) map[string][]controller.Ref { return nil }
func (idle) Observe(controller.Cache, string) (struct{}, bool, error) {
	return struct{}{}, false, nil
}
func (idle) Desired(struct{}) (struct{}, error) { return struct{}{}, nil }
func (idle) InSync(struct{}, struct{}) bool     { return true }
func (idle) Subject(struct{}) runtime.Object    { return nil }
func (idle) Apply(context.Context, struct{}, struct{}) (controller.Change, error) {
	return controller.Change{}, nil
}

var _ = controller.New[struct{}, struct{}](idle{})

// documented are the series our code registers, from the collectors'
// Describe (a Vec without children describes itself all the same), with
// where they are served.
func documented(t *testing.T) []metric {
	t.Helper()
	byName := map[string]*metric{}
	add := func(c prometheus.Collector, who string) {
		typ := collectorType(t, c)
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			name, labels := parseDesc(t, d)
			if m, ok := byName[name]; ok {
				if m.labels != labels || m.typ != typ {
					t.Errorf("%s is served by %s as %s {%s} and by %s as %s {%s}", name, m.servedBy, m.typ, m.labels, who, typ, labels)
				}
				m.servedBy += ", " + who
				continue
			}
			byName[name] = &metric{name: name, typ: typ, labels: labels, servedBy: who}
		}
	}
	for _, c := range controller.Collectors() {
		add(c, "reconciler")
	}
	for _, c := range reporter.Collectors() {
		add(c, "reporter")
	}
	var out []metric
	for _, m := range byName {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

var descString = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: ".*", constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)

func parseDesc(t *testing.T, d *prometheus.Desc) (name, labels string) {
	t.Helper()
	m := descString.FindStringSubmatch(d.String())
	if m == nil {
		t.Fatalf("cannot read the descriptor %s", d)
	}
	if m[2] != "" {
		t.Errorf("%s has constant labels %s; the table has no column for them", m[1], m[2])
	}
	return m[1], m[3]
}

// collectorType is a collector's metric type: from its Go type, or from
// what it collects (the scrape-time collectors).
func collectorType(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec, prometheus.Histogram:
		return "histogram"
	case prometheus.Gauge:
		return "gauge"
	case prometheus.Counter:
		return "counter"
	}
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	typ := ""
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		this := ""
		switch {
		case pb.Gauge != nil:
			this = "gauge"
		case pb.Counter != nil:
			this = "counter"
		case pb.Histogram != nil:
			this = "histogram"
		}
		if typ != "" && this != typ {
			t.Fatalf("collector %T collects %s and %s series; the table check needs one type per collector", c, typ, this)
		}
		typ = this
	}
	if typ == "" {
		t.Fatalf("cannot tell the type of collector %T", c)
	}
	return typ
}

var (
	tableBlock = regexp.MustCompile(`(?s)<!-- metrics-table:begin[^>]*-->\n(.*?)<!-- metrics-table:end -->`)
	backticked = regexp.MustCompile("`([a-z_]+)`")
)

// TestMetricsTable: the reconciler and reporter pages show the same one
// table, and it lists exactly the registered series, with their type,
// labels and where they are served.
func TestMetricsTable(t *testing.T) {
	var table string
	for _, page := range []string{"reconciler", "reporter"} {
		path := filepath.Join("..", "..", "templates", "resources", page+".md.tmpl")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := tableBlock.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no metrics table between <!-- metrics-table:begin --> and <!-- metrics-table:end -->", path)
		}
		if table == "" {
			table = string(m[1])
		} else if string(m[1]) != table {
			t.Errorf("%s shows another metrics table than the reconciler page: keep the two copies equal", path)
		}
	}
	var rows []metric
	for i, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if i < 2 {
			continue // header and separator
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 5 {
			t.Fatalf("metrics table row %q: want 5 cells, got %d", line, len(cells))
		}
		var labels []string
		// Label names are the backticked words before each parenthesis.
		for _, part := range strings.Split(stripParens(cells[2]), ",") {
			if m := backticked.FindStringSubmatch(part); m != nil {
				labels = append(labels, m[1])
			}
		}
		served := strings.ReplaceAll(cells[3], " (leader)", "")
		rows = append(rows, metric{name: strings.Trim(cells[0], "`"), typ: cells[1], labels: strings.Join(labels, ","), servedBy: served})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	want := documented(t)
	if got, want := fmt.Sprint(rows), fmt.Sprint(want); got != want {
		t.Errorf("the metrics table does not match the registered collectors:\n table: %s\n code:  %s", got, want)
	}
}

// stripParens drops parenthesised text (cardinality notes), nested too.
func stripParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var runbookAnchor = regexp.MustCompile(`^` + regexp.QuoteMeta(monitoring.RunbookURL) + `#(.+)$`)

// TestRunbookURLs: every alert's runbook_url points at a section of the
// runbooks guide, the degraded alert at one per KMSPluginsDegraded reason.
func TestRunbookURLs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "templates", "guides", "runbooks.md.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[slug(strings.TrimLeft(line, "# "))] = true
		}
	}
	reasons := []string{kmshealth.ReasonStale, kmshealth.ReasonError, kmshealth.ReasonUnhealthy, kmshealth.ReasonInvalid, kmshealth.ReasonMissing}
	for _, r := range rules(t) {
		m := runbookAnchor.FindStringSubmatch(r.Annotations["runbook_url"])
		if m == nil {
			t.Errorf("alert %s: runbook_url %q does not point into %s", r.Alert, r.Annotations["runbook_url"], monitoring.RunbookURL)
			continue
		}
		targets := []string{m[1]}
		if strings.Contains(m[1], "{{") {
			targets = nil
			for _, reason := range reasons {
				targets = append(targets, strings.Replace(m[1], "{{ $labels.reason | toLower }}", strings.ToLower(reason), 1))
			}
		}
		for _, a := range targets {
			if !anchors[a] {
				t.Errorf("alert %s: the runbooks guide has no section #%s", r.Alert, a)
			}
		}
	}
}

// slug is the anchor a Markdown renderer gives a heading: lower case,
// spaces to hyphens, punctuation dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestRuleGroups: rules.yaml has exactly one group per component's
// monitoring, every alert is in exactly one of them (so the reporter's and
// the reconciler's PrometheusRules never define an alert twice), and each
// group reads only its component's series: the reconciler group no KMS
// series, the KMS group nothing but the aggregator's KMS gauges and the
// leader status.
func TestRuleGroups(t *testing.T) {
	var f struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(monitoring.Rules, &f); err != nil {
		t.Fatal(err)
	}
	var names []string
	seen := map[string]string{}
	for _, g := range f.Groups {
		names = append(names, g.Name)
		if _, err := monitoring.RuleGroup(g.Name); err != nil {
			t.Error(err)
		}
		for _, r := range g.Rules {
			if other, ok := seen[r.Alert]; ok {
				t.Errorf("alert %s is in group %s and in group %s", r.Alert, other, g.Name)
			}
			seen[r.Alert] = g.Name
			for _, m := range metricNames(r.Expr) {
				kms := strings.HasPrefix(m, "kmshealth_kms_")
				switch {
				case g.Name == monitoring.GroupReconciler && kms:
					t.Errorf("alert %s of group %s reads the KMS series %s: it belongs in %s", r.Alert, g.Name, m, monitoring.GroupKMS)
				case g.Name == monitoring.GroupKMS && !kms && m != "leader_election_master_status":
					t.Errorf("alert %s of group %s reads %s, which is not a KMS series: it belongs in %s", r.Alert, g.Name, m, monitoring.GroupReconciler)
				}
			}
		}
	}
	if want := []string{monitoring.GroupKMS, monitoring.GroupReconciler}; !slices.Equal(names, want) {
		t.Errorf("rule groups %v, want %v", names, want)
	}
	if _, err := monitoring.RuleGroup("kmshealth"); err == nil {
		t.Error("RuleGroup of a group that does not exist: no error")
	}
}
