package reporterinstall

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// TestReporterAttacks tries, with a reporter's real token (bound to a pod
// on node A, as the kubelet requests it), what a compromised reporter
// could, and requires the API server to deny each: the admission policy
// installed beside the DaemonSet, not kmshealth's code. The legitimate
// report still goes through.
func TestReporterAttacks(t *testing.T) {
	ctx := context.Background()
	core, admin := clients(t)
	createNamespace(t, core, "rep-attack", nil)
	for _, n := range []string{"node-a", "node-b"} {
		if _, err := core.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = core.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	c := DefaultConfig("rep-attack", "test")
	c.AdmissionPolicy = true
	mustApply(t, c)
	t.Cleanup(func() { mustDelete(t, c, true) })
	target := c.Target

	// Node B has reported, as its own reporter would.
	nodeB := kmshealth.ConditionBuilder{Node: "node-b"}
	fresh := []kmshealth.Plugin{{KeyID: "1", KEKID: "k-1", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}
	if err := kmshealth.ApplyCondition(ctx, admin, target, kmshealth.Kind, nodeB.Build(fresh, time.Now()), kmshealth.ReporterFieldManager("node-b")); err != nil {
		t.Fatal(err)
	}

	asNodeA := dynamic.NewForConfigOrDie(testenv.AsToken(env.RESTConfig(), testenv.PodToken(t, core, c.Namespace, c.ServiceAccountName(), "node-a")))
	policy := c.PolicyName()
	report := func(b *kmshealth.ConditionBuilder, plugins []kmshealth.Plugin, manager string) error {
		return kmshealth.ApplyCondition(ctx, asNodeA, target, kmshealth.Kind, b.Build(plugins, time.Now()), manager)
	}
	forgedB := func() metav1.Condition {
		b := kmshealth.ConditionBuilder{Node: "node-b"}
		return b.Build([]kmshealth.Plugin{{KeyID: "1", KEKID: "forged", Status: kmshealth.StatusHealthy, LastChecked: time.Now()}}, time.Now())
	}
	overwriteB := func() error {
		return kmshealth.ApplyCondition(ctx, asNodeA, target, kmshealth.Kind, forgedB(), kmshealth.ReporterFieldManager("node-b"))
	}
	// Probed by dry run: a probe that went through before the policy took
	// effect must not change what the test checks.
	testenv.WaitForPolicy(t, policy, func() error {
		return kmshealth.DryRunCondition(ctx, asNodeA, target, kmshealth.Kind, forgedB(), kmshealth.ReporterFieldManager("node-b"))
	})

	// The legitimate write: node A's own condition.
	nodeA := &kmshealth.ConditionBuilder{Node: "node-a"}
	if err := report(nodeA, fresh, kmshealth.ReporterFieldManager("node-a")); err != nil {
		t.Fatalf("node A's reporter cannot write its own condition under the policy: %v", err)
	}

	testenv.Denied(t, "node A's token overwrites node B's entry", overwriteB(),
		testenv.PolicyDenial(policy), "may change only the condition KMSHealthReporter_node-a")

	removeAll, _ := json.Marshal([]map[string]any{{"op": "remove", "path": "/status/conditions"}})
	_, err := asNodeA.Resource(target.GVR()).Patch(ctx, target.Name, types.JSONPatchType, removeAll, metav1.PatchOptions{}, "status")
	testenv.Denied(t, "node A's token deletes every entry", err, testenv.PolicyDenial(policy))

	future := []kmshealth.Plugin{{KeyID: "1", KEKID: "k-1", Status: kmshealth.StatusHealthy, LastChecked: time.Now().Add(time.Hour)}}
	testenv.Denied(t, "node A's token sets lastChecked an hour ahead", report(nodeA, future, kmshealth.ReporterFieldManager("node-a")),
		testenv.PolicyDenial(policy), "ahead of the API server's clock")

	// A key the policy's regular expression would miss but encoding/json
	// reads as lastChecked: in another case, and spelt with an escape.
	hidden := nodeA.Build(future, time.Now())
	for what, spelling := range map[string]string{"in another case": `"LastChecked"`, "spelt with an escape": `"lastChe\u0063ked"`} {
		forged := hidden
		forged.Message = strings.Replace(forged.Message, `"lastChecked"`, spelling, 1)
		if ps, err := kmshealth.ParseMessage(forged.Message); err != nil || !ps[0].LastChecked.After(time.Now().Add(time.Minute)) {
			t.Fatalf("the forged message %s no longer reads as a future lastChecked (%v, %v): the attack tests nothing", forged.Message, ps, err)
		}
		testenv.Denied(t, "node A's token hides a lastChecked an hour ahead behind a key "+what,
			kmshealth.ApplyCondition(ctx, asNodeA, target, kmshealth.Kind, forged, kmshealth.ReporterFieldManager("node-a")),
			testenv.PolicyDenial(policy), "exactly what a reporter writes")
	}

	// The largest report a reporter writes (every detail at its bound)
	// stays within the policy's CEL cost budget.
	var many []kmshealth.Plugin
	for i := 0; len(kmshealth.FormatMessage(many)) < kmshealth.MaxMessageBytes*9/10; i++ {
		many = append(many, kmshealth.Plugin{KeyID: strconv.Itoa(i), Status: kmshealth.StatusError, LastChecked: time.Now(), Detail: strings.Repeat(`"<`, kmshealth.MaxDetailBytes/2)})
	}
	if msg := kmshealth.FormatMessage(many); len(msg) > kmshealth.MaxMessageBytes || !strings.Contains(msg, strings.Repeat(`\"<`, kmshealth.MaxDetailBytes/2)) {
		t.Fatalf("the large report (%d bytes) lost its full details: it tests less than the largest report", len(msg))
	}
	if err := report(nodeA, many, kmshealth.ReporterFieldManager("node-a")); err != nil {
		t.Fatalf("node A's largest legitimate report is refused under the policy: %v", err)
	}
	if err := report(nodeA, fresh, kmshealth.ReporterFieldManager("node-a")); err != nil {
		t.Fatal(err)
	}

	testenv.Denied(t, "node A's token writes a second entry for itself under another name",
		report(&kmshealth.ConditionBuilder{Node: "node-a-2"}, fresh, kmshealth.ReporterFieldManager("node-a-2")),
		testenv.PolicyDenial(policy), "may change only the condition KMSHealthReporter_node-a")

	unbound := testenv.ServiceAccountToken(t, core, c.Namespace, c.ServiceAccountName())
	asNobody := dynamic.NewForConfigOrDie(testenv.AsToken(env.RESTConfig(), unbound))
	err = kmshealth.ApplyCondition(ctx, asNobody, target, kmshealth.Kind, nodeA.Build(fresh, time.Now()), kmshealth.ReporterFieldManager("node-a"))
	testenv.Denied(t, "a token of the reporter's ServiceAccount bound to no pod writes node A's entry", err,
		testenv.PolicyDenial(policy), "must be bound to a pod on a node")

	// What was written stands: node B's report is its own, node A's is fresh.
	obj, err := kmshealth.GetTarget(ctx, admin, target)
	if err != nil {
		t.Fatal(err)
	}
	h := kmshealth.Evaluate(kmshealth.Conditions(obj), kmshealth.EvalOptions{Now: time.Now(), MaxStaleness: time.Minute})
	if !h.RotationReady || h.ActiveKEKIDs["1"] != "k-1" {
		t.Errorf("after the attacks: %+v, want both nodes healthy on k-1", h)
	}
}
