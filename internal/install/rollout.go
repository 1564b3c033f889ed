package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Rollout is how far a workload's rollout got.
type Rollout struct {
	Done bool
	// Progress says where it stands, e.g. "1 of 2 replicas updated, 0
	// available".
	Progress string
	// Failed is set when the controller gave up (ProgressDeadlineExceeded):
	// waiting longer cannot help.
	Failed string
}

// RolloutOf judges a live Deployment, DaemonSet or StatefulSet.
func RolloutOf(u *unstructured.Unstructured) (Rollout, error) {
	switch u.GetKind() {
	case "Deployment":
		d, err := As[appsv1.Deployment](u)
		if err != nil {
			return Rollout{}, err
		}
		return deploymentRollout(d), nil
	case "DaemonSet":
		ds, err := As[appsv1.DaemonSet](u)
		if err != nil {
			return Rollout{}, err
		}
		return daemonSetRollout(ds), nil
	case "StatefulSet":
		ss, err := As[appsv1.StatefulSet](u)
		if err != nil {
			return Rollout{}, err
		}
		return StatefulSetRollout(ss), nil
	}
	return Rollout{}, fmt.Errorf("%s %s is not a workload", u.GetKind(), u.GetName())
}

// deploymentRollout: the Deployment controller saw the latest spec, and
// every replica is updated and available, with no old ones left.
func deploymentRollout(d *appsv1.Deployment) Rollout {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	r := Rollout{
		Done: s.ObservedGeneration >= d.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.AvailableReplicas == want,
		Progress: fmt.Sprintf("observed generation %d of %d, %d of %d replicas updated, %d available, %d in total",
			s.ObservedGeneration, d.Generation, s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas),
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			r.Failed = "ProgressDeadlineExceeded: " + c.Message
		}
	}
	return r
}

// daemonSetRollout: the DaemonSet controller saw the latest spec, and on
// every node it should run on, the pod is updated and available.
func daemonSetRollout(ds *appsv1.DaemonSet) Rollout {
	s := ds.Status
	return Rollout{
		Done: s.ObservedGeneration >= ds.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled &&
			s.NumberAvailable == s.DesiredNumberScheduled,
		Progress: fmt.Sprintf("observed generation %d of %d, %d of %d pods updated, %d available",
			s.ObservedGeneration, ds.Generation, s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberAvailable),
	}
}

// StatefulSetRollout: the StatefulSet controller saw the latest spec, and
// every replica runs the update revision and is ready. With the OnDelete
// strategy pods change only when deleted, so seeing the spec is all there
// is to wait for.
func StatefulSetRollout(ss *appsv1.StatefulSet) Rollout {
	want := int32(1)
	if ss.Spec.Replicas != nil {
		want = *ss.Spec.Replicas
	}
	s := ss.Status
	r := Rollout{Progress: fmt.Sprintf("observed generation %d of %d, %d of %d replicas updated, %d ready",
		s.ObservedGeneration, ss.Generation, s.UpdatedReplicas, want, s.ReadyReplicas)}
	observed := s.ObservedGeneration >= ss.Generation
	if ss.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		r.Done, r.Progress = observed, r.Progress+" (OnDelete: pods take the change when deleted)"
		return r
	}
	r.Done = observed && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.CurrentRevision == s.UpdateRevision
	return r
}

// ProgressEvery is how often a wait reports where it stands, changed or not.
const ProgressEvery = 10 * time.Second

// StuckError is a rollout that cannot finish without someone fixing
// something: a pod's own reason, and what to do.
type StuckError struct {
	Workload ID
	Pod      string
	Reason   string // ErrImagePull, CrashLoopBackOff, Unschedulable, ...
	Message  string
	Fix      string
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("%s cannot roll out: pod %s is %s: %s. %s", e.Workload, e.Pod, e.Reason, e.Message, e.Fix)
}

// PodStuck tells whether pod cannot start until someone fixes something,
// and returns its newest state in a few words either way.
func PodStuck(pod *corev1.Pod) (stuck *StuckError, state string) {
	state = string(pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &StuckError{Pod: pod.Name, Reason: c.Reason, Message: c.Message,
				Fix: "No node can take it: check node_selector, tolerations and the resource requests against the nodes, or add nodes."}, c.Reason
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		state = fmt.Sprintf("%s (container %s: %s)", state, cs.Name, w.Reason)
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
			return &StuckError{Pod: pod.Name, Reason: w.Reason, Message: fmt.Sprintf("container %s, image %s: %s", cs.Name, cs.Image, w.Message),
				Fix: "Check the image name and tag, that the registry is reachable from the nodes, and its pull secret; or set image to one the nodes can pull."}, state
		case "CreateContainerConfigError", "CreateContainerError":
			return &StuckError{Pod: pod.Name, Reason: w.Reason, Message: fmt.Sprintf("container %s: %s", cs.Name, w.Message),
				Fix: "The container cannot be created as declared: read the message, and the pod's events (kubectl describe pod)."}, state
		case "CrashLoopBackOff":
			msg := fmt.Sprintf("container %s restarted %d times", cs.Name, cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				msg += fmt.Sprintf(", last exit code %d (%s) %s", t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
			}
			return &StuckError{Pod: pod.Name, Reason: w.Reason, Message: msg,
				Fix: fmt.Sprintf("Read why it exits: kubectl logs -n %s %s -c %s --previous.", pod.Namespace, pod.Name, cs.Name)}, state
		}
	}
	return nil, state
}

// WaitForRollout watches the workload id names until it is rolled out,
// cannot roll out, or ctx ends. Beside the workload it watches the
// workload's pods (selected by the workload's selector, server-side), so
// a pod that cannot start (an image that cannot be pulled, a crash loop,
// no node for it) ends the wait at once with the pod's own reason instead
// of at the timeout. progress, when set, hears where the rollout stands at
// every change and at least every ProgressEvery. The error says how far
// the rollout got.
func WaitForRollout(ctx context.Context, cl Clients, id ID, progress func(string)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu       sync.Mutex
		last     Rollout
		podState string
		podsOnce sync.Once
	)
	report := func() {
		if progress == nil {
			return
		}
		mu.Lock()
		p := last.Progress
		if podState != "" {
			p += "; newest pod: " + podState
		}
		mu.Unlock()
		if p != "" {
			progress(p)
		}
	}
	// The ticker ends before WaitForRollout returns: no progress is
	// reported after the wait.
	tickerDone := make(chan struct{})
	defer func() { cancel(nil); <-tickerDone }()
	go func() {
		defer close(tickerDone)
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				report()
			}
		}
	}()
	watchPods := func(selector string) {
		pods := cl.Core.CoreV1().Pods(id.Namespace)
		lw := kube.ListWatch(pods.List, pods.Watch, func(o *metav1.ListOptions) { o.LabelSelector = selector })
		_, _ = watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || pod.DeletionTimestamp != nil {
				return false, nil
			}
			stuck, state := PodStuck(pod)
			mu.Lock()
			podState = pod.Name + ": " + state
			mu.Unlock()
			if stuck != nil {
				stuck.Workload = id
				cancel(stuck)
				return true, nil
			}
			return false, nil
		})
	}
	_, err := watchtools.UntilWithSync(ctx, kube.NameListWatch(cl.resource(id), id.Name), &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("%s was deleted while waiting for its rollout", id)
		}
		r, err := RolloutOf(u)
		if err != nil {
			return false, err
		}
		if sel, err := podSelector(u); err == nil && sel != "" && cl.Core != nil {
			podsOnce.Do(func() { go watchPods(sel) })
		}
		mu.Lock()
		changed := r.Progress != last.Progress
		last = r
		mu.Unlock()
		if changed {
			report()
		}
		if r.Failed != "" {
			return false, fmt.Errorf("%s cannot roll out: %s", id, r.Failed)
		}
		return r.Done, nil
	})
	var stuck *StuckError
	if errors.As(context.Cause(ctx), &stuck) {
		return stuck
	}
	if err == nil || ctx.Err() == nil {
		return err
	}
	mu.Lock()
	at := last.Progress
	mu.Unlock()
	if at == "" {
		at = "it was not seen"
	}
	return fmt.Errorf("%s did not roll out in time (%s): check its pods' events (image pull, scheduling, probes), raise the timeout, or set wait_for_rollout = false", id, at)
}

// podSelector is the label selector of a workload's pods, as a string.
func podSelector(u *unstructured.Unstructured) (string, error) {
	m, found, err := unstructured.NestedMap(u.Object, "spec", "selector")
	if err != nil || !found {
		return "", err
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", err
	}
	return sel.String(), nil
}
