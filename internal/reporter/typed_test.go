package reporter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// TestTypedReportersAndAggregator: reporters writing OpenShift's typed
// healthReports (--report-format=openshift-typed) feed the reconciler's
// aggregator as conditions do: it rolls them up into KMSPluginsDegraded on
// the same object, and removes the entries of a deleted Node (the last
// ones with the whole list, which the published schema cannot hold empty).
func TestTypedReportersAndAggregator(t *testing.T) {
	// Serial: TestReportersAndAggregator restarts the API server.
	ctx := context.Background()
	const object = "typed-aggregation"
	if err := kmstest.InstallOpenShiftKubeAPIServer(ctx, dyn(t), object); err != nil {
		t.Fatal(err)
	}
	target := kmshealth.Target{Group: kmstest.KubeAPIServers.Group, Version: kmstest.KubeAPIServers.Version, Resource: kmstest.KubeAPIServers.Resource, Name: object}
	recLog := &devenv.SyncBuffer{}
	rec, err := devenv.StartReconcile(ctx, binary, recLog, env.Token, "--kubeconfig="+env.Kubeconfig, "--leader-elect=false",
		"--kms-target="+target.String(), "--kms-max-staleness="+staleness.String(),
		// Only this test's nodes: the other test's control-plane Nodes
		// never report to this object.
		"--kms-expected-nodes=kmshealth.test/typed=yes",
		"--leader-elect-lease-name=kmshealth-reconciler-typed")
	if err != nil {
		t.Fatalf("start reconciler: %v\n%s", err, recLog)
	}
	t.Cleanup(func() {
		rec.Stop()
		if t.Failed() {
			t.Logf("reconciler log:\n%s", recLog)
		}
	})
	typed := "--report-format=" + string(kmshealth.FormatOpenShiftTyped)
	nodes := []*node{startNode(t, "typed-cp-1", "kek-a", target, typed), startNode(t, "typed-cp-2", "kek-a", target, typed)}
	for _, n := range nodes {
		labelNode(t, n.name, "kmshealth.test/typed", "yes")
	}

	wait := func(timeout time.Duration, what string, pred func(reports []kmshealth.NodeReport, degraded metav1.Condition, u *unstructured.Unstructured) bool) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var last *unstructured.Unstructured
		err := kube.WaitFor(wctx, dyn(t).Resource(target.GVR()), object, func(u *unstructured.Unstructured) (bool, error) {
			last = u
			reports, format := kmshealth.Reports(u)
			var degraded metav1.Condition
			for _, c := range kmshealth.Conditions(u) {
				if c.Type == kmshealth.DegradedCondition {
					degraded = c
				}
			}
			return format == kmshealth.FormatOpenShiftTyped && pred(reports, degraded, u), nil
		})
		if err != nil {
			t.Fatalf("%s: not within %s: %v\nlast status: %v", what, timeout, err, last.Object["status"])
		}
	}
	wait(30*time.Second, "two nodes' typed reports, KMSPluginsDegraded=False", func(r []kmshealth.NodeReport, d metav1.Condition, _ *unstructured.Unstructured) bool {
		return len(r) == 2 && d.Status == metav1.ConditionFalse
	})

	nodes[1].plugin.SetHealthz("kms backend unreachable")
	wait(3*interval, "typed-cp-2 unhealthy, rolled up", func(_ []kmshealth.NodeReport, d metav1.Condition, _ *unstructured.Unstructured) bool {
		return d.Status == metav1.ConditionTrue && d.Reason == kmshealth.ReasonUnhealthy && strings.Contains(d.Message, "typed-cp-2")
	})
	nodes[1].plugin.SetHealthz("ok")

	// A node goes away: its reporter first, then its Node object.
	nodes[1].reporter.Stop()
	if err := env.Clientset().CoreV1().Nodes().Delete(ctx, nodes[1].name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(15*time.Second, "typed-cp-2's entries removed, rollup healthy", func(r []kmshealth.NodeReport, d metav1.Condition, _ *unstructured.Unstructured) bool {
		return len(r) == 1 && r[0].Node == nodes[0].name && d.Status == metav1.ConditionFalse
	})

	// The last node goes: the list goes with it (the schema wants at
	// least one entry), and with nothing expected, so does the rollup.
	nodes[0].reporter.Stop()
	if err := env.Clientset().CoreV1().Nodes().Delete(ctx, nodes[0].name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = kube.WaitFor(wctx, dyn(t).Resource(target.GVR()), object, func(u *unstructured.Unstructured) (bool, error) {
		_, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "encryptionStatus")
		return !found, nil
	})
	if err != nil {
		t.Fatalf("encryptionStatus still there after every reporting Node was deleted: %v", err)
	}
}

// labelNode sets one label on a Node.
func labelNode(t *testing.T, name, key, value string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + key + `":"` + value + `"}}}`)
	if _, err := env.Clientset().CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
