package reconcilerinstall

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// TestReconcilerAttacksTypedReports: with a KMS target that carries
// OpenShift's typed healthReports, the reconciler's token may remove the
// entries of deleted Nodes (what its aggregator does) and write its
// rollup, but the admission policy denies adding or changing an entry and
// changing anything else of the status.
func TestReconcilerAttacksTypedReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := clients()
	const object = "rec-typed-attack"
	if err := kmstest.InstallOpenShiftKubeAPIServer(ctx, admin.Dynamic, object); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Dynamic.Resource(kmstest.KubeAPIServers).Delete(context.Background(), object, metav1.DeleteOptions{})
	})
	target := kmshealth.Target{Group: kmstest.KubeAPIServers.Group, Version: kmstest.KubeAPIServers.Version, Resource: kmstest.KubeAPIServers.Resource, Name: object}
	createNamespace(t, env.Clientset(), "rec-typed-attack")
	c := Config{Namespace: "rec-typed-attack", Name: "rec", Image: "x", Replicas: 1, AdmissionPolicy: true, KMSTarget: target}
	mustApply(t, c)
	t.Cleanup(func() { _ = Delete(context.Background(), clients(), c.Namespace, c.Name, false) })

	// Two nodes have reported, as their reporters would.
	healthy := []kmshealth.Plugin{{KeyID: "1", KEKID: "k-1", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}
	for _, node := range []string{"typed-x", "typed-y"} {
		if err := kmshealth.ApplyHealthReports(ctx, admin.Dynamic, target, "KubeAPIServer", node, healthy, time.Now(), kmshealth.ReporterFieldManager(node)); err != nil {
			t.Fatal(err)
		}
	}
	asDyn := dynamic.NewForConfigOrDie(asReconciler(t, c))
	policy := c.PolicyName("kms-status")
	forged := []kmshealth.Plugin{{KeyID: "1", KEKID: "forged", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}
	testenv.WaitForPolicy(t, policy, func() error {
		body := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operator.openshift.io/v1", "kind": "KubeAPIServer", "metadata": map[string]any{"name": object},
			"status": map[string]any{"encryptionStatus": map[string]any{"healthReports": kmshealth.HealthReportEntries("typed-z", forged, time.Now())}},
		}}
		_, err := asDyn.Resource(target.GVR()).Apply(ctx, object, body,
			metav1.ApplyOptions{FieldManager: kmshealth.ReporterFieldManager("typed-z"), Force: true, DryRun: []string{metav1.DryRunAll}}, "status")
		return err
	})

	testenv.Denied(t, "the reconciler's token adds a node's typed report",
		kmshealth.ApplyHealthReports(ctx, asDyn, target, "KubeAPIServer", "typed-z", forged, time.Now(), kmshealth.ReporterFieldManager("typed-z")),
		testenv.PolicyDenial(policy), "never add or change a report")
	testenv.Denied(t, "the reconciler's token changes a node's typed report",
		kmshealth.ApplyHealthReports(ctx, asDyn, target, "KubeAPIServer", "typed-x", forged, time.Now(), kmshealth.ReporterFieldManager("typed-x")),
		testenv.PolicyDenial(policy), "never add or change a report")
	other, _ := json.Marshal(map[string]any{"status": map[string]any{"latestAvailableRevision": 9}})
	_, err := asDyn.Resource(target.GVR()).Patch(ctx, object, types.MergePatchType, other, metav1.PatchOptions{}, "status")
	testenv.Denied(t, "the reconciler's token changes another field of the status", err,
		testenv.PolicyDenial(policy), "may change only .status.conditions and remove entries of .status.encryptionStatus.healthReports")

	// What its aggregator does is allowed: a deleted node's entries go,
	// and with the last of them the list.
	obj, err := kmshealth.GetTarget(ctx, admin.Dynamic, target)
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := kmshealth.RemoveHealthReports(ctx, asDyn, target, obj, func(n string) bool { return n == "typed-y" }); err != nil || len(removed) != 1 {
		t.Fatalf("the reconciler cannot remove typed-y's entries: %v %v", removed, err)
	}
	if obj, err = kmshealth.GetTarget(ctx, admin.Dynamic, target); err != nil {
		t.Fatal(err)
	}
	if reports, _ := kmshealth.TypedReports(obj); len(reports) != 1 || reports[0].Node != "typed-x" {
		t.Fatalf("after removing typed-y: %+v, want typed-x's report alone", reports)
	}
	if _, err := kmshealth.RemoveHealthReports(ctx, asDyn, target, obj, func(string) bool { return true }); err != nil {
		t.Fatalf("the reconciler cannot remove the last entries: %v", err)
	}
	if obj, err = kmshealth.GetTarget(ctx, admin.Dynamic, target); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "encryptionStatus"); found {
		t.Errorf("encryptionStatus left after its last entry went: %v", obj.Object["status"])
	}
}
