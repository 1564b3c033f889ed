package install

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func unstructuredOf(t *testing.T, obj runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apps/v1")
	u.SetKind(kind)
	return u
}

func TestDeploymentRollout(t *testing.T) {
	two := int32(2)
	d := func(gen, observed int64, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.DeploymentSpec{Replicas: &two},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
				AvailableReplicas: available, Conditions: conds},
		}
	}
	deadline := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet x has timed out progressing."}
	for _, tc := range []struct {
		name   string
		d      *appsv1.Deployment
		done   bool
		failed string
	}{
		{"done", d(3, 3, 2, 2, 2), true, ""},
		{"controller has not seen the spec", d(3, 2, 2, 2, 2), false, ""},
		{"old pod still there", d(3, 3, 3, 2, 3), false, ""},
		{"not yet available", d(3, 3, 2, 2, 1), false, ""},
		{"nothing yet", d(1, 0, 0, 0, 0), false, ""},
		{"deadline exceeded", d(3, 3, 2, 1, 1, deadline), false, "ProgressDeadlineExceeded"},
	} {
		r, err := RolloutOf(unstructuredOf(t, tc.d, "Deployment"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Done != tc.done || !strings.Contains(r.Failed, tc.failed) || (tc.failed == "") != (r.Failed == "") {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

func TestDaemonSetRollout(t *testing.T) {
	ds := func(gen, observed int64, desired, updated, available int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: observed, DesiredNumberScheduled: desired, UpdatedNumberScheduled: updated, NumberAvailable: available}}
	}
	for _, tc := range []struct {
		name string
		ds   *appsv1.DaemonSet
		done bool
	}{
		{"done", ds(2, 2, 3, 3, 3), true},
		{"not seen", ds(2, 1, 3, 3, 3), false},
		{"updating", ds(2, 2, 3, 2, 3), false},
		{"not available", ds(2, 2, 3, 3, 2), false},
	} {
		r, err := RolloutOf(unstructuredOf(t, tc.ds, "DaemonSet"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Done != tc.done {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}
