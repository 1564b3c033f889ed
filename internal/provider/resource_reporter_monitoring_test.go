package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
)

// prometheusOperatorCRDs are the published PodMonitor and PrometheusRule
// CRDs (see internal/reporterinstall/testdata/prometheus-operator).
var prometheusOperatorCRDs = []string{"monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"}

// installPrometheusOperatorCRDs installs them and waits until discovery
// serves them; Cleanup deletes them again and waits until they are gone,
// so the package's other tests see a cluster without prometheus-operator.
func installPrometheusOperatorCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := install.Clients{Core: env.Clientset(), Dynamic: dynamicClient()}
	d := install.Declaration{Owner: install.Owner{App: "test", NamespaceLabel: "test.kmshealth.io/ns", Namespace: "default", Name: "prometheus-operator"}, Namespace: "default"}
	var names []string
	for _, f := range prometheusOperatorCRDs {
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
		for _, n := range names {
			_ = dynamicClient().Resource(install.CustomResourceDefinitions.GVR).Delete(ctx, n, metav1.DeleteOptions{})
			if err := kube.WaitGone(ctx, dynamicClient().Resource(install.CustomResourceDefinitions.GVR), n); err != nil {
				t.Error(err)
			}
		}
	})
	if err := install.Apply(ctx, cl, d); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return install.MonitoringAvailable(ctx, cl)
	}); err != nil {
		t.Fatalf("discovery does not serve the prometheus-operator CRDs: %v", err)
	}
}

// checkMonitoring checks whether the PodMonitor and the PrometheusRule
// exist.
func checkMonitoring(ns, name string, podMonitor, rule bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c := reporterinstall.Config{Namespace: ns, Name: name}
		for _, o := range []struct {
			kind install.Kind
			name string
			want bool
		}{{install.PodMonitors, c.ScraperName(), podMonitor}, {install.PrometheusRules, name, rule}} {
			_, err := dynamicClient().Resource(o.kind.GVR).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
			switch {
			case o.want && err != nil:
				return fmt.Errorf("%s %s/%s: %w", o.kind.Name, ns, o.name, err)
			case !o.want && err == nil:
				return fmt.Errorf("%s %s/%s exists; want none", o.kind.Name, ns, o.name)
			case !o.want && !apierrors.IsNotFound(err):
				return fmt.Errorf("%s %s/%s: %w", o.kind.Name, ns, o.name, err)
			}
		}
		return nil
	}
}

// TestAccReporter_monitoring: monitoring on a cluster without
// prometheus-operator applies (with a warning), writes nothing and plans
// empty; once the CRDs exist the next plan shows the objects missing and
// the apply writes them against the published schemas; rules and
// monitoring turned off remove them; destroy leaves nothing.
func TestAccReporter_monitoring(t *testing.T) {
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := reporterinstall.DefaultName
	on := reporterConfig(fmt.Sprintf("namespace = %q\nmonitoring = { labels = { release = \"kps\" } }", ns))
	noRules := reporterConfig(fmt.Sprintf("namespace = %q\nmonitoring = { rules = false }", ns))
	off := reporterConfig(fmt.Sprintf("namespace = %q", ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkReporterUninstalled(ns, name), checkCRDGone),
		Steps: []resource.TestStep{
			{Config: on, Check: resource.TestCheckResourceAttr(reporterAddr, "objects_in_sync", "true")},
			{
				PreConfig:          func() { installPrometheusOperatorCRDs(t) },
				Config:             on,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true, // the monitoring objects are missing now
			},
			{Config: on, Check: checkMonitoring(ns, name, true, true)},
			{Config: noRules, Check: checkMonitoring(ns, name, true, false)},
			{Config: off, Check: checkMonitoring(ns, name, false, false)},
			{Config: on, Check: checkMonitoring(ns, name, true, true)},
		},
	})
}
