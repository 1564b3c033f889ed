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

// Sample is one series of a scrape: its name (a histogram's or summary's
// with _bucket, _sum or _count), its labels (with le or quantile where the
// format has them) and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Series is name{k="v",...} with the labels sorted by name, as exposed:
// the key of ParseMetrics.
func (s Sample) Series() string {
	if len(s.Labels) == 0 {
		return s.Name
	}
	names := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%q", k, s.Labels[k])
	}
	return s.Name + "{" + strings.Join(parts, ",") + "}"
}

// ParseSamples reads the Prometheus text format (with expfmt, the one
// parser the demo, the tests and the benchmarks share) into its samples: a
// histogram gives its _bucket (with le), _sum and _count series, a summary
// its quantiles, _sum and _count.
func ParseSamples(text []byte) ([]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	var out []Sample
	add := func(name string, labels []*dto.LabelPair, value float64, extra ...string) {
		s := Sample{Name: name, Labels: make(map[string]string, len(labels)+len(extra)/2), Value: value}
		for _, l := range labels {
			s.Labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(extra); i += 2 {
			s.Labels[extra[i]] = extra[i+1]
		}
		out = append(out, s)
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, labels, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, labels, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, labels, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", labels, float64(b.GetCumulativeCount()), "le", fmt.Sprint(b.GetUpperBound()))
				}
				add(name+"_sum", labels, h.GetSampleSum())
				add(name+"_count", labels, float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, labels, q.GetValue(), "quantile", fmt.Sprint(q.GetQuantile()))
				}
				add(name+"_sum", labels, s.GetSampleSum())
				add(name+"_count", labels, float64(s.GetSampleCount()))
			}
		}
	}
	return out, nil
}

// ParseMetrics reads the Prometheus text format into name{labels} -> value
// (Sample.Series), labels sorted by name as they are exposed.
func ParseMetrics(text []byte) (map[string]float64, error) {
	samples, err := ParseSamples(text)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(samples))
	for _, s := range samples {
		out[s.Series()] = s.Value
	}
	return out, nil
}
