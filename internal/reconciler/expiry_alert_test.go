package reconciler

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// TestReconcileCABundleExpiryAlertFires: the real reconciler keeps a
// caBundle whose certificate expires in five days; the gauge scraped from
// its /metrics, fed to `promtool test rules` with the real rule file
// (internal/monitoring/rules.yaml), fires KMSHealthCABundleExpiresIn7Days
// and leaves KMSHealthCABundleExpiresIn30Days silent. After the source
// rotates to a CA good for a year, the scraped gauge fires neither.
//
// promtool evaluates from time 0, so each scraped not_after is fed as
// the seconds it had left at the scrape (not_after - scrape time): the
// rule's `not_after - time()` then sees, at promtool's evaluation time,
// the lifetime the certificate would have left that much after the scrape.
func TestReconcileCABundleExpiryAlertFires(t *testing.T) {
	promtool := os.Getenv("KMSHEALTH_PROMTOOL")
	if promtool == "" {
		t.Fatal("KMSHEALTH_PROMTOOL is not set: run KMSHEALTH_PROMTOOL=$(bash tools/install.sh promtool) go test ./internal/reconciler/ (make integration does)")
	}
	name := unique(t)
	apiservice := apiserviceName(name)
	soon := time.Now().Add(5 * 24 * time.Hour).Truncate(time.Second)
	later := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	src := managed(t, name, testpki.MustCertPEM("expiring", testpki.Options{NotAfter: soon}))
	p := startReconciler(t, "--leader-elect=false")

	notAfter := `kmshealth_cabundle_not_after_timestamp_seconds{controller="cabundle",object="` + apiservice + `"}`
	p.waitMetric(t, notAfter, float64(soon.Unix()))
	runPromtool(t, promtool, scrapedNotAfter(t, p, apiservice), map[string]bool{
		"KMSHealthCABundleExpiresIn7Days":  true,
		"KMSHealthCABundleExpiresIn30Days": false,
	})

	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cm, err := cms.Get(context.Background(), src.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ca.crt"] = string(testpki.MustCertPEM("renewed", testpki.Options{NotAfter: later}))
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitMetric(t, notAfter, float64(later.Unix()))
	runPromtool(t, promtool, scrapedNotAfter(t, p, apiservice), map[string]bool{
		"KMSHealthCABundleExpiresIn7Days":  false,
		"KMSHealthCABundleExpiresIn30Days": false,
	})
}

// scraped is one scraped series and the time of the scrape.
type scraped struct {
	sample devenv.Sample
	at     time.Time
}

// scrapedNotAfter scrapes the reconciler once and returns apiservice's
// not_after series as exposed.
func scrapedNotAfter(t *testing.T, p *reconcilerProcess, apiservice string) scraped {
	t.Helper()
	samples, err := p.Samples()
	at := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if s.Name == "kmshealth_cabundle_not_after_timestamp_seconds" && s.Labels["object"] == apiservice {
			return scraped{sample: s, at: at}
		}
	}
	t.Fatalf("no kmshealth_cabundle_not_after_timestamp_seconds series for %s in the scrape", apiservice)
	return scraped{}
}

// evalAfter is when promtool evaluates the alerts: past every caBundle
// alert's `for` (1h for the 30-day alert).
const evalAfter = 90 * time.Minute

// runPromtool writes a promtool rules test whose one input series is s —
// its labels as scraped, plus the namespace and pod a PodMonitor adds, its
// value the seconds left at the scrape — and expects each alert of want to
// fire (true) or stay silent (false) at evalAfter, with the labels and
// annotations the real rule gives it.
func runPromtool(t *testing.T, promtool string, s scraped, want map[string]bool) {
	t.Helper()
	rulesFile, err := filepath.Abs(filepath.Join("..", "monitoring", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"namespace": "kmshealth", "pod": "kmshealth-reconciler-0"}
	for k, v := range s.sample.Labels {
		labels[k] = v
	}
	left := int64(s.sample.Value) - s.at.Unix()
	steps := int(evalAfter/time.Minute) + 1
	// The value promtool's `not_after - time()` has at evalAfter.
	valueAtEval := left - int64(evalAfter/time.Second)

	var cases []any
	for _, alert := range sortedKeys(want) {
		exp := []any{}
		if want[alert] {
			exp = append(exp, map[string]any{
				"exp_labels":      expectedLabels(t, alert, labels),
				"exp_annotations": expectedAnnotations(t, alert, labels, valueAtEval),
			})
		}
		cases = append(cases, map[string]any{"eval_time": evalAfter.String(), "alertname": alert, "exp_alerts": exp})
	}
	test := map[string]any{
		"rule_files":          []string{rulesFile},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m",
			"input_series": []any{map[string]any{
				"series": seriesString(s.sample.Name, labels),
				"values": fmt.Sprintf("%dx%d", left, steps),
			}},
			"alert_rule_test": cases,
		}},
	}
	b, err := yaml.Marshal(test)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "expiry_test.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules (scraped %s = %v at %s, %ds left): %v\n%s\ntest file:\n%s",
			seriesString(s.sample.Name, s.sample.Labels), s.sample.Value, s.at.Format(time.RFC3339), left, err, out, b)
	}
}

// rule is one alert of the real rule file.
func rule(t *testing.T, alert string) (labels, annotations map[string]string) {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(monitoring.Rules, &f); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == alert {
				return r.Labels, r.Annotations
			}
		}
	}
	t.Fatalf("rules.yaml has no alert %s", alert)
	return nil, nil
}

// expectedLabels are the firing alert's labels: the rule's, and the
// series labels its expression keeps (namespace, controller, object).
func expectedLabels(t *testing.T, alert string, series map[string]string) map[string]string {
	t.Helper()
	ruleLabels, _ := rule(t, alert)
	out := map[string]string{}
	for k, v := range ruleLabels {
		out[k] = v
	}
	for _, k := range []string{"namespace", "controller", "object"} {
		out[k] = series[k]
	}
	return out
}

// expectedAnnotations fills the rule's annotation templates the way
// Prometheus would for this alert: the labels it uses and the value,
// humanized as a duration.
func expectedAnnotations(t *testing.T, alert string, series map[string]string, value int64) map[string]string {
	t.Helper()
	_, annotations := rule(t, alert)
	r := strings.NewReplacer(
		"{{ $labels.object }}", series["object"],
		"{{ $labels.controller }}", series["controller"],
		"{{ $labels.namespace }}", series["namespace"],
		"{{ $value | humanizeDuration }}", humanizeDuration(value),
	)
	out := map[string]string{}
	for k, v := range annotations {
		out[k] = r.Replace(v)
		if strings.Contains(out[k], "{{") {
			t.Fatalf("alert %s: annotation %s has a template this test does not fill: %s", alert, k, v)
		}
	}
	return out
}

// humanizeDuration is Prometheus' template function for a whole number of
// seconds of at least a day: "<d>d <h>h <m>m <s>s".
func humanizeDuration(seconds int64) string {
	sign := ""
	if seconds < 0 {
		sign, seconds = "-", -seconds
	}
	return fmt.Sprintf("%s%dd %dh %dm %ds", sign, seconds/86400, seconds/3600%24, seconds/60%60, seconds%60)
}

func seriesString(name string, labels map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(labels) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
