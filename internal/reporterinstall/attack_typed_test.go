package reporterinstall

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// TestReporterAttacksTyped is TestReporterAttacks for a reporter installed
// with report_format = openshift-typed on an OpenShift KubeAPIServer (the
// stand-in CRD with the published healthReports schema): with the
// reporter's real token bound to a pod on node A, the API server must deny
// each change outside node A's own healthReports entries, and let node A's
// own report through.
func TestReporterAttacksTyped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	core, admin := clients(t)
	const object = "rep-typed-attack"
	if err := kmstest.InstallOpenShiftKubeAPIServer(ctx, admin, object); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Resource(kmstest.KubeAPIServers).Delete(context.Background(), object, metav1.DeleteOptions{})
	})
	nodeA, nodeB := "typed-node-a", "typed-node-b"
	for _, n := range []string{nodeA, nodeB} {
		if _, err := core.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = core.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	createNamespace(t, core, "rep-typed-attack", nil)
	c := DefaultConfig("rep-typed-attack", "test")
	c.Target = kmshealth.Target{Group: kmstest.KubeAPIServers.Group, Version: kmstest.KubeAPIServers.Version, Resource: kmstest.KubeAPIServers.Resource, Name: object}
	c.InstallCRD = false
	c.ReportFormat = kmshealth.FormatOpenShiftTyped
	c.AdmissionPolicy = true
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mustApply(t, c)
	t.Cleanup(func() { mustDelete(t, c, false) })
	target := c.Target
	const kind = "KubeAPIServer"

	fresh := []kmshealth.Plugin{{KeyID: "1", KEKID: "k-1", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}
	// Node B has reported, as its own reporter would.
	if err := kmshealth.ApplyHealthReports(ctx, admin, target, kind, nodeB, fresh, time.Now(), kmshealth.ReporterFieldManager(nodeB)); err != nil {
		t.Fatal(err)
	}

	asNodeA := dynamic.NewForConfigOrDie(testenv.AsToken(env.RESTConfig(), testenv.PodToken(t, core, c.Namespace, c.ServiceAccountName(), nodeA)))
	policy := c.PolicyName()
	report := func(node string, plugins []kmshealth.Plugin, manager string) error {
		return kmshealth.ApplyHealthReports(ctx, asNodeA, target, kind, node, plugins, time.Now(), manager)
	}
	forgedB := []kmshealth.Plugin{{KeyID: "1", KEKID: "forged", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}
	testenv.WaitForPolicy(t, policy, func() error {
		body := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operator.openshift.io/v1", "kind": kind, "metadata": map[string]any{"name": object},
			"status": map[string]any{"encryptionStatus": map[string]any{"healthReports": kmshealth.HealthReportEntries(nodeB, forgedB, time.Now())}},
		}}
		_, err := asNodeA.Resource(target.GVR()).Apply(ctx, object, body,
			metav1.ApplyOptions{FieldManager: kmshealth.ReporterFieldManager(nodeB), Force: true, DryRun: []string{metav1.DryRunAll}}, "status")
		return err
	})

	if err := report(nodeA, fresh, kmshealth.ReporterFieldManager(nodeA)); err != nil {
		t.Fatalf("node A's reporter cannot write its own healthReports entries under the policy: %v", err)
	}

	testenv.Denied(t, "node A's token overwrites node B's entry",
		report(nodeB, forgedB, kmshealth.ReporterFieldManager(nodeB)),
		testenv.PolicyDenial(policy), "may change only the healthReports entries of node "+nodeA)

	removeAll, _ := json.Marshal([]map[string]any{{"op": "remove", "path": "/status/encryptionStatus"}})
	_, err := asNodeA.Resource(target.GVR()).Patch(ctx, object, types.JSONPatchType, removeAll, metav1.PatchOptions{}, "status")
	testenv.Denied(t, "node A's token deletes every entry", err, testenv.PolicyDenial(policy))

	future := []kmshealth.Plugin{{KeyID: "1", KEKID: "k-1", Status: kmshealth.StatusHealthy, LastChecked: time.Now().Add(time.Hour)}}
	testenv.Denied(t, "node A's token sets lastCheckedTime an hour ahead",
		report(nodeA, future, kmshealth.ReporterFieldManager(nodeA)),
		testenv.PolicyDenial(policy), "ahead of the API server's clock")

	testenv.Denied(t, "node A's token writes entries for a node of another name",
		report(nodeA+"-2", fresh, kmshealth.ReporterFieldManager(nodeA+"-2")),
		testenv.PolicyDenial(policy), "may change only the healthReports entries of node "+nodeA)

	// Another field of the status, and the spec: outside the entries.
	otherStatus, _ := json.Marshal(map[string]any{"status": map[string]any{"latestAvailableRevision": 7}})
	_, err = asNodeA.Resource(target.GVR()).Patch(ctx, object, types.MergePatchType, otherStatus, metav1.PatchOptions{}, "status")
	testenv.Denied(t, "node A's token changes status.latestAvailableRevision", err,
		testenv.PolicyDenial(policy), "may change only .status.encryptionStatus.healthReports")

	unbound := testenv.ServiceAccountToken(t, core, c.Namespace, c.ServiceAccountName())
	asNobody := dynamic.NewForConfigOrDie(testenv.AsToken(env.RESTConfig(), unbound))
	testenv.Denied(t, "a token of the reporter's ServiceAccount bound to no pod writes node A's entries",
		kmshealth.ApplyHealthReports(ctx, asNobody, target, kind, nodeA, fresh, time.Now(), kmshealth.ReporterFieldManager(nodeA)),
		testenv.PolicyDenial(policy), "must be bound to a pod on a node")

	// What was written stands: node B's report is its own.
	obj, err := kmshealth.GetTarget(ctx, admin, target)
	if err != nil {
		t.Fatal(err)
	}
	reports, format := kmshealth.Reports(obj)
	if format != kmshealth.FormatOpenShiftTyped {
		t.Fatalf("the target reads as format %q, want %q", format, kmshealth.FormatOpenShiftTyped)
	}
	h := kmshealth.EvaluateReports(reports, kmshealth.EvalOptions{Now: time.Now(), MaxStaleness: time.Minute})
	if !h.RotationReady || h.ActiveKEKIDs["1"] != "k-1" || len(h.Nodes) != 2 {
		t.Errorf("after the attacks: %+v, want nodes A and B healthy on k-1", h)
	}
}
