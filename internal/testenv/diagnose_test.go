package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReportAfterFailure: a control-plane process that exited before Stop
// is named with its exit status and the end of its log, and a failed
// package's logs (the node's too) are copied where they outlive Stop,
// without etcd's data. A package that passed with every process running
// reports nothing.
func TestReportAfterFailure(t *testing.T) {
	t.Setenv("KMSHEALTH_KEEP_TESTENV", "")
	e := &Env{Dir: t.TempDir()}
	for name, content := range map[string]string{
		"etcd.log":              "etcd ran\n",
		"node/kubelet.log":      "kubelet ran\n",
		"etcd-data/member/wal":  "not a log\n",
		"apiserver.log.partial": "not a log either\n",
	} {
		path := filepath.Join(e.Dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	running, err := e.spawnProgram("apiserver.log", "/bin/sh", "-c", "exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	e.apiserver = running
	t.Cleanup(func() { stop(running) })

	var out strings.Builder
	e.report(&out, false)
	if out.Len() != 0 {
		t.Fatalf("a passed package with every process running reported %q", out.String())
	}

	died, err := e.spawnProgram("kube-controller-manager.log", "/bin/sh", "-c", "echo namespace controller giving up; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	<-died.done
	e.controllers = died
	e.report(&out, true)
	report := out.String()
	for _, want := range []string{
		"kube-controller-manager (namespace controller) exited during the tests (exit status 3)",
		"namespace controller giving up",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report %q does not say %q", report, want)
		}
	}
	if strings.Contains(report, "kube-apiserver") {
		t.Errorf("report %q names the API server, which still runs", report)
	}
	m := regexp.MustCompile(`logs are in (\S+)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report %q does not say where the logs are", report)
	}
	kept := m[1]
	t.Cleanup(func() { _ = os.RemoveAll(kept) })
	var files []string
	err = filepath.WalkDir(kept, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(kept, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apiserver.log", "etcd.log", "kube-controller-manager.log", filepath.Join("node", "kubelet.log")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("kept %q, want %q", files, want)
	}
	if b, err := os.ReadFile(filepath.Join(kept, "node", "kubelet.log")); err != nil || string(b) != "kubelet ran\n" {
		t.Errorf("kept node/kubelet.log = %q, %v", b, err)
	}
}
