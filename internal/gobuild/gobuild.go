// Package gobuild builds a main package of this module into the
// checkout's build/bin and hands the result to its caller, so that a
// binary the tests need many times (the provider for a dev_overrides CLI,
// the in-cluster binary of the node's image, the node's test programs) is
// linked once per change of its sources, not once per test, package and
// CLI pass.
//
// It leans on the go command: `go build -o <file>` does not link again
// when <file> exists and carries the build ID of what it would build (the
// same sources, flags and environment), and costs a staleness check
// instead (about a fifth of a link's CPU for the provider). The output is
// named by the caller for everything that changes the build (version,
// tags, GOOS/GOARCH), so two kinds of build never replace each other.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Dir is where Binary writes, relative to the module's directory.
const Dir = "build/bin"

// built holds what this process built, by output and arguments: the
// sources do not change under a test run, so a second call skips even the
// go command's staleness check.
var built sync.Map

// Binary runs `go build <flags> -o <moduleDir>/build/bin/<name> <pkg>` in
// moduleDir, with env added to this process's environment, then calls use
// with the output's path. From the build until use returns, no other
// Binary call (of any process) for the same name runs: the go command
// writes an output it copies by removing the old file and writing a new
// one, so a reader beside that write could see half a binary. use must
// therefore copy or read what it needs, not keep the path.
func Binary(ctx context.Context, moduleDir, name, pkg string, env, flags []string, use func(path string) error) error {
	dir := filepath.Join(moduleDir, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gobuild: %w", err)
	}
	out := filepath.Join(dir, name)
	unlock, err := lock(out + ".lock")
	if err != nil {
		return fmt.Errorf("gobuild: lock %s: %w", out, err)
	}
	defer unlock()
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", out, pkg)
	key := strings.Join(append(append([]string{}, env...), args...), "\x00")
	if prev, ok := built.Load(out); !ok || prev != key {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			built.Delete(out)
			return fmt.Errorf("go build %s (%s): %w\n%s", pkg, name, err, b)
		}
		built.Store(out, key)
	}
	return use(out)
}

// CopyTo returns a use function for Binary that copies the binary to dst
// (mode 0755; its folder made if missing, as go build -o does), for a
// caller that runs it afterwards.
func CopyTo(dst string) func(string) error {
	return func(src string) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			return err
		}
		return os.Rename(tmp, dst)
	}
}
