package reconcilerinstall

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// sidecarBypasses are issue 21's ways to loosen the kube-rbac-proxy
// sidecar that a policy naming forbidden fields let through: each leaves
// the image and arguments as recorded.
func sidecarBypasses() map[string]func(*corev1ac.ContainerApplyConfiguration) {
	proxyWithOtherArgs := corev1ac.ExecAction().WithCommand("/usr/local/bin/kube-rbac-proxy",
		"--insecure-listen-address=0.0.0.0:9999", "--upstream=http://127.0.0.1:8080/", "--ignore-paths=/*")
	return map[string]func(*corev1ac.ContainerApplyConfiguration){
		"an exec postStart hook running a second, unauthenticated proxy": func(c *corev1ac.ContainerApplyConfiguration) {
			c.WithLifecycle(corev1ac.Lifecycle().WithPostStart(corev1ac.LifecycleHandler().WithExec(proxyWithOtherArgs)))
		},
		"an exec startupProbe running a second, unauthenticated proxy": func(c *corev1ac.ContainerApplyConfiguration) {
			c.WithStartupProbe(corev1ac.Probe().WithExec(proxyWithOtherArgs))
		},
		"the liveness probe replaced by an exec command": func(c *corev1ac.ContainerApplyConfiguration) {
			c.LivenessProbe = corev1ac.Probe().WithExec(corev1ac.ExecAction().WithCommand("/bin/true"))
		},
		"seccomp Unconfined": func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeUnconfined))
		},
		"AppArmor Unconfined": func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithAppArmorProfile(corev1ac.AppArmorProfile().WithType(corev1.AppArmorProfileTypeUnconfined))
		},
		"SELinux type spc_t": func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithSELinuxOptions(corev1ac.SELinuxOptions().WithType("spc_t"))
		},
		"no capability drop": func(c *corev1ac.ContainerApplyConfiguration) { c.SecurityContext.Capabilities = nil },
		"a writable root filesystem": func(c *corev1ac.ContainerApplyConfiguration) {
			c.SecurityContext.WithReadOnlyRootFilesystem(false)
		},
		"a hostPort on the proxy's port": func(c *corev1ac.ContainerApplyConfiguration) {
			c.Ports[0].WithHostPort(*c.Ports[0].ContainerPort)
		},
	}
}

// TestReconcilerRBACProxyWholePin: with the reconciler's real pod-bound
// token, every bypass of issue 21 is denied by the API server naming the
// rule — the sidecar loosened while its image and arguments stay, and a
// rollout target or an unrelated workload scaled through /scale — first
// under the RBAC the installation grants, then with the built-in edit
// ClusterRole also bound to the reconciler's ServiceAccount (the policy,
// not RBAC, then decides).
func TestReconcilerRBACProxyWholePin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	for _, ns := range []string{"krp-pin", "krp-pin-app"} {
		createNamespace(t, core, ns)
	}
	createDeployment(t, core, "krp-pin-app", "api")
	createDeployment(t, core, "krp-pin-app", "other")
	cfg := rbacproxy.Config{
		Target:       rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "krp-pin-app", Name: "api"},
		UpstreamPort: 8080, ServiceAccountName: "default",
		Resources: rbacproxy.Resources{Requests: map[string]string{"cpu": "5m", "memory": "32Mi"}, Limits: map[string]string{"memory": "64Mi"}},
	}.Defaulted()
	cm, err := cfg.ConfigMapApply()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.CoreV1().ConfigMaps("krp-pin-app").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: rbacproxy.FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	c := Config{Namespace: "krp-pin", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true,
		RBACProxies: []RBACProxy{rbacProxyEntry(t, cfg)}}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })

	asCore := kubernetes.NewForConfigOrDie(asReconciler(t, c))
	workloads := c.PolicyName("workloads")
	deployments := asCore.AppsV1().Deployments("krp-pin-app")
	sidecar := func(mutate func(*corev1ac.ContainerApplyConfiguration), opts metav1.ApplyOptions) error {
		w, err := cfg.WorkloadApply("")
		if err != nil {
			t.Fatal(err)
		}
		d := w.Deployment
		if mutate != nil {
			mutate(&d.Spec.Template.Spec.InitContainers[0])
		}
		opts.FieldManager, opts.Force = rbacproxy.FieldManager, true
		_, err = deployments.Apply(ctx, d, opts)
		return err
	}
	dryRun := metav1.ApplyOptions{DryRun: []string{metav1.DryRunAll}}
	unconfined := sidecarBypasses()["AppArmor Unconfined"]
	testenv.WaitForPolicy(t, workloads, func() error { return sidecar(unconfined, dryRun) })
	if err := sidecar(nil, metav1.ApplyOptions{}); err != nil {
		t.Fatalf("the reconciler cannot put the recorded sidecar in: %v", err)
	}
	scale := func(name string, replicas int) error {
		_, err := deployments.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":`+strconv.Itoa(replicas)+`}}`), metav1.PatchOptions{}, "scale")
		return err
	}
	status := func(name string) error {
		_, err := deployments.Patch(ctx, name, types.MergePatchType, []byte(`{"status":{"observedGeneration":99}}`), metav1.PatchOptions{}, "status")
		return err
	}
	pinned := "may write only the kube-rbac-proxy sidecar recorded for this workload, whole"
	subresource := "may not write a workload through a subresource"

	attack := func(t *testing.T, widened bool) {
		for what, mutate := range sidecarBypasses() {
			testenv.Denied(t, "the reconciler's token writes the sidecar with "+what, sidecar(mutate, metav1.ApplyOptions{}), testenv.PolicyDenial(workloads), pinned)
		}
		for what, err := range map[string]error{
			"scales its rollout target to 0 through /scale":     scale("api", 0),
			"scales an unrelated workload to 50 through /scale": scale("other", 50),
		} {
			if widened {
				testenv.Denied(t, "the reconciler's token "+what, err, testenv.PolicyDenial(workloads), subresource)
			} else {
				testenv.Denied(t, "the reconciler's token "+what, err, "cannot patch resource")
			}
		}
		// edit grants no /status; the policy matches it all the same
		// (TestPoliciesMatchEverySubresource).
		testenv.Denied(t, "the reconciler's token rewrites a workload's status", status("api"))
		// The reconciler's own write still goes through.
		if err := sidecar(nil, metav1.ApplyOptions{}); err != nil {
			t.Errorf("the reconciler cannot put the recorded sidecar in: %v", err)
		}
	}
	t.Run("installed RBAC", func(t *testing.T) { attack(t, false) })

	// Someone binds edit to the reconciler's ServiceAccount: RBAC now
	// allows every write above; the policy must still deny each. The test
	// bed runs no kube-controller-manager to aggregate edit's rules, so
	// the built-in role edit aggregates is bound beside it.
	for _, role := range []string{"edit", "system:aggregate-to-edit"} {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "krp-pin-widened-" + strings.ReplaceAll(role, ":", "-")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.Namespace, Name: c.ServiceAccountName()}},
		}
		if _, err := core.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = core.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
	}
	// RBAC learns the binding from a watch: wait until /scale reaches the policy.
	testenv.WaitForPolicy(t, workloads, func() error { return scale("other", 50) })
	t.Run("RBAC widened to edit", func(t *testing.T) { attack(t, true) })

	// The reconciler's own restore of a sidecar someone else loosened (a
	// JSON patch replacing it whole, then its apply) passes the policy.
	for what, mutate := range sidecarBypasses() {
		w, err := cfg.WorkloadApply("")
		if err != nil {
			t.Fatal(err)
		}
		mutate(&w.Deployment.Spec.Template.Spec.InitContainers[0])
		if _, err := core.AppsV1().Deployments("krp-pin-app").Apply(ctx, w.Deployment, metav1.ApplyOptions{FieldManager: rbacproxy.FieldManager, Force: true}); err != nil {
			t.Fatalf("an admin writes the sidecar with %s: %v", what, err)
		}
		live, err := rbacproxy.GetWorkload(ctx, core, cfg.Target)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := cfg.RestorePatch(&live.Template, live.ResourceVersion)
		if err != nil || patch == nil {
			t.Fatalf("RestorePatch after %s = %s, %v; want a patch", what, patch, err)
		}
		if err := rbacproxy.PatchWorkload(ctx, asCore.AppsV1(), cfg.Target, patch, rbacproxy.FieldManager); err != nil {
			t.Errorf("the reconciler's token cannot restore the sidecar after %s: %v", what, err)
		}
		if err := sidecar(nil, metav1.ApplyOptions{}); err != nil {
			t.Errorf("the reconciler's token cannot re-apply the sidecar after restoring it from %s: %v", what, err)
		}
		restored, err := rbacproxy.GetWorkload(ctx, core, cfg.Target)
		if err != nil {
			t.Fatal(err)
		}
		if diffs, err := cfg.Diff(&restored.Template); err != nil || len(diffs) > 0 {
			t.Errorf("after restoring from %s: Diff = %q, %v", what, diffs, err)
		}
	}

	d, err := core.AppsV1().Deployments("krp-pin-app").Get(ctx, "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("Deployment other has %v replicas after the attacks, want 1", d.Spec.Replicas)
	}
}
