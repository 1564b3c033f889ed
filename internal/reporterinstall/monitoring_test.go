package reporterinstall

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
)

// installPrometheusOperatorCRDs installs the published PodMonitor and
// PrometheusRule CRDs (testdata/prometheus-operator) and waits until
// discovery serves them.
func installPrometheusOperatorCRDs(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := install.Declaration{Owner: install.Owner{App: "test", NamespaceLabel: "test.kmshealth.io/ns", Namespace: "default", Name: "prometheus-operator"}, Namespace: "default"}
	for _, f := range []string{"monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "prometheus-operator", f))
		must(t, err)
		crd := &unstructured.Unstructured{}
		must(t, yaml.Unmarshal(b, &crd.Object))
		d.Objects = append(d.Objects, install.Object{ID: install.ID{Kind: install.CustomResourceDefinitions, Name: crd.GetName()},
			Body: crd, Shared: true, Ready: kmshealth.Established})
	}
	must(t, install.Apply(ctx, installClients(t), d))
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return install.MonitoringAvailable(ctx, installClients(t))
	})
	if err != nil {
		t.Fatalf("the prometheus-operator CRDs are established but discovery does not serve them: %v", err)
	}
}

// canI asks the API server whether the ServiceAccount may do what attrs
// say (a SubjectAccessReview: what the API server itself would decide).
func canI(t *testing.T, namespace, sa string, spec authorizationv1.SubjectAccessReviewSpec) bool {
	t.Helper()
	spec.User = "system:serviceaccount:" + namespace + ":" + sa
	spec.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	core, _ := clients(t)
	r, err := core.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	must(t, err)
	return r.Status.Allowed
}

// TestMonitoring: without the prometheus-operator CRDs nothing is
// available; with the published CRDs the PodMonitor and PrometheusRule
// pass their schemas, the scraper may get /metrics and nothing else,
// turning monitoring (or its rules) off removes its objects, and Delete
// leaves nothing.
func TestMonitoring(t *testing.T) {
	ctx := context.Background()
	core, dyn := clients(t)
	if ok, err := install.MonitoringAvailable(ctx, installClients(t)); ok || err != nil {
		t.Fatalf("monitoring available before the CRDs are installed: %v (err=%v)", ok, err)
	}
	// Without the CRDs the objects are read (as missing) and not drift.
	createNamespace(t, core, "rep-mon", nil)
	c := DefaultConfig("rep-mon", "test")
	mustApply(t, c)

	installPrometheusOperatorCRDs(t)
	c.Monitoring = &Monitoring{Labels: map[string]string{"release": "kube-prometheus-stack"}, Rules: true}
	mustApply(t, c)

	pm, err := dyn.Resource(install.PodMonitors.GVR).Namespace(c.Namespace).Get(ctx, c.ScraperName(), metav1.GetOptions{})
	must(t, err)
	if pm.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("PodMonitor labels %v lack the selector label", pm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != metricsPortName {
		t.Errorf("PodMonitor endpoints %v", endpoints)
	}
	rule, err := dyn.Resource(install.PrometheusRules.GVR).Namespace(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	must(t, err)
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(groups) != 1 {
		t.Fatalf("PrometheusRule groups %v", groups)
	}
	rules, _, _ := unstructured.NestedSlice(groups[0].(map[string]any), "rules")
	var alerts []string
	for _, r := range rules {
		alerts = append(alerts, r.(map[string]any)["alert"].(string))
	}
	// The KMS alerts only: the reconciler's are kmshealth_reconciler's.
	if !slices.Contains(alerts, "KMSHealthKMSPluginsDegraded") || slices.Contains(alerts, "KMSHealthCABundleExpiresIn7Days") {
		t.Errorf("PrometheusRule alerts %v; want the KMS alerts and none of the reconciler's", alerts)
	}

	// The scraper may get /metrics, and nothing else; the reporter's own
	// ServiceAccount may not scrape.
	metrics := authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}
	if !canI(t, c.Namespace, c.ScraperName(), metrics) {
		t.Error("the scraper may not get /metrics")
	}
	if canI(t, c.Namespace, c.ServiceAccountName(), metrics) {
		t.Error("the reporter's own ServiceAccount may get /metrics")
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Namespace: c.Namespace, Verb: "get", Resource: "secrets", Name: c.ScraperName() + "-token"},
		{Verb: "list", Resource: "pods"},
		{Group: "kmshealth.io", Verb: "patch", Resource: "kmshealths", Subresource: "status", Name: "cluster"},
	} {
		if canI(t, c.Namespace, c.ScraperName(), authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &attrs}) {
			t.Errorf("the scraper may %s %s/%s %s", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Name)
		}
	}

	// A PodMonitor edited by hand is drift.
	patch := []byte(`{"spec":{"podMetricsEndpoints":[{"port":"metrics","scheme":"http"}]}}`)
	_, err = dyn.Resource(install.PodMonitors.GVR).Namespace(c.Namespace).Patch(ctx, c.ScraperName(), "application/merge-patch+json", patch, metav1.PatchOptions{FieldManager: "kubectl-edit"})
	must(t, err)
	if d := drift(t, c); !slices.Equal(d, []string{"PodMonitor rep-mon/kmshealth-reporter-metrics was changed"}) {
		t.Errorf("drift after an edit of the PodMonitor: %v", d)
	}
	mustApply(t, c)

	// Rules off: the PrometheusRule goes (a leftover of a swept kind).
	c.Monitoring.Rules = false
	mustApply(t, c)
	if _, err := dyn.Resource(install.PrometheusRules.GVR).Namespace(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PrometheusRule still there with rules off (err=%v)", err)
	}
	// Monitoring off: every monitoring object goes.
	off := c
	off.Monitoring = nil
	if d := drift(t, off); len(d) == 0 || !strings.Contains(strings.Join(d, "\n"), "left over (monitoring is off)") {
		t.Errorf("drift with monitoring turned off before the apply: %v", d)
	}
	mustApply(t, off)
	for _, o := range monitoringDeclaration(off).Objects {
		var err error
		if o.Namespace == "" {
			_, err = dyn.Resource(o.Kind.GVR).Get(ctx, o.Name, metav1.GetOptions{})
		} else {
			_, err = dyn.Resource(o.Kind.GVR).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s still there with monitoring off (err=%v)", o.ID, err)
		}
	}

	// On again, then Delete removes it all.
	mustApply(t, c)
	mustDelete(t, c, true)
	checkNothingLeft(t, c)
	if _, err := dyn.Resource(install.PodMonitors.GVR).Namespace(c.Namespace).Get(ctx, c.ScraperName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PodMonitor left after Delete (err=%v)", err)
	}
}
