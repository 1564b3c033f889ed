package reconcilerinstall

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// TestPinnedIsWhatTheAPIServerStores: rbacproxy.Pinned is the sidecar,
// its volumes and its hash exactly as the API server stores them after
// kmshealth's apply — every default it fills in accounted for — for each
// shape of sidecar, so the policy's whole-object pin admits the
// reconciler's own write and the drift check sees no drift right after
// it. A Kubernetes version that defaults a new field fails here.
func TestPinnedIsWhatTheAPIServerStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	createNamespace(t, core, "pinned")
	digest := "quay.io/brancz/kube-rbac-proxy@sha256:" + strings.Repeat("ab", 32)
	for name, tc := range map[string]struct {
		configure   func(*rbacproxy.Config)
		hostNetwork bool
	}{
		"defaults":   {configure: func(*rbacproxy.Config) {}},
		"tls secret": {configure: func(c *rbacproxy.Config) { c.TLS.SecretName = "web-tls" }},
		"insecure":   {configure: func(c *rbacproxy.Config) { c.InsecureListen = true }},
		"resources": {configure: func(c *rbacproxy.Config) {
			c.Resources.Requests, c.Resources.Limits = map[string]string{"cpu": "0.005", "memory": "32Mi"}, map[string]string{"memory": "64Mi"}
		}},
		"untagged": {configure: func(c *rbacproxy.Config) { c.Image = "quay.io/brancz/kube-rbac-proxy" }},
		"latest":   {configure: func(c *rbacproxy.Config) { c.Image = "quay.io/brancz/kube-rbac-proxy:latest" }},
		"digest":   {configure: func(c *rbacproxy.Config) { c.Image = digest }},
		// No hostPort is defaulted in a template, even with hostNetwork.
		"host network": {configure: func(*rbacproxy.Config) {}, hostNetwork: true},
	} {
		t.Run(name, func(t *testing.T) {
			workload := "w-" + strings.ReplaceAll(name, " ", "-")
			labels := map[string]string{"app": workload}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: workload}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					HostNetwork: tc.hostNetwork,
					Containers:  []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
				}},
			}}
			live, err := core.AppsV1().Deployments("pinned").Create(ctx, d, metav1.CreateOptions{FieldManager: "installer"})
			if err != nil {
				t.Fatal(err)
			}
			cfg := rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: "pinned", Name: workload},
				UpstreamPort: 8080, ServiceAccountName: "default"}
			tc.configure(&cfg)
			w, err := cfg.WorkloadApply(live.UID)
			if err != nil {
				t.Fatal(err)
			}
			applied, err := core.AppsV1().Deployments("pinned").Apply(ctx, w.Deployment, metav1.ApplyOptions{FieldManager: rbacproxy.FieldManager, Force: true})
			if err != nil {
				t.Fatal(err)
			}
			want, err := cfg.Pinned()
			if err != nil {
				t.Fatal(err)
			}
			tmpl := applied.Spec.Template
			got := rbacproxy.Pinned{ConfigHash: tmpl.Annotations[rbacproxy.ConfigHashAnnotation]}
			for _, c := range tmpl.Spec.InitContainers {
				if c.Name == rbacproxy.ContainerName {
					got.Container = c
				}
			}
			for _, v := range tmpl.Spec.Volumes {
				if v.Name == rbacproxy.ConfigVolumeName || v.Name == rbacproxy.TLSVolumeName {
					got.Volumes = append(got.Volumes, v)
				}
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Errorf("stored:\n%s\npinned:\n%s", g, w)
			}
			if diffs, err := cfg.Diff(&tmpl); err != nil || len(diffs) > 0 {
				t.Errorf("Diff right after the apply = %q, %v; want in sync", diffs, err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
