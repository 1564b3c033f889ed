package reconciler

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// TestReconcileRBACProxyRestoresWholeSidecar: issue 21's bypasses, written
// as a holder of the reconciler's token would (server-side apply as the
// reconciler's field manager, image and arguments left as recorded), with
// no admission policy to stop them: the reconciler compares the whole
// sidecar and puts each back — including what server-side apply alone
// cannot remove (a hook, an exec probe, an AppArmor profile). Each restore
// is awaited on a watch of the workload.
func TestReconcileRBACProxyRestoresWholeSidecar(t *testing.T) {
	t.Parallel()
	cfg := rbacProxyFixture(t, unique(t))
	p := startRBACProxyReconciler(t, nil, cfg)
	p.rbacProxyIdle(t, "first reconcile in sync", func(m map[string]float64) bool { return m[rbacProxyInSync] >= 1 })
	ctx := context.Background()
	deployments := env.Clientset().AppsV1().Deployments("default")

	proxyWithOtherArgs := corev1ac.ExecAction().WithCommand("/usr/local/bin/kube-rbac-proxy",
		"--insecure-listen-address=0.0.0.0:9999", "--upstream=http://127.0.0.1:8080/", "--ignore-paths=/*")
	for _, tc := range []struct {
		name   string
		mutate func(*corev1ac.ContainerApplyConfiguration)
	}{
		{"exec postStart hook", func(c *corev1ac.ContainerApplyConfiguration) {
			c.WithLifecycle(corev1ac.Lifecycle().WithPostStart(corev1ac.LifecycleHandler().WithExec(proxyWithOtherArgs)))
		}},
		{"exec startupProbe", func(c *corev1ac.ContainerApplyConfiguration) {
			c.WithStartupProbe(corev1ac.Probe().WithExec(proxyWithOtherArgs))
		}},
		{"liveness probe replaced by exec", func(c *corev1ac.ContainerApplyConfiguration) {
			c.LivenessProbe = corev1ac.Probe().WithExec(corev1ac.ExecAction().WithCommand("/bin/true"))
		}},
		{"seccomp Unconfined", func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeUnconfined))
		}},
		{"AppArmor Unconfined", func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithAppArmorProfile(corev1ac.AppArmorProfile().WithType(corev1.AppArmorProfileTypeUnconfined))
		}},
		{"SELinux spc_t", func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithSELinuxOptions(corev1ac.SELinuxOptions().WithType("spc_t"))
		}},
		{"no capability drop", func(c *corev1ac.ContainerApplyConfiguration) { c.SecurityContext.Capabilities = nil }},
		{"writable root filesystem", func(c *corev1ac.ContainerApplyConfiguration) { c.SecurityContext.WithReadOnlyRootFilesystem(false) }},
		{"hostPort", func(c *corev1ac.ContainerApplyConfiguration) { c.Ports[0].WithHostPort(*c.Ports[0].ContainerPort) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, live := restoredAfter(t, cfg, func() {
				w, err := cfg.WorkloadApply("")
				if err != nil {
					t.Fatal(err)
				}
				tc.mutate(&w.Deployment.Spec.Template.Spec.InitContainers[0])
				attacked, err := deployments.Apply(ctx, w.Deployment, metav1.ApplyOptions{FieldManager: rbacproxy.FieldManager, Force: true})
				if err != nil {
					t.Fatalf("the attack itself failed: %v", err)
				}
				if inSync(cfg)(attacked) {
					t.Fatal("the attack left the sidecar in sync; the test would prove nothing")
				}
			})
			t.Logf("%s: restored %s after the write was sent", tc.name, took.Round(time.Millisecond))
			assertUserPartKept(t, live)
		})
	}

	// Destroy after restores still leaves nothing of ours: the restore's
	// JSON patch must not leave fields that releasing does not remove.
	p.Stop()
	if err := cfg.Uninstall(ctx, rbacProxyClients()); err != nil {
		t.Fatal(err)
	}
	after, err := deployments.Get(ctx, cfg.Target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hasSidecar(&after.Spec.Template) {
		t.Errorf("the sidecar, its volumes or annotation stayed after Uninstall: %+v", after.Spec.Template)
	}
}
