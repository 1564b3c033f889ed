package install

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Kind is one kind of object an installation can hold: where it is served
// and how to extract the fields FieldManager owns from a live object, to
// compare them with what would be applied. One value per kind, shared by
// every installer.
type Kind struct {
	Name       string // e.g. "ServiceAccount"
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// extractors return, per kind with a typed apply configuration, the fields
// FieldManager owns in a live object; kinds without one (custom resources)
// are compared by containment instead. Filled when the package's kinds are
// declared, read-only after.
var extractors = map[schema.GroupVersionResource]func(live *unstructured.Unstructured) (any, error){}

func (k Kind) extract() func(*unstructured.Unstructured) (any, error) { return extractors[k.GVR] }

// typedKind is a kind with a typed apply configuration: live objects are
// converted to T and FieldManager's fields extracted with client-go's
// generated Extract function.
func typedKind[T any, A any](name string, gvr schema.GroupVersionResource, namespaced bool, extract func(*T, string) (A, error)) Kind {
	extractors[gvr] = func(live *unstructured.Unstructured) (any, error) {
		typed, err := As[T](live)
		if err != nil {
			return nil, err
		}
		return extract(typed, FieldManager)
	}
	return Kind{Name: name, GVR: gvr, Namespaced: namespaced}
}

// CustomKind is a kind without a typed apply configuration (a
// CustomResourceDefinition, a custom resource): drift is found by checking
// that the live object contains every applied field.
func CustomKind(name string, gvr schema.GroupVersionResource, namespaced bool) Kind {
	return Kind{Name: name, GVR: gvr, Namespaced: namespaced}
}

// The kinds the installers use.
var (
	Namespaces           = typedKind("Namespace", corev1.SchemeGroupVersion.WithResource("namespaces"), false, corev1ac.ExtractNamespace)
	ServiceAccounts      = typedKind("ServiceAccount", corev1.SchemeGroupVersion.WithResource("serviceaccounts"), true, corev1ac.ExtractServiceAccount)
	ConfigMaps           = typedKind("ConfigMap", corev1.SchemeGroupVersion.WithResource("configmaps"), true, corev1ac.ExtractConfigMap)
	Services             = typedKind("Service", corev1.SchemeGroupVersion.WithResource("services"), true, corev1ac.ExtractService)
	ClusterRoles         = typedKind("ClusterRole", rbacv1.SchemeGroupVersion.WithResource("clusterroles"), false, rbacv1ac.ExtractClusterRole)
	ClusterRoleBindings  = typedKind("ClusterRoleBinding", rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), false, rbacv1ac.ExtractClusterRoleBinding)
	Roles                = typedKind("Role", rbacv1.SchemeGroupVersion.WithResource("roles"), true, rbacv1ac.ExtractRole)
	RoleBindings         = typedKind("RoleBinding", rbacv1.SchemeGroupVersion.WithResource("rolebindings"), true, rbacv1ac.ExtractRoleBinding)
	Deployments          = typedKind("Deployment", appsv1.SchemeGroupVersion.WithResource("deployments"), true, appsv1ac.ExtractDeployment)
	DaemonSets           = typedKind("DaemonSet", appsv1.SchemeGroupVersion.WithResource("daemonsets"), true, appsv1ac.ExtractDaemonSet)
	StatefulSets         = typedKind("StatefulSet", appsv1.SchemeGroupVersion.WithResource("statefulsets"), true, appsv1ac.ExtractStatefulSet)
	PodDisruptionBudgets = typedKind("PodDisruptionBudget", policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), true,
		policyv1ac.ExtractPodDisruptionBudget)
	ValidatingAdmissionPolicies = typedKind("ValidatingAdmissionPolicy",
		admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), false,
		admissionregistrationv1ac.ExtractValidatingAdmissionPolicy)
	ValidatingAdmissionPolicyBindings = typedKind("ValidatingAdmissionPolicyBinding",
		admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"), false,
		admissionregistrationv1ac.ExtractValidatingAdmissionPolicyBinding)
	CustomResourceDefinitions = CustomKind("CustomResourceDefinition",
		schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false)
)

// NetworkPolicies are written by the rbac proxy's declaration.
var NetworkPolicies = typedKind("NetworkPolicy", networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), true, networkingv1ac.ExtractNetworkPolicy)

// As converts a live object to its typed form.
func As[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return out, nil
}

// toUnstructured turns an apply configuration (typed, or already
// unstructured) into the body of a server-side apply.
func toUnstructured(body any) (*unstructured.Unstructured, error) {
	if u, ok := body.(*unstructured.Unstructured); ok {
		return u, nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &u.Object); err != nil {
		return nil, err
	}
	return u, nil
}

// workloadKinds are the install kinds of kube's workload kinds.
var workloadKinds = map[kube.WorkloadKind]Kind{
	kube.KindDeployment:  Deployments,
	kube.KindStatefulSet: StatefulSets,
	kube.KindDaemonSet:   DaemonSets,
}

// WorkloadID is the ID of the workload w names; ok is false for a kind
// that is not a workload kind.
func WorkloadID(w kube.Workload) (id ID, ok bool) {
	k, ok := workloadKinds[w.Kind]
	return ID{Kind: k, Namespace: w.Namespace, Name: w.Name}, ok
}
