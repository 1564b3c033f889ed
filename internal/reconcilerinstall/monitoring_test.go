package reconcilerinstall

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
)

// installPrometheusOperatorCRDs installs the published PodMonitor and
// PrometheusRule CRDs (kept with the reporter's installer tests) and waits
// until discovery serves them; Cleanup deletes them and waits until they
// are gone, so the package's parallel tests, which start after this
// sequential one, see a cluster without prometheus-operator.
func installPrometheusOperatorCRDs(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := install.Declaration{Owner: install.Owner{App: "test", NamespaceLabel: "test.kmshealth.io/ns", Namespace: "default", Name: "prometheus-operator"}, Namespace: "default"}
	var names []string
	for _, f := range []string{"monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "reporterinstall", "testdata", "prometheus-operator", f))
		if err != nil {
			t.Fatal(err)
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &crd.Object); err != nil {
			t.Fatal(err)
		}
		names = append(names, crd.GetName())
		d.Objects = append(d.Objects, install.Object{ID: install.ID{Kind: install.CustomResourceDefinitions, Name: crd.GetName()},
			Body: crd, Shared: true, Ready: kmshealth.Established})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		crds := clients().Dynamic.Resource(install.CustomResourceDefinitions.GVR)
		for _, n := range names {
			if err := crds.Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
			if err := kube.WaitGone(ctx, crds, n); err != nil {
				t.Error(err)
			}
		}
	})
	if err := install.Apply(ctx, clients(), d); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return install.MonitoringAvailable(ctx, clients())
	}); err != nil {
		t.Fatalf("the prometheus-operator CRDs are established but discovery does not serve them: %v", err)
	}
}

// canI asks the API server whether the ServiceAccount may do what spec
// says (a SubjectAccessReview: what the API server itself decides).
func canI(t *testing.T, namespace, sa string, spec authorizationv1.SubjectAccessReviewSpec) bool {
	t.Helper()
	spec.User = "system:serviceaccount:" + namespace + ":" + sa
	spec.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	r, err := env.Clientset().AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// TestMonitoring: without the prometheus-operator CRDs nothing is
// available and an installation without monitoring has no drift; with the
// published CRDs the PodMonitor and the PrometheusRule pass their schemas,
// the rule holds the reconciler's alert group and no other, the scraper
// may get /metrics and nothing else, import reads monitoring back, an
// edited PodMonitor is drift, turning rules and then monitoring off
// removes their objects, and Delete leaves nothing. Not parallel: the
// CRDs it installs are cluster-wide.
func TestMonitoring(t *testing.T) {
	ctx := context.Background()
	dyn := clients().Dynamic
	if ok, err := install.MonitoringAvailable(ctx, clients()); ok || err != nil {
		t.Fatalf("monitoring available before the CRDs are installed: %v (err=%v)", ok, err)
	}
	createNamespace(t, env.Clientset(), "ri-mon")
	c := Config{Namespace: "ri-mon", Name: "rec", Image: install.DefaultImage("test"), Replicas: 1, Resources: DefaultResources()}
	mustApply(t, c) // the monitoring kinds are not served: read as missing, no drift

	installPrometheusOperatorCRDs(t)
	c.Monitoring = &Monitoring{Labels: map[string]string{"release": "kube-prometheus-stack"}, Rules: true}
	mustApply(t, c)

	pm, err := dyn.Resource(install.PodMonitors.GVR).Namespace(c.Namespace).Get(ctx, c.ScraperName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pm.GetLabels()["release"] != "kube-prometheus-stack" || pm.GetLabels()[install.ComponentLabel] != ComponentMonitoring {
		t.Errorf("PodMonitor labels %v", pm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 {
		t.Fatalf("PodMonitor endpoints %v", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	if ep["port"] != metricsPortName || ep["scheme"] != "https" || ep["relabelings"] != nil {
		// A node relabel would rename the KMS aggregator's own node label.
		t.Errorf("PodMonitor endpoint %v; want https on %q and no relabelings", ep, metricsPortName)
	}
	selector, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	for k, v := range c.SelectorLabels() {
		if selector[k] != v {
			t.Errorf("PodMonitor selector %v does not select the reconciler's pods (%v)", selector, c.SelectorLabels())
		}
	}

	rule, err := dyn.Resource(install.PrometheusRules.GVR).Namespace(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(groups) != 1 || groups[0].(map[string]any)["name"] != monitoring.GroupReconciler {
		t.Fatalf("PrometheusRule groups %v; want the one group %s", groups, monitoring.GroupReconciler)
	}
	var alerts []string
	for _, r := range groups[0].(map[string]any)["rules"].([]any) {
		alerts = append(alerts, r.(map[string]any)["alert"].(string))
	}
	slices.Sort(alerts)
	want := []string{"KMSHealthCABundleExpiresIn30Days", "KMSHealthCABundleExpiresIn7Days", "KMSHealthReconcileErrors",
		"KMSHealthReconcilerNotLeading", "KMSHealthRestoreStorm"}
	if !slices.Equal(alerts, want) {
		t.Errorf("PrometheusRule alerts %v, want %v", alerts, want)
	}

	// The scraper may get /metrics, and nothing else; the reconciler's own
	// ServiceAccount may not scrape.
	metrics := authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}
	if !canI(t, c.Namespace, c.ScraperName(), metrics) {
		t.Error("the scraper may not get /metrics")
	}
	if canI(t, c.Namespace, c.ServiceAccountName(), metrics) {
		t.Error("the reconciler's own ServiceAccount may get /metrics")
	}
	for _, spec := range []authorizationv1.SubjectAccessReviewSpec{
		{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "post"}},
		{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz/etcd", Verb: "get"}},
		{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.Namespace, Verb: "get", Resource: "secrets", Name: c.ScraperName() + "-token"}},
		{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.Namespace, Verb: "get", Resource: "configmaps", Name: c.RecordName()}},
		{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}},
		{ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "apiregistration.k8s.io", Verb: "patch", Resource: "apiservices"}},
	} {
		if canI(t, c.Namespace, c.ScraperName(), spec) {
			t.Errorf("the scraper may %+v %+v", spec.NonResourceAttributes, spec.ResourceAttributes)
		}
	}

	// Import reads the monitoring back.
	if got := observe(t, c).Config().Monitoring; got == nil || !got.Rules || len(got.Labels) != 1 || got.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("Config().Monitoring = %+v, want %+v", got, c.Monitoring)
	}

	// A PodMonitor edited by hand is drift.
	patch := []byte(`{"spec":{"podMetricsEndpoints":[{"port":"metrics","scheme":"http"}]}}`)
	if _, err := dyn.Resource(install.PodMonitors.GVR).Namespace(c.Namespace).Patch(ctx, c.ScraperName(), "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if d := drift(t, c); !slices.Equal(d, []string{"PodMonitor ri-mon/rec-metrics was changed"}) {
		t.Errorf("drift after an edit of the PodMonitor: %v", d)
	}
	mustApply(t, c)

	// Rules off: the PrometheusRule goes (a leftover of a swept kind).
	c.Monitoring.Rules = false
	mustApply(t, c)
	if _, err := dyn.Resource(install.PrometheusRules.GVR).Namespace(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PrometheusRule still there with rules off (err=%v)", err)
	}
	if got := observe(t, c).Config().Monitoring; got == nil || got.Rules {
		t.Errorf("Config().Monitoring with rules off = %+v", got)
	}
	// Monitoring off: every monitoring object goes.
	off := c
	off.Monitoring = nil
	if d := drift(t, off); !strings.Contains(strings.Join(d, "\n"), "left over (monitoring is off)") {
		t.Errorf("drift with monitoring turned off before the apply: %v", d)
	}
	mustApply(t, off)
	gone := func(when string) {
		t.Helper()
		for _, o := range monitoringDeclaration(off).Objects {
			ri := dyn.Resource(o.Kind.GVR)
			var err error
			if o.Namespace == "" {
				_, err = ri.Get(ctx, o.Name, metav1.GetOptions{})
			} else {
				_, err = ri.Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			}
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s still there %s (err=%v)", o.ID, when, err)
			}
		}
	}
	gone("with monitoring off")
	if got := observe(t, off).Config().Monitoring; got != nil {
		t.Errorf("Config().Monitoring with monitoring off = %+v", got)
	}

	// On again, then Delete removes it all.
	mustApply(t, c)
	if err := Delete(ctx, clients(), c.Namespace, c.Name, false); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, c)
	gone("after Delete")
}

// TestMonitoringInvalidLabels: a bad monitoring label is refused before
// any write, naming the label.
func TestMonitoringInvalidLabels(t *testing.T) {
	c := testConfig()
	c.Monitoring = &Monitoring{Labels: map[string]string{"bad key!": "x", "ok": "bad value!"}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `monitoring.labels: key "bad key!"`) || !strings.Contains(err.Error(), `monitoring.labels["ok"]`) {
		t.Errorf("Validate() = %v; want both labels named", err)
	}
}
