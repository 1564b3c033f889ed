package provider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reencrypt"
)

// TestAccKMSReencryption_killed kills the CLI and the provider (the real
// binary, SIGKILL to both) once the first page of a rewrite is recorded,
// and applies again: the second apply resumes at the recorded page and
// finishes, and no ConfigMap of a page recorded as done is written again.
//
// Serial: the run rewrites every ConfigMap of the cluster, which parallel
// tests would see as writes under their feet.
func TestAccKMSReencryption_killed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cliPath := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if cliPath == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: scripts/test-acc.sh sets it")
	}
	keyID := env.KMS.KeyID()
	tg := newKMSHealthTarget(t)
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	t.Cleanup(func() {
		_ = env.Clientset().CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// Three pages of the rewrite's 500 at least, whatever else the cluster holds.
	cms := env.Clientset().CoreV1().ConfigMaps(ns)
	for i := range 3 * reencrypt.DefaultPageSize {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%04d", i)}, Data: map[string]string{"v": "x"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	if _, err := devenv.BuildProvider(ctx, dir, "test"); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "dev.tfrc")
	if err := os.WriteFile(rc, fmt.Appendf(nil, `provider_installation {
  dev_overrides {
    "registry.terraform.io/kmshealth/kmshealth" = %q
    "registry.opentofu.org/kmshealth/kmshealth" = %q
  }
  direct {}
}
`, dir, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	main := `terraform {
  required_providers {
    kmshealth = { source = "kmshealth/kmshealth" }
  }
}
` + providerBlock() + fmt.Sprintf(`
resource "kmshealth_kms_reencryption" "test" {
  name          = "killed"
  namespace     = %q
  key_id        = %q
  health_target = %q
  resources     = ["configmaps"]
  method        = "rewrite"
  concurrency   = 2
}
`, ns, keyID, tg.String())
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("CLI output:\n%s", out.String())
		}
	})
	command := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, cliPath, args...)
		cmd.Dir = dir
		// TMPDIR in the test's directory: the killed provider cannot remove
		// its plugin socket (go-plugin makes it there), and the test does.
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_LOG=", "TMPDIR="+dir)
		cmd.Stdout, cmd.Stderr = &out, &out
		// Its own process group: the kill reaches the provider too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	report := func() { mustReport(t, tg, "cp-k", healthyPlugin("1", keyID, reportNow())) }

	report()
	first := command("apply", "-auto-approve", "-input=false", "-no-color", "-lock=false")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	records := dynamicClient().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	var killedAt *reencrypt.Record
	err := kube.WaitFor(ctx, records, reencrypt.RecordName("killed"), func(u *unstructured.Unstructured) (bool, error) {
		s, _, _ := unstructured.NestedString(u.Object, "data", reencrypt.RecordKey)
		// A record not yet decodable is one the run has not written yet.
		if rec, err := reencrypt.DecodeRecord(s); err == nil && len(rec.Progress) > 0 && rec.Progress[0].Done >= reencrypt.DefaultPageSize {
			_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
			killedAt = rec
			return true, nil
		}
		return false, nil
	})
	_ = first.Wait()
	if err != nil {
		_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
		t.Fatalf("no page of the first run recorded: %v", err)
	}
	if killedAt.Complete() {
		t.Fatal("the first run finished before the kill: the test needs more objects")
	}
	// What the record said when the processes died is what the second run
	// must start from: read it again, as the kill came after that event.
	rec, err := reencrypt.ReadRecord(ctx, env.Clientset(), ns, "killed")
	if err != nil || rec == nil || rec.Complete() || rec.Progress[0].Continue == "" {
		t.Fatalf("the record after the kill: %+v, %v; want an unfinished run with a continue token", rec, err)
	}
	done := rec.Progress[0].Done
	total := int64(len(configMapNames(ctx, t)))
	putsBefore := configMapPUTs(ctx, t)

	report()
	if err := command("apply", "-auto-approve", "-input=false", "-no-color", "-lock=false").Run(); err != nil {
		t.Fatalf("the second apply: %v", err)
	}
	puts := configMapPUTs(ctx, t) - putsBefore
	rec, err = reencrypt.ReadRecord(ctx, env.Clientset(), ns, "killed")
	if err != nil || !rec.Complete() {
		t.Fatalf("the record after the second apply: %+v, %v; want a finished run", rec, err)
	}
	// The resumed run updates each ConfigMap after the recorded pages once
	// (an update kube-apiserver stores only when the object is stale), and
	// its record after each page: a run that started over would also send
	// the done pages' updates again.
	rest := total - done
	pages := rest/reencrypt.DefaultPageSize + 10 // and slack for more saves of the record; a restart would add every done object
	t.Logf("killed with %d of the cluster's %d ConfigMaps recorded done; the resumed run sent %d PUTs (%d objects left)", done, total, puts, rest)
	if puts < rest || puts > rest+pages {
		t.Errorf("the resumed run sent %d PUTs on configmaps; want the %d objects after the recorded pages, plus the record's own saves (at most %d)", puts, rest, pages)
	}
	if err := command("destroy", "-auto-approve", "-input=false", "-no-color", "-lock=false").Run(); err != nil {
		t.Fatalf("destroy: %v", err)
	}
}

// configMapNames lists every ConfigMap of the cluster, as namespace/name.
func configMapNames(ctx context.Context, t *testing.T) []string {
	t.Helper()
	list, err := env.Clientset().CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(list.Items))
	for _, cm := range list.Items {
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	return out
}

// configMapPUTs is kube-apiserver's count of PUT requests on ConfigMaps
// since it started (apiserver_request_total).
func configMapPUTs(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	body, err := env.Clientset().Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("scrape kube-apiserver /metrics: %v", err)
	}
	samples, err := devenv.ParseSamples(body)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, s := range samples {
		if s.Name == "apiserver_request_total" && s.Labels["resource"] == "configmaps" && s.Labels["verb"] == "PUT" && s.Labels["subresource"] == "" {
			n += s.Value
		}
	}
	return int64(n)
}
