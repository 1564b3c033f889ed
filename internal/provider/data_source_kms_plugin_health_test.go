package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
)

const healthAddr = "data.kmshealth_kms_plugin_health.test"

// healthConfig is a kmshealth_kms_plugin_health "test" with the given body.
func healthConfig(body string) string {
	return providerBlock() + "\ndata \"kmshealth_kms_plugin_health\" \"test\" {\n" + body + "\n}\n"
}

// kmsHealthCRDUsers counts the tests that use the KMSHealth CRD right now.
// The data source tests run in parallel on one API server and the CRD is
// cluster-scoped: the first user installs it, the last one removes it.
var kmsHealthCRDUsers struct {
	sync.Mutex
	n         int
	installed bool // by these tests (not someone else's), so the last user removes it
}

// ensureKMSHealthCRD installs the KMSHealth CRD as kmshealth_reporter does
// and waits until it is established, unless another test using it now (or
// someone else) already did. When these tests installed it, the last test
// to use it removes it at its end and waits until it is gone, so a later
// test (or another resource's test that installs it) starts from a cluster
// without it.
func ensureKMSHealthCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crds := dynamicClient().Resource(kmshealth.CRDGVR)
	users := &kmsHealthCRDUsers
	users.Lock()
	defer users.Unlock()
	if users.n == 0 {
		_, err := crds.Get(ctx, kmshealth.CRDName, metav1.GetOptions{})
		switch {
		case err == nil:
			users.installed = false // someone else's; leave it
		case !apierrors.IsNotFound(err):
			t.Fatal(err)
		default:
			if err := reporterinstall.InstallCRD(ctx, testInstallClients(), testTargetInstallation(kmshealth.DefaultTarget())); err != nil {
				t.Fatal(err)
			}
			users.installed = true
		}
	}
	users.n++
	t.Cleanup(func() {
		users.Lock()
		defer users.Unlock()
		users.n--
		if users.n > 0 || !users.installed {
			return
		}
		users.installed = false
		if err := crds.Delete(ctx, kmshealth.CRDName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", kmshealth.CRDName, err)
			return
		}
		if err := waitGone(crds, kmshealth.CRDName, time.Minute); err != nil {
			t.Errorf("CRD %s not gone: %v", kmshealth.CRDName, err)
		}
	})
}

// waitGone watches until the named object no longer exists.
func waitGone(ri dynamic.ResourceInterface, name string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	gone := func(store cache.Store) (bool, error) {
		_, exists, err := store.GetByKey(name)
		return !exists, err
	}
	_, err := watchtools.UntilWithSync(ctx, listWatch(ri.List, ri.Watch, "metadata.name="+name), &unstructured.Unstructured{}, gone,
		func(ev watch.Event) (bool, error) { return ev.Type == watch.Deleted, nil })
	return err
}

// healthTargetFor is the KMSHealth object of this test (not yet created).
func healthTargetFor(t *testing.T, suffix string) kmshealth.Target {
	tg := kmshealth.DefaultTarget()
	tg.Name = uniqueName(t) + suffix
	return tg
}

// createKMSHealth creates the KMSHealth object tg (the CRD must be
// installed) and deletes it when the test ends.
func createKMSHealth(t *testing.T, tg kmshealth.Target) {
	t.Helper()
	if err := createKMSHealthObject(tg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := dynamicClient().Resource(tg.GVR()).Delete(context.Background(), tg.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", tg, err)
		}
	})
}

// createKMSHealthObject creates the KMSHealth object tg, retrying while a
// CRD just established is not served yet.
func createKMSHealthObject(tg kmshealth.Target) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return reporterinstall.CreateTarget(ctx, testInstallClients(), testTargetInstallation(tg))
}

// testTargetInstallation is the reporter installation whose CRD and
// targets these tests create, through the installer, as
// kmshealth_reporter does.
func testTargetInstallation(tg kmshealth.Target) reporterinstall.Config {
	c := reporterinstall.DefaultConfig("kube-system", "kmshealth-test")
	c.Target = tg
	return c
}

func testInstallClients() install.Clients {
	return install.Clients{Core: env.Clientset(), Dynamic: dynamicClient()}
}

// newKMSHealthTarget installs the CRD if needed and creates this test's
// KMSHealth object.
func newKMSHealthTarget(t *testing.T) kmshealth.Target {
	t.Helper()
	ensureKMSHealthCRD(t)
	tg := healthTargetFor(t, "")
	createKMSHealth(t, tg)
	return tg
}

// writeReport writes node's condition exactly as its reporter does: built
// by a ConditionBuilder, server-side applied under the node's field manager.
func writeReport(tg kmshealth.Target, node string, plugins ...kmshealth.Plugin) error {
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		return err
	}
	b := kmshealth.ConditionBuilder{Node: node}
	cond := b.Build(plugins, time.Now())
	return kmshealth.ApplyCondition(context.Background(), dyn, tg, kmshealth.Kind, cond, kmshealth.ReporterFieldManager(node))
}

func mustReport(t *testing.T, tg kmshealth.Target, node string, plugins ...kmshealth.Plugin) {
	t.Helper()
	if err := writeReport(tg, node, plugins...); err != nil {
		t.Fatal(err)
	}
}

func healthyPlugin(keyID, kekID string, at time.Time) kmshealth.Plugin {
	return kmshealth.Plugin{KeyID: keyID, KEKID: kekID, Status: kmshealth.StatusHealthy, LastChecked: at}
}

func unhealthyPlugin(keyID, kekID, detail string, at time.Time) kmshealth.Plugin {
	return kmshealth.Plugin{KeyID: keyID, KEKID: kekID, Status: kmshealth.StatusUnhealthy, LastChecked: at, Detail: detail}
}

// reportNow is the current time as the reporter writes it (whole seconds, UTC).
func reportNow() time.Time { return time.Now().UTC().Truncate(time.Second) }

func rfc3339Time(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func targetArg(tg kmshealth.Target) string { return fmt.Sprintf("target = %q\n", tg.String()) }

// TestAccKMSPluginHealth_healthy: three nodes with two healthy plugins each,
// all on the same keys: healthy, rotation ready, every attribute filled.
func TestAccKMSPluginHealth_healthy(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	at := reportNow()
	for _, n := range []string{"cp-b", "cp-a", "cp-c"} {
		mustReport(t, tg, n, healthyPlugin("2", "k-2", at), healthyPlugin("1", "k-1", at.Add(-time.Second)))
	}
	checks := []resource.TestCheckFunc{
		resource.TestCheckResourceAttr(healthAddr, "target", tg.String()),
		resource.TestCheckResourceAttr(healthAddr, "max_staleness", "2m0s"),
		resource.TestCheckResourceAttr(healthAddr, "require_healthy", "false"),
		resource.TestCheckResourceAttr(healthAddr, "wait_timeout", "0s"),
		resource.TestCheckNoResourceAttr(healthAddr, "expected_nodes.#"),
		resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
		resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
		resource.TestCheckResourceAttr(healthAddr, "degraded_reason", ""),
		resource.TestCheckResourceAttr(healthAddr, "problems.#", "0"),
		resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.%", "2"),
		resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.1", "k-1"),
		resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.2", "k-2"),
		resource.TestCheckResourceAttr(healthAddr, "nodes.#", "3"),
	}
	for i, n := range []string{"cp-a", "cp-b", "cp-c"} {
		node := fmt.Sprintf("nodes.%d.", i)
		checks = append(checks,
			resource.TestCheckResourceAttr(healthAddr, node+"name", n),
			resource.TestCheckResourceAttr(healthAddr, node+"status", "healthy"),
			resource.TestCheckResourceAttr(healthAddr, node+"stale", "false"),
			resource.TestCheckResourceAttr(healthAddr, node+"last_checked", rfc3339Time(at.Add(-time.Second))), // the oldest check
			resource.TestCheckResourceAttr(healthAddr, node+"problem", ""),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.#", "2"),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.0.key_id", "1"),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.0.kek_id", "k-1"),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.0.status", "healthy"),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.0.last_checked", rfc3339Time(at.Add(-time.Second))),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.0.detail", ""),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.1.key_id", "2"),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.1.kek_id", "k-2"),
			resource.TestCheckResourceAttr(healthAddr, node+"plugins.1.last_checked", rfc3339Time(at)),
		)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{Config: healthConfig(targetArg(tg)), Check: resource.ComposeAggregateTestCheckFunc(checks...)},
			// A healthy cluster passes the gate.
			{
				Config: healthConfig(targetArg(tg) + "require_healthy = true"),
				Check:  resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
			},
		},
	})
}

// TestAccKMSPluginHealth_unhealthy: one unhealthy plugin makes the cluster
// unhealthy, and with require_healthy the plan fails naming the node and
// the plugin.
func TestAccKMSPluginHealth_unhealthy(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	at := reportNow()
	mustReport(t, tg, "cp-a", healthyPlugin("1", "k-1", at), healthyPlugin("2", "k-2", at))
	mustReport(t, tg, "cp-b", unhealthyPlugin("1", "k-1", `healthz "down", want "ok"`, at), healthyPlugin("2", "k-2", at))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "false"),
					resource.TestCheckResourceAttr(healthAddr, "degraded_reason", "Unhealthy"),
					resource.TestCheckResourceAttr(healthAddr, "problems.#", "1"),
					resource.TestCheckResourceAttr(healthAddr, "problems.0", `node cp-b: plugin 1 unhealthy (healthz "down", want "ok")`),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "healthy"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.name", "cp-b"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.status", "unhealthy"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.stale", "false"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.problem", `node cp-b: plugin 1 unhealthy (healthz "down", want "ok")`),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.plugins.0.status", "unhealthy"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.plugins.0.detail", `healthz "down", want "ok"`),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.plugins.1.status", "healthy"),
					// The nodes still agree on both keys.
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.%", "2"),
				),
			},
			{
				Config: healthConfig(targetArg(tg) + "require_healthy = true"),
				ExpectError: literalRE("KMS plugins are not ready for key rotation", "require_healthy = true",
					"Target "+tg.String()+":", `- node cp-b: plugin 1 unhealthy (healthz "down", want "ok")`, `set wait_timeout`),
			},
		},
	})
}

// TestAccKMSPluginHealth_kekMismatch: healthy nodes that disagree on the
// kekID of a keyID are healthy but not rotation ready; require_healthy
// fails naming the keyID.
func TestAccKMSPluginHealth_kekMismatch(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	at := reportNow()
	mustReport(t, tg, "cp-a", healthyPlugin("1", "k-old", at), healthyPlugin("2", "k-2", at))
	mustReport(t, tg, "cp-b", healthyPlugin("1", "k-new", at), healthyPlugin("2", "k-2", at))
	mismatch := "keyID 1: nodes disagree on the kekID (k-new on cp-b; k-old on cp-a)"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "false"),
					resource.TestCheckResourceAttr(healthAddr, "degraded_reason", ""),
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.%", "1"),
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.2", "k-2"),
					resource.TestCheckNoResourceAttr(healthAddr, "active_kek_ids.1"),
					resource.TestCheckResourceAttr(healthAddr, "problems.#", "1"),
					resource.TestCheckResourceAttr(healthAddr, "problems.0", mismatch),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.kek_id", "k-old"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.plugins.0.kek_id", "k-new"),
				),
			},
			{
				Config:      healthConfig(targetArg(tg) + "require_healthy = true"),
				ExpectError: literalRE("KMS plugins are not ready for key rotation", "- "+mismatch),
			},
		},
	})
}

// TestAccKMSPluginHealth_stale: a report older than max_staleness makes
// its node stale; a longer max_staleness accepts it.
func TestAccKMSPluginHealth_stale(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	at := reportNow()
	old := at.Add(-10 * time.Minute)
	mustReport(t, tg, "cp-a", healthyPlugin("1", "k-1", old))
	mustReport(t, tg, "cp-b", healthyPlugin("1", "k-1", at))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg) + `max_staleness = "2m"`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "max_staleness", "2m"),
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "false"),
					resource.TestCheckResourceAttr(healthAddr, "degraded_reason", "Stale"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.name", "cp-a"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.stale", "true"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "stale"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.last_checked", rfc3339Time(old)),
					resource.TestMatchResourceAttr(healthAddr, "nodes.0.problem", regexp.MustCompile(`^node cp-a: stale\b.*`+regexp.QuoteMeta(rfc3339Time(old))+`.*\b2m0s\b`)),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.stale", "false"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.status", "healthy"),
				),
			},
			{
				Config: healthConfig(targetArg(tg) + `max_staleness = "15m"`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.stale", "false"),
				),
			},
		},
	})
}

// TestAccKMSPluginHealth_expectedNodes: an expected node without a report
// is missing; reports of nodes not expected are ignored.
func TestAccKMSPluginHealth_expectedNodes(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	at := reportNow()
	mustReport(t, tg, "cp-a", healthyPlugin("1", "k-1", at))
	mustReport(t, tg, "cp-b", healthyPlugin("1", "k-1", at))
	mustReport(t, tg, "old-node", unhealthyPlugin("1", "k-0", "decommissioned", at))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg) + `expected_nodes = ["cp-c", "cp-a", "cp-b"]`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "expected_nodes.#", "3"),
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "degraded_reason", "Missing"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.#", "3"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.2.name", "cp-c"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.2.status", "missing"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.2.problem", "node cp-c: no report (is the reporter running there?)"),
					resource.TestCheckNoResourceAttr(healthAddr, "nodes.2.last_checked"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.2.plugins.#", "0"),
					resource.TestCheckResourceAttr(healthAddr, "problems.0", "node cp-c: no report (is the reporter running there?)"),
				),
			},
			{
				Config:      healthConfig(targetArg(tg) + `expected_nodes = ["cp-a", "cp-b", "cp-c"]` + "\nrequire_healthy = true"),
				ExpectError: literalRE("KMS plugins are not ready for key rotation", "- node cp-c: no report"),
			},
			// Only the expected nodes are judged: old-node's unhealthy report is ignored.
			{
				Config: healthConfig(targetArg(tg) + `expected_nodes = ["cp-a", "cp-b"]`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.#", "2"),
				),
			},
			// Without expected_nodes every reporting node counts.
			{
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.#", "3"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.2.name", "old-node"),
				),
			},
		},
	})
}

// protoV6WithClock serves the provider with the data source's clock
// replaced, so that a test can act right after the data source has first
// judged the cluster.
func protoV6WithClock(clock func() time.Time) map[string]func() (tfprotov6.ProviderServer, error) {
	p := &clockedProvider{kmshealthProvider: &kmshealthProvider{version: "test"}, now: clock}
	return map[string]func() (tfprotov6.ProviderServer, error){"kmshealth": providerserver.NewProtocol6WithError(p)}
}

type clockedProvider struct {
	*kmshealthProvider
	now func() time.Time
}

func (p *clockedProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{func() datasource.DataSource { return &kmsPluginHealthDataSource{now: p.now} }}
}

// afterFirstJudgement returns a clock that runs act (once, in the
// background) as soon as the data source has read the target and first
// asks for the time to judge it, and a function that waits for act and
// returns its error.
func afterFirstJudgement(act func() error) (clock func() time.Time, done func() error) {
	var once sync.Once
	result := make(chan error, 1)
	clock = func() time.Time {
		once.Do(func() { go func() { result <- act() }() })
		return time.Now()
	}
	done = func() error {
		select {
		case err := <-result:
			return err
		case <-time.After(time.Minute):
			return fmt.Errorf("the data source never judged the cluster")
		}
	}
	return clock, done
}

// TestAccKMSPluginHealth_wait: with wait_timeout the data source watches
// an unready cluster until it is ready (the fix is written only after the
// data source has judged the cluster unready, so the plan passes only by
// waiting), also for a target object that appears while it waits; and it
// fails with a timeout message when the cluster stays unready.
func TestAccKMSPluginHealth_wait(t *testing.T) {
	t.Parallel()
	ensureKMSHealthCRD(t)
	at := reportNow()

	// Unhealthy, then fixed.
	tg := healthTargetFor(t, "-fixed")
	createKMSHealth(t, tg)
	mustReport(t, tg, "cp-a", healthyPlugin("1", "k-1", at))
	mustReport(t, tg, "cp-b", unhealthyPlugin("1", "k-1", `healthz "down", want "ok"`, at))
	clock, fixed := afterFirstJudgement(func() error { return writeReport(tg, "cp-b", healthyPlugin("1", "k-1", reportNow())) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6WithClock(clock),
		Steps: []resource.TestStep{{
			Config: healthConfig(targetArg(tg) + "require_healthy = true\nwait_timeout = \"30s\""),
			Check: resource.ComposeAggregateTestCheckFunc(
				func(*terraform.State) error { return fixed() },
				resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
				resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
				resource.TestCheckResourceAttr(healthAddr, "wait_timeout", "30s"),
			),
		}},
	})

	// The object does not exist yet: the data source waits for it.
	late := healthTargetFor(t, "-late")
	t.Cleanup(func() {
		_ = dynamicClient().Resource(late.GVR()).Delete(context.Background(), late.Name, metav1.DeleteOptions{})
	})
	clock, created := afterFirstJudgement(func() error {
		if err := createKMSHealthObject(late); err != nil {
			return err
		}
		return writeReport(late, "cp-a", healthyPlugin("1", "k-1", reportNow()))
	})
	// Without a wait, a missing object is an error at once.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config:      healthConfig(targetArg(late)),
			ExpectError: literalRE("KMS health target not found", `kmshealths "`+late.Name+`" (target `+late.String()+`) does not exist`, "kmshealth_reporter"),
		}},
	})
	// The data source asks for the time only after it found the object
	// missing, so it is created while the data source waits.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6WithClock(clock),
		Steps: []resource.TestStep{{
			Config: healthConfig(targetArg(late) + "require_healthy = true\nwait_timeout = \"30s\""),
			Check: resource.ComposeAggregateTestCheckFunc(
				func(*terraform.State) error { return created() },
				resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
				resource.TestCheckResourceAttr(healthAddr, "nodes.0.name", "cp-a"),
			),
		}},
	})

	// Permanently unhealthy: a short wait ends in an error naming what is
	// wrong, or without require_healthy in a warning and the last state.
	bad := healthTargetFor(t, "-bad")
	createKMSHealth(t, bad)
	mustReport(t, bad, "cp-a", unhealthyPlugin("1", "k-1", `healthz "down", want "ok"`, at))
	start := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(bad) + "require_healthy = true\nwait_timeout = \"2s\""),
				ExpectError: literalRE("KMS plugins are not ready for key rotation", "Target "+bad.String()+", after waiting 2s (wait_timeout):",
					`- node cp-a: plugin 1 unhealthy (healthz "down", want "ok")`),
			},
			{
				Config: healthConfig(targetArg(bad) + "wait_timeout = \"1s\""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "unhealthy"),
				),
			},
		},
	})
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("2s and 1s waits took %s", d)
	}
}

// rotationGateConfig is the published example with this test's target.
func rotationGateConfig(t *testing.T, tg kmshealth.Target) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/data-sources/kmshealth_kms_plugin_health/data-source.tf")
	if err != nil {
		t.Fatal(err)
	}
	head := `data "kmshealth_kms_plugin_health" "this" {` + "\n"
	example := string(b)
	if !strings.Contains(example, head) {
		t.Fatalf("the example no longer declares %q", head)
	}
	return providerBlock() + strings.Replace(example, head, head+"  "+targetArg(tg), 1)
}

// TestAccKMSPluginHealth_rotationGate runs the published example: the
// terraform_data standing in for a key rotation has a precondition on
// rotation_ready, which fails the plan while a node is missing or the nodes
// disagree on a key, and lets it through once they agree.
func TestAccKMSPluginHealth_rotationGate(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	at := reportNow()
	mustReport(t, tg, "cp-1", healthyPlugin("1", "k-1", at))
	mustReport(t, tg, "cp-2", healthyPlugin("1", "k-1", at))
	config := rotationGateConfig(t, tg)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config:      config,
				ExpectError: literalRE("Resource precondition failed", "KMS plugins are not ready for key rotation: node cp-3: no report"),
			},
			{
				PreConfig:   func() { mustReport(t, tg, "cp-3", healthyPlugin("1", "k-2", reportNow())) },
				Config:      config,
				ExpectError: literalRE("Resource precondition failed", "KMS plugins are not ready for key rotation: keyID 1: nodes disagree on the kekID (k-1 on cp-1,cp-2; k-2 on cp-3)"),
			},
			{
				PreConfig: func() { mustReport(t, tg, "cp-3", healthyPlugin("1", "k-1", reportNow())) },
				Config:    config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("terraform_data.rotate_kek", "output", "kek-2026-05"),
					resource.TestCheckResourceAttr("data.kmshealth_kms_plugin_health.this", "active_kek_ids.1", "k-1"),
				),
			},
		},
	})
}

// TestAccKMSPluginHealth_missingTarget: a target that does not exist, or
// whose resource the API server does not serve, is an error naming it.
func TestAccKMSPluginHealth_missingTarget(t *testing.T) {
	t.Parallel()
	ensureKMSHealthCRD(t)
	absent := healthTargetFor(t, "-absent")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(absent)),
				ExpectError: literalRE("KMS health target not found", `kmshealths "`+absent.Name+`" (target `+absent.String()+`) does not exist`,
					"Install the KMS health reporter with a kmshealth_reporter resource"),
			},
			{
				Config: healthConfig(`target = "widgets.example.com/v1/widgets/x"`),
				ExpectError: literalRE("KMS health target not found", `the API server serves no resource "widgets" in widgets.example.com/v1`,
					"Set target to the object the reporters write their conditions to"),
			},
		},
	})
}

// TestAccKMSPluginHealth_forbidden: credentials without the access the
// data source needs get an error naming the verbs and the resource, not a
// silent timeout.
func TestAccKMSPluginHealth_forbidden(t *testing.T) {
	t.Parallel()
	tg := newKMSHealthTarget(t)
	mustReport(t, tg, "cp-a", unhealthyPlugin("1", "k-1", "down", reportNow()))
	ns, sa, changeRole := getOnlyReader(t, tg)
	config := func(target kmshealth.Target, body string) string {
		return fmt.Sprintf("provider \"kmshealth\" {\n  config_path = %q\n}\n\ndata \"kmshealth_kms_plugin_health\" \"test\" {\n%s%s\n}\n",
			serviceAccountKubeconfig(t, ns, sa), targetArg(target), body)
	}
	other := healthTargetFor(t, "-other")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			// get is enough without a wait.
			{
				Config: config(tg, ""),
				Check:  resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "unhealthy"),
			},
			{
				Config: config(tg, `wait_timeout = "3s"`),
				ExpectError: literalRE("Cannot read the KMS health target: forbidden",
					`does not allow user "system:serviceaccount:`+ns+`:`+sa+`" to list kmshealths.kmshealth.io "`+tg.Name+`"`,
					`verbs: ["list"]`, `resourceNames: ["`+tg.Name+`"]`, "kind: ServiceAccount",
					"watch target "+tg.String()+" for 3s:", `cannot list resource "kmshealths"`,
					"need get (and, with wait_timeout, list and watch) on kmshealths.kmshealth.io", `(wait_timeout = "3s"), so it lists and watches`),
			},
			{
				Config: config(other, ""),
				ExpectError: literalRE("Cannot read the KMS health target: forbidden", `to get kmshealths.kmshealth.io "`+other.Name+`" (at the cluster scope)`,
					`verbs: ["get"]`, `resourceNames: ["`+other.Name+`"]`, "kubectl auth can-i get kmshealths.kmshealth.io/"+other.Name+" --as=system:serviceaccount:"+ns+":"+sa,
					`cannot get resource "kmshealths"`, "need get"),
			},
			// list and watch limited to the one object by resourceNames are
			// enough to wait: the watch runs to the end of wait_timeout.
			{
				PreConfig: func() {
					changeRole(func(role *rbacv1.ClusterRole) { role.Rules[0].Verbs = []string{"get", "list", "watch"} })
				},
				Config: config(tg, `wait_timeout = "2s"`),
				Check:  resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
			},
		},
	})
}

// TestAccKMSPluginHealth_unknownProviderConfig: while the provider
// configuration is known only after apply, the data source cannot read the
// cluster during the plan, and says what to do.
func TestAccKMSPluginHealth_unknownProviderConfig(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = %q
}

provider "kmshealth" {
  config_path = terraform_data.cluster.id == "" ? "" : terraform_data.cluster.output
}

data "kmshealth_kms_plugin_health" "test" {}
`, env.Kubeconfig),
			ExpectError: literalRE("Cannot read KMS plugin health yet", "Add a depends_on on the resources that create the cluster"),
		}},
	})
}

// TestKMSPluginHealthDefaults: unset arguments take their documented
// defaults, which the state then shows.
func TestKMSPluginHealthDefaults(t *testing.T) {
	m := kmsPluginHealthModel{
		Target: types.StringNull(), MaxStaleness: types.StringNull(), RequireHealthy: types.BoolNull(),
		WaitTimeout: types.StringNull(), ExpectedNodes: types.SetNull(types.StringType),
	}
	q, diags := m.query(context.Background())
	if diags.HasError() {
		t.Fatal(diags)
	}
	if q.target != kmshealth.DefaultTarget() || m.Target.ValueString() != "kmshealth.io/v1alpha1/kmshealths/cluster" {
		t.Errorf("target %v / %s, want the KMSHealth object cluster", q.target, m.Target)
	}
	if q.maxStaleness != 2*time.Minute || m.MaxStaleness.ValueString() != "2m0s" {
		t.Errorf("max_staleness %s / %s, want 2m", q.maxStaleness, m.MaxStaleness)
	}
	if q.wait != 0 || m.WaitTimeout.ValueString() != "0s" || q.requireHealthy || m.RequireHealthy.ValueBool() {
		t.Errorf("wait %s, require_healthy %v: want no wait, not required", q.wait, q.requireHealthy)
	}
	if q.expectedNodes != nil {
		t.Errorf("expected nodes %v, want nil (every node that reported)", q.expectedNodes)
	}
}

// getOnlyReader makes a ServiceAccount in a namespace of its own, bound to
// a ClusterRole that grants get on tg alone (no list, no watch), and
// returns the namespace, the account, and changeRole, which updates the
// role with what change does to it (for a step that grants more).
func getOnlyReader(t *testing.T, tg kmshealth.Target) (ns, sa string, changeRole func(change func(*rbacv1.ClusterRole))) {
	t.Helper()
	ctx := context.Background()
	ns = uniqueName(t)
	mustCreateNamespace(t, ns)
	sa = "reader"
	if _, err := env.Clientset().CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{kmshealth.Group}, Resources: []string{kmshealth.Resource}, ResourceNames: []string{tg.Name}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}
	rbac := env.Clientset().RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
	return ns, sa, func(change func(*rbacv1.ClusterRole)) {
		t.Helper()
		change(role)
		if _, err := rbac.ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
