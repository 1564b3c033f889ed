package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
)

// checkReconcilerMonitoring checks which of the reconciler's monitoring
// objects exist: the scraper (ServiceAccount, token Secret, ClusterRole
// and binding) and PodMonitor with monitoring on, the PrometheusRule —
// holding the reconciler's alert group — with rules on too; with
// monitoring on, the API server lets the scraper get /metrics.
func checkReconcilerMonitoring(ns, name string, on, rules bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c := reconcilerinstall.Config{Namespace: ns, Name: name}
		get := func(kind install.Kind, namespace, name string) (*unstructured.Unstructured, error) {
			ri := dynamicClient().Resource(kind.GVR)
			if namespace == "" {
				return ri.Get(ctx, name, metav1.GetOptions{})
			}
			return ri.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		}
		var errs []error
		for _, o := range []struct {
			kind            install.Kind
			namespace, name string
			want            bool
		}{
			{install.ServiceAccounts, ns, c.ScraperName(), on},
			{install.Secrets, ns, c.ScraperName() + "-token", on},
			{install.ClusterRoles, "", c.ScraperClusterRoleName(), on},
			{install.ClusterRoleBindings, "", c.ScraperClusterRoleName(), on},
			{install.PodMonitors, ns, c.ScraperName(), on},
			{install.PrometheusRules, ns, name, on && rules},
		} {
			u, err := get(o.kind, o.namespace, o.name)
			switch {
			case o.want && err != nil:
				errs = append(errs, fmt.Errorf("%s %s: %w", o.kind.Name, o.name, err))
			case !o.want && err == nil:
				errs = append(errs, fmt.Errorf("%s %s exists; want none", o.kind.Name, o.name))
			case !o.want && !apierrors.IsNotFound(err): // a kind that is not served is NotFound too
				errs = append(errs, fmt.Errorf("%s %s: %w", o.kind.Name, o.name, err))
			case o.want && o.kind == install.PrometheusRules:
				groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
				if len(groups) != 1 || groups[0].(map[string]any)["name"] != monitoring.GroupReconciler {
					errs = append(errs, fmt.Errorf("PrometheusRule %s/%s groups %v; want the one group %s", ns, name, groups, monitoring.GroupReconciler))
				}
			}
		}
		if on {
			r, err := env.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:                  "system:serviceaccount:" + ns + ":" + c.ScraperName(),
				Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			}}, metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("SubjectAccessReview: %w", err))
			} else if !r.Status.Allowed {
				errs = append(errs, errors.New("the scraper may not get /metrics"))
			}
		}
		return errors.Join(errs...)
	}
}

// TestAccReconciler_monitoring: monitoring on a cluster without
// prometheus-operator applies (with a warning), writes nothing — not even
// the scraper — and plans empty; once the CRDs exist the next plan shows
// the objects missing and the apply writes them against the published
// schemas, the reconciler's alert group only; import reads monitoring
// back; rules and monitoring turned off remove their objects; destroy
// leaves nothing.
func TestAccReconciler_monitoring(t *testing.T) {
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := "rec-mon"
	base := fmt.Sprintf("namespace = %q\n  name = %q\n  replicas = 1\n", ns, name)
	on := reconcilerConfig(base + `  monitoring = { labels = { release = "kps" } }`)
	noRules := reconcilerConfig(base + `  monitoring = { rules = false }`)
	off := reconcilerConfig(base)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkUninstalled(ns, name), checkReconcilerMonitoring(ns, name, false, false)),
		Steps: []resource.TestStep{
			{Config: on, Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(reconcilerAddr, "objects_in_sync", "true"),
				resource.TestCheckResourceAttr(reconcilerAddr, "monitoring.rules", "true"),
				checkReconcilerMonitoring(ns, name, false, false), // no prometheus-operator: nothing written
			)},
			{
				PreConfig:          func() { installPrometheusOperatorCRDs(t) },
				Config:             on,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true, // the monitoring objects are missing now
			},
			{Config: on, Check: checkReconcilerMonitoring(ns, name, true, true)},
			{ResourceName: reconcilerAddr, ImportState: true, ImportStateId: ns + "/" + name, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"wait_for_rollout"}},
			{Config: noRules, Check: checkReconcilerMonitoring(ns, name, true, false)},
			{Config: off, Check: checkReconcilerMonitoring(ns, name, false, false)},
			{Config: on, Check: checkReconcilerMonitoring(ns, name, true, true)},
		},
	})
}

// planResource plans a new typeName with attrs set (all others null)
// through the provider's protocol server, configured for the test control
// plane, as a CLI would, and returns the plan's diagnostics: the warnings
// too, which the CLI-driven tests cannot see. An error diagnostic fails the
// test.
func planResource(t *testing.T, typeName string, attrs map[string]tftypes.Value) []*tfprotov6.Diagnostic {
	t.Helper()
	ctx := context.Background()
	srv, err := protoV6["kmshealth"]()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	dynamic := func(typ tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
		dv, err := tfprotov6.NewDynamicValue(typ, v)
		if err != nil {
			t.Fatal(err)
		}
		return &dv
	}
	providerType := schemas.Provider.ValueType()
	cfg, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{
		TerraformVersion: "1.5.7",
		Config:           dynamic(providerType, objectWith(providerType, map[string]tftypes.Value{"config_path": tftypes.NewValue(tftypes.String, env.Kubeconfig)})),
	})
	if err != nil || hasError(cfg.Diagnostics) {
		t.Fatalf("configure the provider: %v %v", err, cfg.Diagnostics)
	}
	resType := schemas.ResourceSchemas[typeName].ValueType()
	config := objectWith(resType, attrs)
	plan, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName:         typeName,
		Config:           dynamic(resType, config),
		ProposedNewState: dynamic(resType, config),
		PriorState:       dynamic(resType, tftypes.NewValue(resType, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if hasError(plan.Diagnostics) {
		t.Fatalf("plan: %v", plan.Diagnostics)
	}
	return plan.Diagnostics
}

// objectWith is an object of typ with attrs set and every other attribute
// null.
func objectWith(typ tftypes.Type, attrs map[string]tftypes.Value) tftypes.Value {
	obj := typ.(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range obj.AttributeTypes {
		if v, ok := attrs[name]; ok {
			vals[name] = v
		} else {
			vals[name] = tftypes.NewValue(at, nil)
		}
	}
	return tftypes.NewValue(typ, vals)
}

func hasError(diags []*tfprotov6.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

// monitoringWarning is the plan's warning at monitoring, if any.
func monitoringWarning(diags []*tfprotov6.Diagnostic) *tfprotov6.Diagnostic {
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityWarning && d.Attribute != nil && d.Attribute.String() == tftypes.NewAttributePath().WithAttributeName("monitoring").String() {
			return d
		}
	}
	return nil
}

// TestMonitoring_planWarning: the plan of a reconciler or a reporter with
// monitoring warns, at monitoring, that prometheus-operator is not
// installed while its CRDs are not served — and does not fail —, and
// stops warning once they are; without monitoring it never warns.
// Not parallel: the CRDs are cluster-wide.
func TestMonitoring_planWarning(t *testing.T) {
	monType := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"labels": tftypes.Map{ElementType: tftypes.String}, "rules": tftypes.Bool}}
	ns := map[string]tftypes.Value{"namespace": tftypes.NewValue(tftypes.String, "kmshealth-system")}
	withMonitoring := map[string]tftypes.Value{
		"namespace": ns["namespace"],
		"monitoring": tftypes.NewValue(monType, map[string]tftypes.Value{
			"labels": tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
			"rules":  tftypes.NewValue(tftypes.Bool, nil),
		}),
	}
	resources := []string{"kmshealth_reconciler", "kmshealth_reporter"}
	for _, typ := range resources {
		d := monitoringWarning(planResource(t, typ, withMonitoring))
		if d == nil || d.Summary != "prometheus-operator is not installed" || !strings.Contains(d.Detail, "no monitoring object is written") {
			t.Errorf("%s plan without prometheus-operator: monitoring warning %+v; want \"prometheus-operator is not installed\"", typ, d)
		}
		if d := monitoringWarning(planResource(t, typ, ns)); d != nil {
			t.Errorf("%s plan without monitoring: warning %+v", typ, d)
		}
	}
	installPrometheusOperatorCRDs(t)
	for _, typ := range resources {
		if d := monitoringWarning(planResource(t, typ, withMonitoring)); d != nil {
			t.Errorf("%s plan with prometheus-operator installed: warning %+v", typ, d)
		}
	}
}
