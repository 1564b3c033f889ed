package install

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// RolloutOf judges a live Deployment or DaemonSet.
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

// WaitForRollout watches the workload id names until it is rolled out,
// has failed, or ctx ends; progress, when set, hears every change of its
// progress. The error says how far the rollout got.
func WaitForRollout(ctx context.Context, cl Clients, id ID, progress func(string)) error {
	var last Rollout
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
		if progress != nil && r.Progress != last.Progress {
			progress(r.Progress)
		}
		last = r
		if r.Failed != "" {
			return false, fmt.Errorf("%s cannot roll out: %s", id, r.Failed)
		}
		return r.Done, nil
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	at := last.Progress
	if at == "" {
		at = "it was not seen"
	}
	return fmt.Errorf("%s did not roll out in time (%s): check its pods' events (image pull, scheduling, probes), raise the timeout, or set wait_for_rollout = false", id, at)
}
