package devenv

import (
	"testing"
)

const exposition = `# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{verb="GET",resource="secrets"} 3
requests_total{verb="PUT",resource="a\"b\\c\n"} 1
# TYPE up gauge
up 1
# TYPE latency_seconds histogram
latency_seconds_bucket{op="x",le="0.1"} 2
latency_seconds_bucket{op="x",le="+Inf"} 5
latency_seconds_sum{op="x"} 1.5
latency_seconds_count{op="x"} 5
untyped_thing{b="2",a="1"} 7 1700000000000
`

func TestParseMetrics(t *testing.T) {
	got, err := ParseMetrics([]byte(exposition))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`requests_total{resource="secrets",verb="GET"}`:   3,
		`requests_total{resource="a\"b\\c\n",verb="PUT"}`: 1,
		`up`: 1,
		`latency_seconds_bucket{le="0.1",op="x"}`:  2,
		`latency_seconds_bucket{le="+Inf",op="x"}`: 5,
		`latency_seconds_sum{op="x"}`:              1.5,
		`latency_seconds_count{op="x"}`:            5,
		`untyped_thing{a="1",b="2"}`:               7,
	}
	if len(got) != len(want) {
		t.Errorf("got %d series %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func TestParseSamplesLabels(t *testing.T) {
	samples, err := ParseSamples([]byte(exposition))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range samples {
		if s.Name == "requests_total" && s.Labels["verb"] == "PUT" {
			found = true
			if s.Labels["resource"] != "a\"b\\c\n" || s.Value != 1 {
				t.Errorf("got %+v", s)
			}
		}
	}
	if !found {
		t.Errorf("no PUT sample in %+v", samples)
	}
}

func TestParseSamplesErrors(t *testing.T) {
	for _, in := range []string{
		`requests_total{verb="GET} 1`,
		`requests_total{verb} 1`,
		`requests_total{verb="GET"} one`,
	} {
		if _, err := ParseSamples([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}
