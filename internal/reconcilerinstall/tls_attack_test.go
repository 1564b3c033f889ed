package reconcilerinstall

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// TestReconcilerTLSProfileAttacks tries, with the token of a reconciler
// that keeps one TLS profile and its rollout target, what a compromised
// reconciler could do to workloads and ConfigMaps, and requires the API
// server to deny each: RBAC limits it to the named objects, the admission
// policies to profile.json and the hash annotation. The controller's own
// writes (the same library calls it makes) still go through.
func TestReconcilerTLSProfileAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core := env.Clientset()
	for _, ns := range []string{"tls-attack", "tls-attack-app"} {
		createNamespace(t, core, ns)
	}
	for _, name := range []string{"web", "other"} {
		createDeployment(t, core, "tls-attack-app", name)
	}
	if _, err := core.CoreV1().ConfigMaps("tls-attack-app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-settings"},
		Data: map[string]string{"listen": ":8443"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := tlsprofile.Target{Kind: "Deployment", Namespace: "tls-attack-app", Name: "web"}
	intermediate := mustResolve(t, tlsprofile.Spec{Type: tlsprofile.ProfileIntermediate})
	cm, err := tlsprofile.ConfigMap("tls-attack-app", "web-tls", tlsprofile.Spec{Type: tlsprofile.ProfileIntermediate}, intermediate, []tlsprofile.Target{web})
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsprofile.ApplyConfigMap(ctx, core.CoreV1(), cm); err != nil {
		t.Fatal(err)
	}
	c := Config{Namespace: "tls-attack", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true,
		TLSProfiles: []TLSProfile{{Namespace: "tls-attack-app", Name: "web-tls", Targets: []tlsprofile.Target{web}}}}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })

	cfg := asReconciler(t, c)
	asCore := kubernetes.NewForConfigOrDie(cfg)
	asDyn := dynamic.NewForConfigOrDie(cfg)
	workloads, configmaps := c.PolicyName("workloads"), c.PolicyName("tls-profile-configmaps")
	deployments := asCore.AppsV1().Deployments("tls-attack-app")
	patchDeployment := func(name, patch string, opts metav1.PatchOptions) error {
		_, err := deployments.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), opts)
		return err
	}
	swapImage := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"evil.example/backdoor:1"}]}}}}`
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	testenv.WaitForPolicy(t, workloads, func() error { return patchDeployment("web", swapImage, dryRun) })

	// The controller's own writes: the hash on the target, profile.json.
	old := mustResolve(t, tlsprofile.Spec{Type: tlsprofile.ProfileOld})
	if err := tlsprofile.AnnotateTarget(ctx, asDyn, web, old.Hash); err != nil {
		t.Fatalf("the reconciler cannot annotate its rollout target: %v", err)
	}
	rewritten, err := tlsprofile.ConfigMap("tls-attack-app", "web-tls", tlsprofile.Spec{Type: tlsprofile.ProfileIntermediate}, old, []tlsprofile.Target{web})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitForPolicy(t, configmaps, func() error {
		_, err := asCore.CoreV1().ConfigMaps("tls-attack-app").Patch(ctx, "web-tls", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+tlsprofile.TargetsAnnotation+`":"[]"}}}`), dryRun)
		return err
	})
	if err := tlsprofile.ApplyConfigMap(ctx, asCore.CoreV1(), rewritten); err != nil {
		t.Fatalf("the reconciler cannot rewrite profile.json: %v", err)
	}

	// Workloads.
	testenv.Denied(t, "the reconciler's token swaps the image of its rollout target", patchDeployment("web", swapImage, metav1.PatchOptions{}),
		testenv.PolicyDenial(workloads), "never the pod spec")
	testenv.Denied(t, "the reconciler's token scales its rollout target to zero", patchDeployment("web", `{"spec":{"replicas":0}}`, metav1.PatchOptions{}),
		testenv.PolicyDenial(workloads), "may change only the pod template's "+tlsprofile.HashAnnotation)
	testenv.Denied(t, "the reconciler's token adds another pod-template annotation", patchDeployment("web",
		`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"now"}}}}}`, metav1.PatchOptions{}),
		testenv.PolicyDenial(workloads), "may change only the pod template's "+tlsprofile.HashAnnotation)
	testenv.Denied(t, "the reconciler's token relabels its rollout target", patchDeployment("web",
		`{"metadata":{"labels":{"team":"evil"}}}`, metav1.PatchOptions{}), testenv.PolicyDenial(workloads), "no metadata")
	testenv.Denied(t, "the reconciler's token deletes its rollout target", deployments.Delete(ctx, "web", metav1.DeleteOptions{}),
		`cannot delete resource "deployments"`)
	testenv.Denied(t, "the reconciler's token annotates a workload that is no rollout target",
		tlsprofile.AnnotateTarget(ctx, asDyn, tlsprofile.Target{Kind: "Deployment", Namespace: "tls-attack-app", Name: "other"}, old.Hash),
		`cannot get resource "deployments"`)

	// ConfigMaps.
	patchConfigMap := func(name, patch string) error {
		_, err := asCore.CoreV1().ConfigMaps("tls-attack-app").Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	testenv.Denied(t, "the reconciler's token adds a rollout target to the profile", patchConfigMap("web-tls",
		`{"metadata":{"annotations":{"`+tlsprofile.TargetsAnnotation+`":"[{\"kind\":\"Deployment\",\"namespace\":\"tls-attack-app\",\"name\":\"other\"}]"}}}`),
		testenv.PolicyDenial(configmaps), "no metadata")
	testenv.Denied(t, "the reconciler's token changes the profile's recorded spec", patchConfigMap("web-tls",
		`{"metadata":{"annotations":{"`+tlsprofile.SpecAnnotation+`":"{\"type\":\"Old\"}"}}}`), testenv.PolicyDenial(configmaps), "no metadata")
	testenv.Denied(t, "the reconciler's token adds a key to the profile ConfigMap", patchConfigMap("web-tls", `{"data":{"extra":"x"}}`),
		testenv.PolicyDenial(configmaps), "only data."+tlsprofile.DocumentKey)
	testenv.Denied(t, "the reconciler's token edits another ConfigMap", patchConfigMap("app-settings", `{"data":{"listen":":80"}}`),
		`cannot patch resource "configmaps"`)
	_, err = asCore.CoreV1().ConfigMaps("tls-attack-app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
	testenv.Denied(t, "the reconciler's token creates a ConfigMap", err, `cannot create resource "configmaps"`)

	// Defense in depth: with RBAC widened to every workload and ConfigMap,
	// the policies still hold.
	widen := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tls-attack-widened"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{appsv1.GroupName}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch", "create", "delete"}},
		{APIGroups: []string{corev1.GroupName}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch", "create", "delete"}},
	}}
	if _, err := core.RbacV1().ClusterRoles().Create(ctx, widen, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: widen.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: widen.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.Namespace, Name: c.ServiceAccountName()}}}
	if _, err := core.RbacV1().ClusterRoleBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.RbacV1().ClusterRoleBindings().Delete(context.Background(), bind.Name, metav1.DeleteOptions{})
		_ = core.RbacV1().ClusterRoles().Delete(context.Background(), widen.Name, metav1.DeleteOptions{})
	})
	testenv.WaitForPolicy(t, workloads, func() error { return patchDeployment("other", swapImage, dryRun) }) // the widened RBAC is in force
	testenv.Denied(t, "with widened RBAC, the reconciler's token swaps the image of a workload it does not keep",
		patchDeployment("other", swapImage, metav1.PatchOptions{}), testenv.PolicyDenial(workloads), "may write only the workloads it keeps")
	testenv.Denied(t, "with widened RBAC, the reconciler's token annotates a workload that is no rollout target",
		tlsprofile.AnnotateTarget(ctx, asDyn, tlsprofile.Target{Kind: "Deployment", Namespace: "tls-attack-app", Name: "other"}, old.Hash),
		testenv.PolicyDenial(workloads), "may write only the workloads it keeps")
	testenv.Denied(t, "with widened RBAC, the reconciler's token deletes its rollout target", deployments.Delete(ctx, "web", metav1.DeleteOptions{}),
		testenv.PolicyDenial(workloads), "never create or delete")
	testenv.Denied(t, "with widened RBAC, the reconciler's token edits another ConfigMap", patchConfigMap("app-settings", `{"data":{"listen":":80"}}`),
		testenv.PolicyDenial(configmaps), "may write only the TLS profile ConfigMaps it keeps")
	_, err = asCore.CoreV1().ConfigMaps("tls-attack-app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
	testenv.Denied(t, "with widened RBAC, the reconciler's token creates a ConfigMap", err, testenv.PolicyDenial(configmaps), "never create or delete")
	if err := tlsprofile.AnnotateTarget(ctx, asDyn, web, intermediate.Hash); err != nil {
		t.Errorf("with widened RBAC, the reconciler can no longer annotate its rollout target: %v", err)
	}

	// What the user's own writes do is not the policy's business: it binds
	// only the reconciler's ServiceAccount.
	if _, err := core.AppsV1().Deployments("tls-attack-app").Patch(ctx, "web", types.StrategicMergePatchType, []byte(swapImage), metav1.PatchOptions{}); err != nil {
		t.Errorf("the policy also binds the cluster admin: %v", err)
	}
}

func mustResolve(t *testing.T, spec tlsprofile.Spec) tlsprofile.Resolved {
	t.Helper()
	r, _, err := tlsprofile.Resolve(spec, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// createDeployment creates a one-container Deployment with a volume
// "data", as a user would.
func createDeployment(t *testing.T, core kubernetes.Interface, namespace, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + strings.ToLower(name) + ":1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			}},
	}}
	if _, err := core.AppsV1().Deployments(namespace).Create(context.Background(), d, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatal(err)
	}
}
