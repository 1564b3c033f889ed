package reconciler

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// tlsProfileFixture creates a Deployment and a profile ConfigMap naming it,
// as kmshealth_tls_profile_configmap writes them.
func tlsProfileFixture(t *testing.T, name string, spec tlsprofile.Spec) (tlsprofile.Target, tlsprofile.Resolved) {
	t.Helper()
	ctx := context.Background()
	target := tlsTargetDeployment(t, name)
	res, _, err := tlsprofile.Resolve(spec, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := tlsprofile.ConfigMap("default", name, spec, res, []tlsprofile.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsprofile.ApplyConfigMap(ctx, env.Clientset().CoreV1(), ac); err != nil {
		t.Fatal(err)
	}
	if err := tlsprofile.AnnotateTarget(ctx, dynamic.NewForConfigOrDie(env.RESTConfig()), target, res.Hash); err != nil {
		t.Fatal(err)
	}
	return target, res
}

// tlsTargetDeployment creates a Deployment in default, a rollout target
// without the hash annotation.
func tlsTargetDeployment(t *testing.T, name string) tlsprofile.Target {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := env.Clientset().AppsV1().Deployments("default").Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tlsprofile.Target{Kind: "Deployment", Namespace: "default", Name: name}
}

// recordTLSProfiles adds the profile ConfigMaps names (in default) to the
// test's reconciler record, as kmshealth_reconciler's tls_profiles does.
func recordTLSProfiles(t *testing.T, names ...string) {
	t.Helper()
	kept := make([]tlsprofile.Kept, len(names))
	for i, n := range names {
		kept[i] = tlsprofile.Kept{Namespace: "default", Name: n}
	}
	recordData(t, "test-tls", tlsprofile.RecordData(kept))
}

// waitFor watches the object name of lw until cond holds of it, and says
// how long that took.
func waitFor[T kruntime.Object](t *testing.T, lw cache.ListerWatcher, empty T, what string, cond func(T) bool) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holds := func(obj any) bool {
		o, ok := obj.(T)
		return ok && cond(o)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, empty, func(s cache.Store) (bool, error) {
		for _, o := range s.List() {
			if holds(o) {
				return true, nil
			}
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) {
		return ev.Type != watch.Deleted && holds(ev.Object), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return time.Since(start)
}

func configMapLW(name string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(env.Clientset().CoreV1().RESTClient(), "configmaps", "default", fields.OneTermEqualSelector("metadata.name", name))
}

func deploymentLW(name string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(env.Clientset().AppsV1().RESTClient(), "deployments", "default", fields.OneTermEqualSelector("metadata.name", name))
}

func hasDoc(doc []byte) func(*corev1.ConfigMap) bool {
	return func(cm *corev1.ConfigMap) bool { return cm.Data[tlsprofile.DocumentKey] == string(doc) }
}

func hasHash(hash string) func(*appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool { return d.Spec.Template.Annotations[tlsprofile.HashAnnotation] == hash }
}

// TestReconcileTLSProfileRestores: profile.json edited out of band and the
// hash annotation dropped from the target (a kubectl replace of the
// workload) are both put back, learnt from the ConfigMap alone.
func TestReconcileTLSProfileRestores(t *testing.T) {
	t.Parallel()
	name := unique(t)
	target, res := tlsProfileFixture(t, name, tlsprofile.Spec{Type: tlsprofile.ProfileModern, Source: tlsprofile.SourceStatic})
	recordTLSProfiles(t, name)
	startReconciler(t, "--leader-elect=false")
	ctx := context.Background()

	patch := []byte(`{"data":{"profile.json":"{\"type\":\"Old\"}"}}`)
	if _, err := env.Clientset().CoreV1().ConfigMaps("default").Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, configMapLW(name), &corev1.ConfigMap{}, "profile.json restored", hasDoc(res.JSON))
	t.Logf("profile.json restored after %s", took)

	d, err := env.Clientset().AppsV1().Deployments("default").Get(ctx, target.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(d.Spec.Template.Annotations, tlsprofile.HashAnnotation)
	if _, err := env.Clientset().AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-replace"}); err != nil {
		t.Fatal(err)
	}
	took = waitFor(t, deploymentLW(name), &appsv1.Deployment{}, "hash annotation restored", hasHash(res.Hash))
	t.Logf("hash annotation restored after %s", took)
}

// TestReconcileTLSProfileNewEntry: the record is the reconciler's input,
// read at run time. A profile entered in the record of a running
// reconciler (what kmshealth_reconciler does now instead of rolling its
// Deployment with a new flag) is kept from that moment; a target added to
// that profile ConfigMap's own list (the record's entry names the
// ConfigMap, the ConfigMap names the targets) is kept too, still without
// a restart.
func TestReconcileTLSProfileNewEntry(t *testing.T) {
	t.Parallel()
	name := unique(t)
	spec := tlsprofile.Spec{Type: tlsprofile.ProfileModern, Source: tlsprofile.SourceStatic}
	target, res := tlsProfileFixture(t, name, spec)
	recordTLSProfiles(t) // a record without it: nothing of this profile is kept yet
	startReconciler(t, "--leader-elect=false")
	ctx := context.Background()

	// Drift while the profile is not kept stays.
	patch := []byte(`{"data":{"profile.json":"{\"type\":\"Old\"}"}}`)
	if _, err := env.Clientset().CoreV1().ConfigMaps("default").Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	recordTLSProfiles(t, name)
	took := waitFor(t, configMapLW(name), &corev1.ConfigMap{}, "profile.json restored once recorded", hasDoc(res.JSON))
	t.Logf("profile.json restored %s after the record named it", took)

	// Second level: the profile's resource adds a rollout target.
	second := tlsTargetDeployment(t, name+"-b")
	ac, err := tlsprofile.ConfigMap("default", name, spec, res, []tlsprofile.Target{target, second})
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsprofile.ApplyConfigMap(ctx, env.Clientset().CoreV1(), ac); err != nil {
		t.Fatal(err)
	}
	took = waitFor(t, deploymentLW(second.Name), &appsv1.Deployment{}, "hash annotation on the added target", hasHash(res.Hash))
	t.Logf("added target annotated after %s", took)
}

// TestReconcileTLSProfileFollowsCluster: a profile ConfigMap with source
// cluster follows OpenShift's APIServer object: a profile changed there is
// in profile.json and on the target's pod template moments later.
func TestReconcileTLSProfileFollowsCluster(t *testing.T) {
	// Serial: it installs OpenShift's cluster-scoped APIServer API and sets
	// the one cluster profile.
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(env.RESTConfig())
	remove, err := testenv.InstallAPIServerAPI(ctx, dyn, map[string]any{"tlsSecurityProfile": map[string]any{"type": "Intermediate"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		remove()
		// The parallel tests after it expect a cluster without the API.
		if err := testenv.WaitNoAPIServerAPI(context.Background(), env.Clientset().Discovery()); err != nil {
			t.Error(err)
		}
	})
	name := unique(t)
	_, _ = tlsProfileFixture(t, name, tlsprofile.Spec{Source: tlsprofile.SourceCluster})
	// The same with fips, which the cluster does not say: the record does.
	fipsName := name + "-fips"
	_, _ = tlsProfileFixture(t, fipsName, tlsprofile.Spec{Source: tlsprofile.SourceCluster, FIPS: true})
	recordTLSProfiles(t, name, fipsName)
	startReconciler(t, "--leader-elect=false")

	modern, _, err := tlsprofile.Resolve(tlsprofile.Spec{Type: tlsprofile.ProfileModern, Source: tlsprofile.SourceCluster}, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		t.Fatal(err)
	}
	modernFIPS, _, err := tlsprofile.Resolve(tlsprofile.Spec{Type: tlsprofile.ProfileModern, Source: tlsprofile.SourceCluster, FIPS: true}, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.SetClusterTLSProfile(ctx, dyn, map[string]any{"type": "Modern", "modern": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, configMapLW(name), &corev1.ConfigMap{}, "profile.json follows the cluster", hasDoc(modern.JSON))
	took2 := waitFor(t, deploymentLW(name), &appsv1.Deployment{}, "target follows the cluster", hasHash(modern.Hash))
	t.Logf("cluster profile change in profile.json after %s, on the target after %s", took, took+took2)
	waitFor(t, configMapLW(fipsName), &corev1.ConfigMap{}, "profile.json follows the cluster, keeping fips", hasDoc(modernFIPS.JSON))
	waitFor(t, deploymentLW(fipsName), &appsv1.Deployment{}, "target follows the cluster, keeping fips", hasHash(modernFIPS.Hash))
}
