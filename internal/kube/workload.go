package kube

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WorkloadKind is a kind of apps/v1 workload with a pod template: what the
// rbac proxy sidecar protects and what a TLS profile rolls.
type WorkloadKind string

// The workload kinds.
const (
	KindDeployment  WorkloadKind = "Deployment"
	KindStatefulSet WorkloadKind = "StatefulSet"
	KindDaemonSet   WorkloadKind = "DaemonSet"
)

// workloadResources is the one kind → resource table of the workloads.
var workloadResources = map[WorkloadKind]string{
	KindDeployment: "deployments", KindStatefulSet: "statefulsets", KindDaemonSet: "daemonsets",
}

// WorkloadKinds lists the workload kinds, in a fixed order.
func WorkloadKinds() []WorkloadKind {
	return []WorkloadKind{KindDeployment, KindStatefulSet, KindDaemonSet}
}

// Resource is the kind's resource (plural, lower case), "" for a kind that
// is not a workload kind.
func (k WorkloadKind) Resource() string { return workloadResources[k] }

// GVR is the kind's apps/v1 resource; ok is false for a kind that is not a
// workload kind.
func (k WorkloadKind) GVR() (gvr schema.GroupVersionResource, ok bool) {
	r, ok := workloadResources[k]
	return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: r}, ok
}

// Workload names one workload. Its JSON form ({"kind","namespace","name"})
// is what records and annotations carry.
type Workload struct {
	Kind      WorkloadKind `json:"kind"`
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
}

// String is the one string form of a workload reference:
// "Kind/namespace/name", which ParseWorkload reads back.
func (w Workload) String() string { return string(w.Kind) + "/" + w.Namespace + "/" + w.Name }

// ParseWorkload reads "Kind/namespace/name".
func ParseWorkload(s string) (Workload, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return Workload{}, fmt.Errorf("%q: want Kind/namespace/name, e.g. Deployment/monitoring/metrics", s)
	}
	w := Workload{Kind: WorkloadKind(parts[0]), Namespace: parts[1], Name: parts[2]}
	if w.Kind.Resource() == "" {
		return Workload{}, fmt.Errorf("%q: kind %q is not one of %v", s, parts[0], WorkloadKinds())
	}
	return w, nil
}
