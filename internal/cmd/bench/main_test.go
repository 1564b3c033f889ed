package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    options
		wantErr string
	}{
		{args: nil, want: options{resources: 50, runs: 7, clis: []string{"terraform", "tofu"}}},
		{args: []string{"-resources=3", "-runs=1", "-cli=tofu"}, want: options{resources: 3, runs: 1, clis: []string{"tofu"}}},
		{args: []string{"-cli=terraform, tofu,"}, want: options{resources: 50, runs: 7, clis: []string{"terraform", "tofu"}}},
		{args: []string{"-resources=0"}, wantErr: "-resources=0"},
		{args: []string{"-runs=0"}, wantErr: "-runs=0"},
		{args: []string{"-cli=pulumi"}, wantErr: `unknown CLI "pulumi"`},
		{args: []string{"-cli="}, wantErr: "-cli is empty"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"-nope"}, wantErr: "not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.resources != tt.want.resources || got.runs != tt.want.runs || strings.Join(got.clis, ",") != strings.Join(tt.want.clis, ",") {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

const metricsBefore = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests ...
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apiregistration.k8s.io",resource="apiservices",scope="resource",subresource="",verb="GET",version="v1"} 10
apiserver_request_total{code="404",component="apiserver",dry_run="",group="apiregistration.k8s.io",resource="apiservices",scope="resource",subresource="",verb="GET",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="apis",verb="GET",version=""} 1
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apiregistration.k8s.io",resource="apiservices",scope="resource",subresource="status",verb="PUT",version="v1"} 3
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 99
`

func TestParseRequestTotals(t *testing.T) {
	got, err := parseRequestTotals(strings.NewReader(metricsBefore))
	if err != nil {
		t.Fatal(err)
	}
	want := requestCounts{
		{"GET", "apiservices"}: 11, {"GET", "configmaps"}: 4, {"GET", "/apis"}: 1, {"GET", "/readyz"}: 2,
		{"PUT", "apiservices/status"}: 3,
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v = %g, want %g", k, got[k], v)
		}
	}
}

func TestParseRequestTotalsErrors(t *testing.T) {
	for _, in := range []string{
		`apiserver_request_total{verb="GET} 1`,
		`apiserver_request_total{verb} 1`,
		`apiserver_request_total{verb="GET"} one`,
	} {
		if _, err := parseRequestTotals(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestParseLabelsEscapes(t *testing.T) {
	labels, rest, err := parseLabels(`a="x\"y\\z\n",b=""} 7 1700000000`)
	if err != nil {
		t.Fatal(err)
	}
	if labels["a"] != "x\"y\\z\n" || labels["b"] != "" || rest != " 7 1700000000" {
		t.Errorf("labels %q, rest %q", labels, rest)
	}
}

func TestRequestCountsString(t *testing.T) {
	tests := []struct {
		name string
		c    requestCounts
		want string
	}{
		{"none", requestCounts{}, "LIST=0 WATCH=0 PATCH=0 APPLY=0 discovery=0"},
		{
			"gets first",
			requestCounts{{"PUT", "leases"}: 1, {"GET", "configmaps"}: 50, {"GET", "apiservices"}: 50},
			"GET apiservices=50 GET configmaps=50 PUT leases=1 LIST=0 WATCH=0 PATCH=0 APPLY=0 discovery=0",
		},
		{
			"discovery and lists",
			requestCounts{{"GET", "/apis"}: 2, {"LIST", "apiservices"}: 1},
			"GET /apis=2 LIST apiservices=1 WATCH=0 PATCH=0 APPLY=0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.String(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSub(t *testing.T) {
	before := requestCounts{{"GET", "a"}: 1, {"GET", "b"}: 5}
	after := requestCounts{{"GET", "a"}: 3, {"GET", "b"}: 5, {"PUT", "c"}: 1}
	got := after.sub(before)
	if len(got) != 2 || got[requestKey{"GET", "a"}] != 2 || got[requestKey{"PUT", "c"}] != 1 {
		t.Errorf("got %v", got)
	}
}

func TestStats(t *testing.T) {
	s := time.Second
	tests := []struct {
		in            []time.Duration
		lo, mid, high time.Duration
	}{
		{[]time.Duration{s}, s, s, s},
		{[]time.Duration{3 * s, 1 * s, 2 * s}, s, 2 * s, 3 * s},
		{[]time.Duration{4 * s, 1 * s, 2 * s, 3 * s}, s, 2500 * time.Millisecond, 4 * s},
	}
	for _, tt := range tests {
		lo, mid, hi := stats(tt.in)
		if lo != tt.lo || mid != tt.mid || hi != tt.high {
			t.Errorf("stats(%v) = %v %v %v, want %v %v %v", tt.in, lo, mid, hi, tt.lo, tt.mid, tt.high)
		}
	}
}

func TestMainTF(t *testing.T) {
	pem := "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	got := mainTF("/tmp/kubeconfig", []string{pem, pem})
	for _, want := range []string{
		`source = "kmshealth/kmshealth"`,
		`config_path = "/tmp/kubeconfig"`,
		`resource "kmshealth_apiservice_cabundle" "r1" {`,
		`apiservice_name = "v1.g1.bench.example.com"`,
		"ca_bundle       = <<PEM\n" + pem + "PEM\n}",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("main.tf lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "resource "); n != 2 {
		t.Errorf("%d resource blocks, want 2", n)
	}
}
