package rbacproxy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// clients talk to env.
func clients() install.Clients {
	return install.Clients{Core: env.Clientset(), Dynamic: dynamic.NewForConfigOrDie(env.RESTConfig())}
}

// ensureNamespace creates a namespace of its own for the test, with a
// Deployment "web" (pods running as ServiceAccount "web-sa") and Services
// "web" and "other" selecting its pods, as a workload's installer would.
func ensureNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	cs := env.Clientset()
	ns := strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = strings.Trim(ns[:50], "-")
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	create := metav1.CreateOptions{FieldManager: "installer"}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			ServiceAccountName: "web-sa",
			Containers:         []corev1.Container{{Name: "app", Image: "registry.example/app:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
		}},
	}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, create); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "other"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		}}
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, create); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func servicePorts(t *testing.T, ns, name string) []string {
	t.Helper()
	svc, err := env.Clientset().CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, p.Name)
	}
	return out
}

// TestEnsure: rbacproxy.Ensure writes every object of a rbacproxy.Config, takes the
// ServiceAccount from the live pods, leaves the cluster in sync (Drift
// finds nothing), and, given the Service of the previous write, moves the
// proxy port from it to the new one.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	ns := ensureNamespace(t)
	c := rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "web"}, UpstreamPort: 8081, ServiceName: "web"}

	got, err := rbacproxy.Ensure(ctx, clients(), c, rbacproxy.EnsureOptions{})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if got.ServiceAccountName != "web-sa" {
		t.Errorf("rbacproxy.Ensure returned ServiceAccountName %q, want the pods' web-sa", got.ServiceAccountName)
	}
	live, err := rbacproxy.Observe(ctx, clients(), got)
	if err != nil {
		t.Fatal(err)
	}
	if drift, err := got.Drift(live); err != nil || len(drift) > 0 {
		t.Fatalf("after Ensure: drift %q, %v; want none", drift, err)
	}
	if !slices.Contains(servicePorts(t, ns, "web"), rbacproxy.ServicePortName) {
		t.Errorf("Service web has no port %q after Ensure", rbacproxy.ServicePortName)
	}

	// Again, with the plan's ServiceAccount and to the other Service.
	c.ServiceName = "other"
	if _, err := rbacproxy.Ensure(ctx, clients(), c, rbacproxy.EnsureOptions{PlannedServiceAccount: "web-sa", PriorServiceName: "web"}); err != nil {
		t.Fatalf("rbacproxy.Ensure to Service other: %v", err)
	}
	if ports := servicePorts(t, ns, "web"); slices.Contains(ports, rbacproxy.ServicePortName) || !slices.Contains(ports, "http") {
		t.Errorf("Service web has ports %v after the move, want only its own http", ports)
	}
	if !slices.Contains(servicePorts(t, ns, "other"), rbacproxy.ServicePortName) {
		t.Errorf("Service other has no port %q after the move", rbacproxy.ServicePortName)
	}
}

// TestEnsureRefuses: what keeps a rbacproxy.Config from working stops rbacproxy.Ensure before
// its first write, at the step and field that say what to change.
func TestEnsureRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config func(ns string) rbacproxy.Config
		opts   rbacproxy.EnsureOptions
		step   rbacproxy.Step
		field  string // "" for an error that is not a field error
		want   string
	}{
		{
			name: "missing workload",
			config: func(ns string) rbacproxy.Config {
				return rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "gone"}, UpstreamPort: 8081}
			},
			step: rbacproxy.StepCheck, field: "target", want: "does not exist: create it first",
		},
		{
			name: "missing Service",
			config: func(ns string) rbacproxy.Config {
				return rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "web"}, UpstreamPort: 8081, ServiceName: "nope"}
			},
			step: rbacproxy.StepCheck, field: "serviceName", want: "/nope does not exist",
		},
		{
			name: "port the pod already uses",
			config: func(ns string) rbacproxy.Config {
				return rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "web"}, UpstreamPort: 9000, ListenPort: 8080}
			},
			step: rbacproxy.StepCheck, field: "listenPort", want: `8080 is already declared by container "app"`,
		},
		{
			name: "ServiceAccount changed since the plan",
			config: func(ns string) rbacproxy.Config {
				return rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "web"}, UpstreamPort: 8081}
			},
			opts: rbacproxy.EnsureOptions{PlannedServiceAccount: "planned-sa"},
			step: rbacproxy.StepCheck, want: `now run as ServiceAccount "web-sa", the plan was made for "planned-sa"`,
		},
		{
			name: "invalid config",
			config: func(ns string) rbacproxy.Config {
				return rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "web"}, UpstreamPort: 8081, IgnorePaths: []string{"metrics"}}
			},
			step: rbacproxy.StepValidate, field: "ignorePaths[0]", want: "is not a path pattern",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cs := env.Clientset()
			ns := ensureNamespace(t)
			c := tc.config(ns)
			_, err := rbacproxy.Ensure(ctx, clients(), c, tc.opts)
			var se *rbacproxy.StepError
			if !errors.As(err, &se) || se.Step != tc.step || se.Written() {
				t.Fatalf("rbacproxy.Ensure = %v, want a rbacproxy.StepError at step %d before any write", err, tc.step)
			}
			if tc.field != "" {
				if es := rbacproxy.FieldErrors(err); !hasFieldError(es, tc.field, tc.want) {
					t.Errorf("rbacproxy.Ensure = %v, want a field error on %s containing %q", err, tc.field, tc.want)
				}
			} else if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rbacproxy.Ensure = %v, want it to contain %q", err, tc.want)
			}
			// Nothing of ours was written.
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, rbacproxy.ObjectName(c.Target), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused rbacproxy.Ensure left the config ConfigMap: %v", err)
			}
			if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, rbacproxy.ClusterRoleBindingName(c.Target), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused rbacproxy.Ensure left the binding: %v", err)
			}
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Spec.Template.Spec.InitContainers) > 0 {
				t.Errorf("a refused rbacproxy.Ensure added init containers %v", d.Spec.Template.Spec.InitContainers)
			}
		})
	}
}

// TestEnsureStepErrorWritten: from the apply on, a failed Ensure may have
// written something, which the caller must remember.
func TestEnsureStepErrorWritten(t *testing.T) {
	for step, want := range map[rbacproxy.Step]bool{
		rbacproxy.StepRead: false, rbacproxy.StepCheck: false, rbacproxy.StepValidate: false, rbacproxy.StepApply: true, rbacproxy.StepRelease: true,
	} {
		if got := (&rbacproxy.StepError{Step: step, Err: fmt.Errorf("x")}).Written(); got != want {
			t.Errorf("step %d: Written() = %v, want %v", step, got, want)
		}
	}
}

func hasFieldError(es field.ErrorList, fld, part string) bool {
	return slices.ContainsFunc(es, func(e *field.Error) bool { return e.Field == fld && strings.Contains(e.Detail, part) })
}

// TestUninstallLeavesWhatIsNotOurs: Uninstall deletes kmshealth's objects
// for its own target only. A ConfigMap at our name applied by the
// kmshealth field manager but without our labels (which an installation's
// ownership test would take for its own), and a binding of our name
// marked for another target, are someone else's and stay; the NetworkPolicy
// a write disabled is gone already, and the Deployment stays.
func TestUninstallLeavesWhatIsNotOurs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := env.Clientset()
	ns := ensureNamespace(t)
	c := rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: ns, Name: "web"}, UpstreamPort: 8081,
		NetworkPolicy: rbacproxy.NetworkPolicy{Enabled: true}}
	if _, err := rbacproxy.Ensure(ctx, clients(), c, rbacproxy.EnsureOptions{}); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	npName := rbacproxy.ObjectName(c.Target)
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, npName, metav1.GetOptions{}); err != nil {
		t.Fatalf("NetworkPolicy after Ensure: %v", err)
	}
	c.NetworkPolicy.Enabled = false
	if _, err := rbacproxy.Ensure(ctx, clients(), c, rbacproxy.EnsureOptions{}); err != nil {
		t.Fatalf("Ensure without a NetworkPolicy: %v", err)
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, npName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("NetworkPolicy after it was turned off: %v, want NotFound", err)
	}

	// Make the ConfigMap and the binding someone else's.
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, npName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Labels = nil
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: rbacproxy.FieldManager}); err != nil {
		t.Fatal(err)
	}
	crbName := rbacproxy.ClusterRoleBindingName(c.Target)
	crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, crbName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crbName, metav1.DeleteOptions{})
	})
	crb.Annotations[rbacproxy.TargetAnnotation] = "Deployment/other/web"
	if _, err := cs.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := c.Uninstall(ctx, clients()); err != nil {
		t.Fatalf("Uninstall: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, npName, metav1.GetOptions{}); err != nil {
		t.Errorf("Uninstall deleted a ConfigMap that is not ours (no labels): %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, crbName, metav1.GetOptions{}); err != nil {
		t.Errorf("Uninstall deleted a binding marked for another target: %v", err)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment after Uninstall: %v", err)
	}
	if len(d.Spec.Template.Spec.InitContainers) > 0 || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("after Uninstall: init containers %v, containers %d; want the user's container alone", d.Spec.Template.Spec.InitContainers, len(d.Spec.Template.Spec.Containers))
	}
}
