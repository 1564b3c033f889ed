package testenv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// report is what Main and MainN do after the tests and before Stop: it
// names each control-plane process that exited before Stop (none should),
// and, when the package failed, copies the control plane's logs to a
// directory that outlives Stop and says where. A package once failed with
// two namespaces that nothing held and nobody deleted for 20 minutes (make
// test, 2026-12-07, the provider main shard under OpenTofu): the namespace
// controller had stopped acting, and its log went with the scratch
// directory. It writes to w (os.Stderr, which go test prints).
func (e *Env) report(w io.Writer, failed bool) {
	for _, exited := range e.exitedEarly() {
		_, _ = fmt.Fprintln(w, "testenv:", exited)
	}
	if !failed {
		return
	}
	if os.Getenv("KMSHEALTH_KEEP_TESTENV") != "" {
		_, _ = fmt.Fprintln(w, "testenv: the package failed; its control plane's directory is kept:", e.Dir)
		return
	}
	dir, err := e.keepLogs()
	switch {
	case dir == "":
		_, _ = fmt.Fprintln(w, "testenv: the package failed, and its control plane's logs could not be kept:", err)
	case err != nil:
		_, _ = fmt.Fprintln(w, "testenv: the package failed; its control plane's logs are in", dir, "but for some that could not be copied:", err)
	default:
		_, _ = fmt.Fprintln(w, "testenv: the package failed; its control plane's logs are in", dir)
	}
}

// exitedEarly describes each process of the control plane that has
// exited although Stop has not run, with the tail of its log.
func (e *Env) exitedEarly() []string {
	e.migratorMu.Lock()
	migrator := e.migrator
	e.migratorMu.Unlock()
	var out []string
	for _, p := range []struct {
		name, log string
		proc      *proc
	}{
		{"etcd", "etcd.log", e.etcd},
		{"kube-apiserver", "apiserver.log", e.apiserver},
		{"kube-controller-manager (namespace controller)", "kube-controller-manager.log", e.controllers},
		{"kube-controller-manager (storage version migrator)", "kube-controller-manager-svm.log", migrator},
	} {
		if p.proc == nil {
			continue
		}
		if state, exited := p.proc.exited(); exited {
			out = append(out, fmt.Sprintf("%s exited during the tests (%s); the tests after that ran without it. Its log ends:\n%s", p.name, state, e.logTail(p.log)))
		}
	}
	return out
}

// logsDirEnv names, in the copy of a node package that runs in the node's
// namespaces (isolate), the temporary directory of the original: the
// copy's own TMPDIR goes when it exits, so kept logs go there instead.
const logsDirEnv = "KMSHEALTH_TESTENV_LOGS_DIR"

// keepLogs copies every *.log file under the scratch directory (the
// control plane's and the node's), keeping their relative paths, to a new
// temporary directory, and returns it. Nothing else is copied: etcd's data
// and the node's images are large and say nothing a log does not. What
// cannot be read is passed over and named in the error, with the
// directory still returned.
func (e *Env) keepLogs() (string, error) {
	dst, err := os.MkdirTemp(os.Getenv(logsDirEnv), "kmsh-logs-") // "": os.TempDir()
	if err != nil {
		return "", err
	}
	var errs []error
	_ = filepath.WalkDir(e.Dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			errs = append(errs, err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
		case d.Type().IsRegular() && strings.HasSuffix(path, ".log"):
			rel, _ := filepath.Rel(e.Dir, path) // path is under e.Dir
			if err := copyFile(path, filepath.Join(dst, rel)); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return dst, errors.Join(errs...)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
