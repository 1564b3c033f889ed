package devenv

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ParseMetrics reads the Prometheus text format into name{labels} -> value,
// labels sorted by name as they are exposed: a histogram gives its _bucket
// (with le), _sum and _count series, a summary its quantiles, _sum and
// _count.
func ParseMetrics(text []byte) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[series(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[series(name, labels)] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[series(name, labels)] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out[series(name+"_bucket", labels, "le", fmt.Sprint(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
				out[series(name+"_sum", labels)] = h.GetSampleSum()
				out[series(name+"_count", labels)] = float64(h.GetSampleCount())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out[series(name, labels, "quantile", fmt.Sprint(q.GetQuantile()))] = q.GetValue()
				}
				out[series(name+"_sum", labels)] = s.GetSampleSum()
				out[series(name+"_count", labels)] = float64(s.GetSampleCount())
			}
		}
	}
	return out, nil
}

// series is name{k="v",...} with the labels sorted by name; extra are
// more name, value pairs.
func series(name string, labels []*dto.LabelPair, extra ...string) string {
	pairs := make([][2]string, 0, len(labels)+len(extra)/2)
	for _, l := range labels {
		pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		pairs = append(pairs, [2]string{extra[i], extra[i+1]})
	}
	if len(pairs) == 0 {
		return name
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = fmt.Sprintf("%s=%q", p[0], p[1])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
