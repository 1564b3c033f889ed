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

// TestStatefulSetRollout: done when the controller saw the spec and every
// replica is updated, ready and at the update revision; with OnDelete,
// when the controller saw the spec.
func TestStatefulSetRollout(t *testing.T) {
	two := int32(2)
	ss := func(gen, observed int64, updated, ready int32, current, update string, strategy appsv1.StatefulSetUpdateStrategyType) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.StatefulSetSpec{Replicas: &two, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: strategy}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: observed, UpdatedReplicas: updated, ReadyReplicas: ready,
				CurrentRevision: current, UpdateRevision: update},
		}
	}
	rolling, onDelete := appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType
	for _, tc := range []struct {
		name string
		ss   *appsv1.StatefulSet
		done bool
	}{
		{"done", ss(2, 2, 2, 2, "r2", "r2", rolling), true},
		{"controller has not seen the spec", ss(2, 1, 2, 2, "r2", "r2", rolling), false},
		{"one replica left", ss(2, 2, 1, 2, "r1", "r2", rolling), false},
		{"not ready", ss(2, 2, 2, 1, "r2", "r2", rolling), false},
		{"revision not current yet", ss(2, 2, 2, 2, "r1", "r2", rolling), false},
		{"OnDelete, seen", ss(2, 2, 0, 2, "r1", "r2", onDelete), true},
		{"OnDelete, not seen", ss(2, 1, 0, 2, "r1", "r2", onDelete), false},
	} {
		r, err := RolloutOf(unstructuredOf(t, tc.ss, "StatefulSet"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Done != tc.done || r.Failed != "" || !strings.Contains(r.Progress, "replicas updated") {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

// TestPodStuck: the reasons a pod cannot start without someone fixing
// something end a wait, each with its fix; a pod on its way does not.
func TestPodStuck(t *testing.T) {
	waiting := func(reason string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "c", Image: "img:v1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}}}
	}
	crash := waiting("CrashLoopBackOff")
	crash.ContainerStatuses[0].RestartCount = 4
	crash.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "bad flag\n"}
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}}
	initPull := corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: waiting("ImagePullBackOff").ContainerStatuses}
	tests := []struct {
		name      string
		status    corev1.PodStatus
		reason    string // "" = not stuck
		detail    string
		wantState string
	}{
		{"pulling", waiting("ContainerCreating"), "", "", "Pending (container c: ContainerCreating)"},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, "", "", "Running"},
		{"image not found", waiting("ErrImagePull"), "ErrImagePull", "image img:v1: m", ""},
		{"pull back-off", waiting("ImagePullBackOff"), "ImagePullBackOff", "pull secret", ""},
		{"init container pull back-off", initPull, "ImagePullBackOff", "image img:v1", ""},
		{"bad image name", waiting("InvalidImageName"), "InvalidImageName", "image name", ""},
		{"config error", waiting("CreateContainerConfigError"), "CreateContainerConfigError", "kubectl describe pod", ""},
		{"crash loop", crash, "CrashLoopBackOff", "restarted 4 times, last exit code 2 (Error) bad flag. Read why it exits: kubectl logs -n ns p -c c --previous", ""},
		{"unschedulable", unschedulable, "Unschedulable", "0/3 nodes are available. No node can take it", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: tt.status}
			stuck, state := PodStuck(pod)
			switch {
			case tt.reason == "" && stuck != nil:
				t.Errorf("stuck (%v), want on its way", stuck)
			case tt.reason == "" && state != tt.wantState:
				t.Errorf("state %q, want %q", state, tt.wantState)
			case tt.reason != "" && stuck == nil:
				t.Errorf("not stuck (state %q), want %s", state, tt.reason)
			case tt.reason != "":
				stuck.Workload = ID{Kind: Deployments, Namespace: "ns", Name: "w"}
				if msg := stuck.Error(); stuck.Reason != tt.reason || !strings.Contains(msg, "pod p is "+tt.reason) || !strings.Contains(msg, tt.detail) {
					t.Errorf("%q (reason %s), want reason %s and %q", msg, stuck.Reason, tt.reason, tt.detail)
				}
			}
		})
	}
}
