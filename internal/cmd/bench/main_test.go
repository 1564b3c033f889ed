package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

func TestParsePlanFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    planOptions
		wantErr string
	}{
		{args: nil, want: planOptions{resources: 50, runs: 7, clis: []string{"terraform", "tofu"}, reference: true}},
		{args: []string{"-resources=3", "-runs=1", "-cli=tofu", "-reference=false"}, want: planOptions{resources: 3, runs: 1, clis: []string{"tofu"}}},
		{args: []string{"-cli=terraform, tofu,"}, want: planOptions{resources: 50, runs: 7, clis: []string{"terraform", "tofu"}, reference: true}},
		{args: []string{"-resources=0"}, wantErr: "-resources=0"},
		{args: []string{"-runs=0"}, wantErr: "-runs=0"},
		{args: []string{"-cli=pulumi"}, wantErr: `unknown CLI "pulumi"`},
		{args: []string{"-cli="}, wantErr: "-cli is empty"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"-nope"}, wantErr: "not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parsePlanFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.resources != tt.want.resources || got.runs != tt.want.runs || got.reference != tt.want.reference || strings.Join(got.clis, ",") != strings.Join(tt.want.clis, ",") {
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

func TestCountRequests(t *testing.T) {
	samples, err := devenv.ParseSamples([]byte(metricsBefore))
	if err != nil {
		t.Fatal(err)
	}
	got := countRequests(samples, "apiserver_request_total")
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

func TestCountKubeAPIRequests(t *testing.T) {
	samples, err := devenv.ParseSamples([]byte(`# TYPE kmshealth_kube_api_requests_total counter
kmshealth_kube_api_requests_total{resource="leases",verb="PUT"} 30
kmshealth_kube_api_requests_total{resource="kmshealths",verb="PATCH"} 7
kmshealth_kube_api_requests_total{resource="configmaps",verb="WATCH"} 2
# TYPE kmshealth_reporter_writes_total counter
kmshealth_reporter_writes_total{result="ok"} 6
kmshealth_reporter_writes_total{result="dropped"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	got := countRequests(samples, "kmshealth_kube_api_requests_total")
	if len(got) != 3 || got[requestKey{"PUT", "leases"}] != 30 || got[requestKey{"PATCH", "kmshealths"}] != 7 || got[requestKey{"WATCH", "configmaps"}] != 2 {
		t.Errorf("got %v", got)
	}
	if ok := sum(samples, "kmshealth_reporter_writes_total", map[string]string{"result": "ok"}); ok != 6 {
		t.Errorf("ok writes = %v, want 6", ok)
	}
	if all := sum(samples, "kmshealth_reporter_writes_total", nil); all != 7 {
		t.Errorf("all writes = %v, want 7", all)
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

func TestPrintTable(t *testing.T) {
	s := time.Second
	var out strings.Builder
	err := printTable(&out, []row{
		{cli: "terraform 1.5.7", resources: 0, times: devenv.Latencies{3 * s, s, 2 * s}, requests: "LIST=0"},
		{cli: "tofu 1.12.6", kind: "kmshealth_apiservice_cabundle", resources: 50, times: devenv.Latencies{1500 * time.Millisecond}, cpu: devenv.Latencies{s}, requests: "GET apiservices=50"},
		{cli: "tofu 1.12.6", kind: "kubectl_manifest", resources: 50, times: devenv.Latencies{2 * s}, cpu: devenv.Latencies{2 * s}, requests: "GET apiservices=50"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `cli              resources                         min    p50    max    CPU p50  API requests per plan
terraform 1.5.7  0                                 1.00s  2.00s  3.00s  n/a      LIST=0
tofu 1.12.6      50 kmshealth_apiservice_cabundle  1.50s  1.50s  1.50s  1.00s    GET apiservices=50
tofu 1.12.6      50 kubectl_manifest               2.00s  2.00s  2.00s  2.00s    GET apiservices=50
tofu 1.12.6: 50 kmshealth_apiservice_cabundle / 50 kubectl_manifest, alternating runs: wall p50 0.75, CPU p50 0.50
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestKubectlTF(t *testing.T) {
	pem := "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	got := kubectlTF("/tmp/kubeconfig", []string{pem, pem})
	for _, want := range []string{
		`source = "gavinbunney/kubectl"`,
		`config_path      = "/tmp/kubeconfig"`,
		`resource "kubectl_manifest" "r1" {`,
		"  name: v1.k1.bench.example.com\n",
		"  caBundle: " + base64.StdEncoding.EncodeToString([]byte(pem)) + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("main.tf lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "resource "); n != 2 {
		t.Errorf("%d resource blocks, want 2", n)
	}
}

func TestParsePeerFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    string // counts rounds corruptions
		wantErr string
	}{
		{args: nil, want: "[1 200] 3 30"},
		{args: []string{"-counts=5, 10", "-rounds=1", "-corruptions=2"}, want: "[5 10] 1 2"},
		{args: []string{"-counts=200,1"}, wantErr: "want ascending"},
		{args: []string{"-counts=0"}, wantErr: "-counts: 0: want 1..2000"},
		{args: []string{"-counts=x"}, wantErr: `"x" is not a number`},
		{args: []string{"-counts="}, wantErr: "-counts is empty"},
		{args: []string{"-rounds=0"}, wantErr: "-rounds=0"},
		{args: []string{"-corruptions=0"}, wantErr: "-corruptions=0"},
		{args: []string{"-base=" + os.Args[0]}, want: "[1 200] 3 30 base"},
		{args: []string{"-base=/nonexistent/kmshealth"}, wantErr: "-base: stat /nonexistent/kmshealth"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parsePeerFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprint(got.counts, got.rounds, got.corruptions)
			if got.base != "" {
				s += " base"
			}
			if s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}

func TestSumSeries(t *testing.T) {
	m := map[string]float64{
		`controller_runtime_reconcile_total{controller="apiservice",result="success"}`: 5,
		`controller_runtime_reconcile_total{controller="apiservice",result="error"}`:   1,
		`controller_runtime_reconcile_total{controller="other",result="success"}`:      7,
		`controller_runtime_reconcile_total_x{controller="apiservice"}`:                9,
	}
	if got := cainjectorReconciles(m); got != 6 {
		t.Errorf("cainjectorReconciles = %v, want 6", got)
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

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"plan"}},
		{args: []string{"plan", "-runs=1", "-cli=tofu"}},
		{args: []string{"reconcile", "-idle=5s", "-apiservices=3"}},
		{args: []string{"kms", "-nodes=3", "-flips=1"}},
		{args: []string{"all"}},
		{args: nil, wantErr: "missing subcommand"},
		{args: []string{"plans"}, wantErr: `unknown subcommand "plans"`},
		{args: []string{"-runs=1"}, wantErr: `unknown subcommand "-runs=1"`},
		{args: []string{"all", "-runs=1"}, wantErr: "all takes no flags"},
		{args: []string{"reconcile", "extra"}, wantErr: "unexpected arguments"},
		{args: []string{"reconcile", "-resources=3"}, wantErr: "not defined"},
		{args: []string{"reconcile", "-idle=0s", "-corruptions=0"}, wantErr: "-corruptions=0"},
		{args: []string{"reconcile", "-idle=0s"}, wantErr: "-idle=0s"},
		{args: []string{"reconcile", "-unrelated=-1"}, wantErr: "-unrelated=-1"},
		{args: []string{"reconcile", "-apiservices=1000", "-steps=1,200", "-bin=/tmp/x"}},
		{args: []string{"reconcile", "-apiservices=100", "-steps=1,200"}, wantErr: "-steps=1,200: want increasing counts from 1 to below -apiservices=100"},
		{args: []string{"reconcile", "-steps=50,10"}, wantErr: "-steps=50,10"},
		{args: []string{"reconcile", "-steps=0"}, wantErr: "-steps=0"},
		{args: []string{"kms", "-flips=0"}, wantErr: "-flips=0"},
		{args: []string{"kms", "-cli=tofu"}, wantErr: "not defined"},
		{args: []string{"kms", "--", "x"}, wantErr: "unexpected arguments"},
		{args: []string{"pod", "-corruptions=3", "-apiservices=10"}},
		{args: []string{"pod", "-apiservices=0"}, wantErr: "-apiservices=0"},
		{args: []string{"pod", "-idle=1s"}, wantErr: "not defined"},
		{args: []string{"reporter"}},
		{args: []string{"reporter", "-plugins=1", "-intervals=1", "-tags=incluster", "-compare"}},
		{args: []string{"reporter", "-intervals=0"}, wantErr: "-intervals=0"},
		{args: []string{"reporter", "-nodes=3"}, wantErr: "not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			run, err := parseArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || run == nil {
				t.Fatalf("run %v, error %v", run != nil, err)
			}
		})
	}
}

func TestParseReconcileAndKMSFlags(t *testing.T) {
	r, err := parseReconcileFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r != (reconcileOptions{corruptions: 50, apiservices: 200, idle: time.Minute, unrelated: 5000}) {
		t.Errorf("reconcile defaults %+v", r)
	}
	k, err := parseKMSFlags([]string{"-plugins=2"})
	if err != nil {
		t.Fatal(err)
	}
	if k != (kmsOptions{plugins: 2, cycles: 500, intervals: 6, nodes: 100, rounds: 200, flips: 20}) {
		t.Errorf("kms options %+v", k)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep = %v, want context.Canceled", err)
	}
}

func TestCertificatesDER(t *testing.T) {
	a, b := newCA("a"), newCA("b")
	got, err := certificatesDER(append(append([]byte("# comment\n"), a...), b...))
	if err != nil || len(got) != 2 {
		t.Fatalf("certificatesDER(a+b) = %d certificates, %v; want 2", len(got), err)
	}
	if _, err := certificatesDER([]byte("not PEM")); err == nil {
		t.Error("certificatesDER(not PEM): no error")
	}
}
