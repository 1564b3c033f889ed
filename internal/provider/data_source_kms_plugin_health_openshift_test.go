package provider

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporter"
)

// OpenShift's typed KMS health reports, as published in github.com/openshift/api
// operator/v1/types_kmsencryption.go at commit
// 2a3d73913b5a7caec4c57d5c3d04f51106ec4da3 (openshift/api#2881 and the
// rename of keyId/kekId to keyID/remoteKeyID in 628227733dba), written the
// way github.com/openshift/library-go pkg/operator/encryption/kms/health
// (prober.go, cmd.go at commit 93ac9206ae34e602d6acf346826e3e99c22b1787)
// writes them: one forced server-side apply of
// status.encryptionStatus.healthReports per node and tick on the status
// subresource of operator.openshift.io/v1 kubeapiservers. The schema is the
// test bed's stand-in CRD, kmstest.InstallOpenShiftKubeAPIServer.

// newKubeAPIServerTarget installs the typed-report CRD stand-in and a
// KubeAPIServer object of this test, removed at its end.
func newKubeAPIServerTarget(t *testing.T, name string) kmshealth.Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := kmstest.InstallOpenShiftKubeAPIServer(ctx, dynamicClient(), name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dynamicClient().Resource(kmstest.KubeAPIServers).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tg, err := kmshealth.ParseTarget("operator.openshift.io/v1/kubeapiservers/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// libraryGoReport is a node's report as library-go's reporter writes it.
func libraryGoReport(t *testing.T, name, node string, reports ...kmstest.HealthReport) {
	t.Helper()
	for i := range reports {
		reports[i].NodeName = node
	}
	// library-go's field manager: kms-health-reporter-<hex sha256 of the node>.
	fm := fmt.Sprintf("kms-health-reporter-%x", sha256.Sum256([]byte(node)))
	if err := kmstest.ApplyOpenShiftHealthReports(context.Background(), dynamicClient(), name, fm, reports...); err != nil {
		t.Fatal(err)
	}
}

// TestAccKMSPluginHealth_openshiftTyped: a KubeAPIServer whose typed
// healthReports were written as OpenShift's reporters write them is read
// with the same verdicts and gate as our conditions, and says so in
// report_format.
func TestAccKMSPluginHealth_openshiftTyped(t *testing.T) {
	const name = "typed-library-go"
	tg := newKubeAPIServerTarget(t, name)
	at := reportNow()
	ts := rfc3339Time(at)
	healthy := func(kek string) kmstest.HealthReport {
		return kmstest.HealthReport{KeyID: "1", Status: kmshealth.TypedHealthy, LastCheckedTime: ts, RemoteKeyID: kek}
	}
	libraryGoReport(t, name, "cp-a", healthy("kek-a"))
	libraryGoReport(t, name, "cp-b", healthy("kek-a"))

	// The published schema requires remoteKeyID in every entry, also an
	// Error one: the API server refuses an entry without it.
	err := kmstest.ApplyOpenShiftHealthReports(context.Background(), dynamicClient(), name, "kms-health-reporter-cp-c",
		kmstest.HealthReport{NodeName: "cp-c", KeyID: "1", Status: kmshealth.TypedError, LastCheckedTime: ts, Detail: "connection refused"})
	if err == nil || !regexp.MustCompile(`remoteKeyID.*Required`).MatchString(err.Error()) {
		t.Fatalf("an Error entry without remoteKeyID: error %v, want the API server to require remoteKeyID", err)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg) + "require_healthy = true"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "report_format", "openshift-typed"),
					resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.%", "1"),
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.1", "kek-a"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.#", "2"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.name", "cp-a"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "healthy"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.last_checked", ts),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.key_id", "1"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.kek_id", "kek-a"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.status", "healthy"),
				),
			},
			// A node on another KEK: healthy, but not rotation ready.
			{
				PreConfig: func() { libraryGoReport(t, name, "cp-b", healthy("kek-b")) },
				Config:    healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "healthy", "true"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "false"),
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.%", "0"),
					resource.TestCheckResourceAttr(healthAddr, "problems.0", "keyID 1: nodes disagree on the kekID (kek-a on cp-a; kek-b on cp-b)"),
				),
			},
			// Unhealthy, with library-go's detail (the healthz text): the gate
			// fails the plan naming the node and plugin.
			{
				PreConfig: func() {
					libraryGoReport(t, name, "cp-b", kmstest.HealthReport{KeyID: "1", Status: kmshealth.TypedUnhealthy, LastCheckedTime: ts, RemoteKeyID: "kek-a", Detail: "vault sealed"})
				},
				Config:      healthConfig(targetArg(tg) + "require_healthy = true"),
				ExpectError: regexp.MustCompile(`node cp-b: plugin 1 unhealthy \(vault sealed\)`),
			},
			// An Error entry (remoteKeyID "unknown" is no KEK) and a stale one.
			{
				PreConfig: func() {
					libraryGoReport(t, name, "cp-a", kmstest.HealthReport{KeyID: "1", Status: kmshealth.TypedHealthy, LastCheckedTime: rfc3339Time(at.Add(-time.Hour)), RemoteKeyID: "kek-a"})
					libraryGoReport(t, name, "cp-b", kmstest.HealthReport{KeyID: "1", Status: kmshealth.TypedError, LastCheckedTime: ts, RemoteKeyID: kmshealth.RemoteKeyIDUnknown, Detail: "connection refused"})
				},
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "report_format", "openshift-typed"),
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "degraded_reason", kmshealth.ReasonError),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "stale"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.stale", "true"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.status", "error"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.plugins.0.kek_id", ""),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.plugins.0.detail", "connection refused"),
				),
			},
			// Our condition for a node that also has typed entries: the node
			// is invalid (two writers), the target mixed.
			{
				PreConfig: func() {
					b := kmshealth.ConditionBuilder{Node: "cp-b"}
					cond := b.Build([]kmshealth.Plugin{healthyPlugin("1", "kek-a", reportNow())}, time.Now())
					if err := kmshealth.ApplyCondition(context.Background(), dynamicClient(), tg, "KubeAPIServer", cond, kmshealth.ReporterFieldManager("cp-b")); err != nil {
						t.Fatal(err)
					}
				},
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "report_format", "mixed"),
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.name", "cp-b"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.1.status", "invalid"),
				),
			},
		},
	})
}

// TestAccKMSPluginHealth_reporterWritesTyped: our reporter with
// --report-format=openshift-typed probes the test bed's KMS v2 plugin and
// writes typed healthReports that the data source reads back (and so
// would an OpenShift aggregator).
func TestAccKMSPluginHealth_reporterWritesTyped(t *testing.T) {
	const name = "typed-kmshealth"
	tg := newKubeAPIServerTarget(t, name)
	dir, err := os.MkdirTemp("", "kh-typed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	plugin, err := kmstest.Start(filepath.Join(dir, "kms-1.sock"), "kek-typed-1")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			plugin.Stop()
		}
	}
	t.Cleanup(stop)

	var o reporter.Options
	o.NodeName, o.SocketDir, o.Target = "cp-typed", dir, tg.String()
	o.Interval, o.ReportFormat = kmshealth.DefaultInterval, string(kmshealth.FormatOpenShiftTyped)
	o.HealthProbeBindAddress, o.Metrics.BindAddress = "0", "0"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := reporter.New(o, env.RESTConfig(), klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	tick := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r.Tick(ctx)
	}
	tick()

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: healthConfig(targetArg(tg) + `expected_nodes = ["cp-typed"]` + "\nrequire_healthy = true"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "report_format", "openshift-typed"),
					resource.TestCheckResourceAttr(healthAddr, "rotation_ready", "true"),
					resource.TestCheckResourceAttr(healthAddr, "active_kek_ids.1", "kek-typed-1"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.status", "healthy"),
				),
			},
			{
				PreConfig: func() {
					plugin.SetHealthz("sealed")
					tick()
				},
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "report_format", "openshift-typed"),
					resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
					resource.TestCheckResourceAttr(healthAddr, "degraded_reason", kmshealth.ReasonUnhealthy),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "unhealthy"),
					resource.TestCheckResourceAttrWith(healthAddr, "nodes.0.plugins.0.detail", func(v string) error {
						if !regexp.MustCompile(`sealed`).MatchString(v) {
							return fmt.Errorf("detail %q does not carry the plugin's healthz", v)
						}
						return nil
					}),
				),
			},
			// The plugin and its socket gone: the reporter writes one Error
			// entry (keyID "none", the placeholder remoteKeyID the schema
			// demands) rather than nothing, read as error.
			{
				PreConfig: func() {
					stop()
					tick()
				},
				Config: healthConfig(targetArg(tg)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.status", "error"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.#", "1"),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.key_id", kmshealth.NoPluginKeyID),
					resource.TestCheckResourceAttr(healthAddr, "nodes.0.plugins.0.kek_id", ""),
				),
			},
		},
	})
}
