package tlsprofile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// profileNamespace creates a namespace of its own for the test with
// Deployments "a" and "b", as their installer would.
func profileNamespace(t *testing.T) string {
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
	for _, name := range []string{"a", "b"} {
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			}},
		}}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func resolved(t *testing.T, typ tlsprofile.ProfileType) (tlsprofile.Spec, tlsprofile.Resolved) {
	t.Helper()
	spec := tlsprofile.Spec{Type: typ, Source: tlsprofile.SourceStatic}
	r, _, err := tlsprofile.Resolve(spec, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		t.Fatal(err)
	}
	return spec, r
}

func targetHash(t *testing.T, dyn dynamic.Interface, target tlsprofile.Target) string {
	t.Helper()
	hash, found, err := tlsprofile.TargetHash(context.Background(), dyn, target)
	if err != nil || !found {
		t.Fatalf("%s: found %v, %v", target, found, err)
	}
	return hash
}

func problemsAt(err error) []string {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return nil
	}
	var out []string
	for _, e := range agg.Errors() {
		var fe *field.Error
		if errors.As(e, &fe) {
			out = append(out, fe.Field+": "+fe.Detail)
		}
	}
	return out
}

// TestEnsure: Ensure writes the ConfigMap's profile.json and the hash on
// every target; a second Ensure with other targets moves the hash, and the
// target dropped loses it.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	cs := env.Clientset()
	dyn := dynamic.NewForConfigOrDie(env.RESTConfig())
	ns := profileNamespace(t)
	a := tlsprofile.Target{Kind: "Deployment", Namespace: ns, Name: "a"}
	b := tlsprofile.Target{Kind: "Deployment", Namespace: ns, Name: "b"}

	spec, res := resolved(t, tlsprofile.ProfileIntermediate)
	p := tlsprofile.ProfileConfigMap{Namespace: ns, Name: "profile", Spec: spec, Resolved: res, Targets: []tlsprofile.Target{a}}
	if warnings, err := tlsprofile.Ensure(ctx, cs.CoreV1(), dyn, p, nil); err != nil || len(warnings) > 0 {
		t.Fatalf("Ensure: %v, warnings %v", err, warnings)
	}
	doc, targets, found, err := tlsprofile.LiveDocument(ctx, cs.CoreV1(), ns, "profile")
	if err != nil || !found || string(doc) != string(res.JSON) || !slices.Equal(targets, []tlsprofile.Target{a}) {
		t.Fatalf("LiveDocument after Ensure: found %v, targets %v, %v; document %s", found, targets, err, doc)
	}
	if h := targetHash(t, dyn, a); h != res.Hash {
		t.Errorf("target a has hash %q, want %q", h, res.Hash)
	}

	spec, res = resolved(t, tlsprofile.ProfileModern)
	p = tlsprofile.ProfileConfigMap{Namespace: ns, Name: "profile", Spec: spec, Resolved: res, Targets: []tlsprofile.Target{b}}
	if warnings, err := tlsprofile.Ensure(ctx, cs.CoreV1(), dyn, p, []tlsprofile.Target{a}); err != nil || len(warnings) > 0 {
		t.Fatalf("Ensure with target b instead of a: %v, warnings %v", err, warnings)
	}
	if h := targetHash(t, dyn, b); h != res.Hash {
		t.Errorf("target b has hash %q, want %q", h, res.Hash)
	}
	if h := targetHash(t, dyn, a); h != "" {
		t.Errorf("target a, dropped, still has hash %q", h)
	}
}

// TestEnsureRefuses: a missing target and a ConfigMap kmshealth did not
// create stop Ensure before anything is written.
func TestEnsureRefuses(t *testing.T) {
	ctx := context.Background()
	cs := env.Clientset()
	dyn := dynamic.NewForConfigOrDie(env.RESTConfig())
	ns := profileNamespace(t)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := tlsprofile.Target{Kind: "Deployment", Namespace: ns, Name: "a"}
	spec, res := resolved(t, tlsprofile.ProfileIntermediate)
	for _, tc := range []struct {
		name    string
		cm      string
		targets []tlsprofile.Target
		step    tlsprofile.Step
		want    string
	}{
		{"missing target", "p", []tlsprofile.Target{a, {Kind: "Deployment", Namespace: ns, Name: "missing"}}, tlsprofile.StepTargets,
			"rolloutTargets[1]: Deployment/" + ns + "/missing not found: create it first"},
		{"ConfigMap not ours", "theirs", []tlsprofile.Target{a}, tlsprofile.StepConfigMap, "exists and is not a kmshealth TLS profile ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tlsprofile.ProfileConfigMap{Namespace: ns, Name: tc.cm, Spec: spec, Resolved: res, Targets: tc.targets}
			_, err := tlsprofile.Ensure(ctx, cs.CoreV1(), dyn, p, nil)
			var se *tlsprofile.StepError
			if !errors.As(err, &se) || se.Step != tc.step {
				t.Fatalf("Ensure = %v, want a StepError at step %d", err, tc.step)
			}
			msg := err.Error()
			if tc.step == tlsprofile.StepTargets {
				msg = strings.Join(problemsAt(err), "\n")
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("Ensure = %q, want it to contain %q", msg, tc.want)
			}
			if tc.step == tlsprofile.StepConfigMap && !errors.Is(err, tlsprofile.ErrNotOurs) {
				t.Errorf("Ensure = %v, want ErrNotOurs", err)
			}
			if h := targetHash(t, dyn, a); h != "" {
				t.Errorf("a refused Ensure annotated target a with %q", h)
			}
			if tc.cm == "p" {
				if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("a refused Ensure left ConfigMap p: %v", err)
				}
			}
		})
	}
}
