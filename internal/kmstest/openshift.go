package kmstest

import (
	"context"
	_ "embed"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

//go:embed openshift_kubeapiservers_crd.yaml
var kubeAPIServersCRD []byte

// KubeAPIServers is the resource of OpenShift's KubeAPIServer operator CR.
var KubeAPIServers = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "kubeapiservers"}

// InstallOpenShiftKubeAPIServer installs a stand-in for OpenShift's
// KubeAPIServer CRD with the typed KMS health report schema, waits until
// it is served and creates the object name (spec only; status is the
// reporters'). Both may exist already.
func InstallOpenShiftKubeAPIServer(ctx context.Context, dyn dynamic.Interface, name string) error {
	var crd map[string]any
	if err := yaml.Unmarshal(kubeAPIServersCRD, &crd); err != nil {
		return fmt.Errorf("embedded KubeAPIServer CRD: %w", err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	u := &unstructured.Unstructured{Object: crd}
	if _, err := dyn.Resource(crdGVR).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "kmstest", Force: true}); err != nil {
		return fmt.Errorf("apply KubeAPIServer CRD: %w", err)
	}
	err := kube.WaitFor(ctx, dyn.Resource(crdGVR), u.GetName(), func(c *unstructured.Unstructured) (bool, error) {
		conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
		for _, x := range conds {
			m, _ := x.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("KubeAPIServer CRD established: %w", err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "KubeAPIServer",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{},
	}}
	if _, err := dyn.Resource(KubeAPIServers).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create kubeapiservers/%s: %w", name, err)
	}
	return nil
}

// HealthReport is one entry of OpenShift's typed healthReports, as
// openshift/library-go's KMS health reporter writes it.
type HealthReport struct {
	NodeName, KeyID, Status, LastCheckedTime, RemoteKeyID, Detail string
}

// ApplyOpenShiftHealthReports writes one node's entries the way
// library-go's reporter does: one server-side apply of
// status.encryptionStatus.healthReports on the status subresource, forced,
// under a field manager of that node.
func ApplyOpenShiftHealthReports(ctx context.Context, dyn dynamic.Interface, name, fieldManager string, reports ...HealthReport) error {
	entries := make([]any, 0, len(reports))
	for _, r := range reports {
		e := map[string]any{"nodeName": r.NodeName, "keyID": r.KeyID, "status": r.Status, "lastCheckedTime": r.LastCheckedTime}
		if r.RemoteKeyID != "" {
			e["remoteKeyID"] = r.RemoteKeyID
		}
		if r.Detail != "" {
			e["detail"] = r.Detail
		}
		entries = append(entries, e)
	}
	body := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "KubeAPIServer",
		"metadata": map[string]any{"name": name},
		"status":   map[string]any{"encryptionStatus": map[string]any{"healthReports": entries}},
	}}
	if _, err := dyn.Resource(KubeAPIServers).Apply(ctx, name, body, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}, "status"); err != nil {
		return fmt.Errorf("apply healthReports on kubeapiservers/%s: %w", name, err)
	}
	return nil
}
