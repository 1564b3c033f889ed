// Package devenv runs the provider the way a user does, for the demo and the
// benchmarks: it builds the provider binary, points Terraform or OpenTofu at
// it with a dev_overrides CLI configuration (no registry, no init), and runs
// the CLI in a working directory.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/gobuild"
)

// Module is this project's module path: go.mod's module line.
const Module = "github.com/kmshealth/terraform-provider-kmshealth"

// Root is the checkout's root directory: where this file was compiled from,
// or, in a -trimpath build (make test's, whose compiled packages the image
// and release builds share), which records module paths instead of
// directories, the nearest directory at or above the working directory
// whose go.mod declares Module (go test runs a test in its package's
// directory; the demo and the benches run from the checkout). It panics
// when there is none: every caller builds or runs something from the
// checkout, and nothing else would work either.
func Root() string {
	if _, self, _, ok := runtime.Caller(0); ok && filepath.IsAbs(self) {
		return filepath.Join(filepath.Dir(self), "..", "..")
	}
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("devenv: the checkout's root: %v", err))
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == Module {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("devenv: no directory at or above the working directory holds the go.mod of " + Module + ": run this from the checkout")
		}
		dir = parent
	}
}

// modulePath is the module line of a go.mod file, "" without one.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Tool returns the path of a tool built by tools/install.sh (terraform,
// tofu, kube-testserver, ...), building it on first use.
func Tool(name string) (string, error) {
	out, err := exec.Command("bash", filepath.Join(Root(), "tools", "install.sh"), name).Output()
	if err != nil {
		return "", fmt.Errorf("tools/install.sh %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CLI is Terraform or OpenTofu set up to use a locally built provider.
type CLI struct {
	Name   string // "terraform" or "tofu"
	Path   string
	Dir    string    // working directory (root module)
	Env    []string  // extra environment
	Stdout io.Writer // where Run streams output; nil discards
}

// BuildProvider puts the provider, built from this checkout, into dir and
// returns the binary's path. version is injected the way a release build
// does. The build is the checkout's one (internal/gobuild): linked once per
// change of the sources and version, then copied.
func BuildProvider(ctx context.Context, dir, version string) (string, error) {
	bin := filepath.Join(dir, "terraform-provider-kmshealth")
	err := gobuild.Binary(ctx, Root(), "terraform-provider-kmshealth-"+version, ".", nil,
		[]string{"-trimpath", "-ldflags", "-s -w -X main.version=" + version}, gobuild.CopyTo(bin))
	if err != nil {
		return "", fmt.Errorf("build provider: %w", err)
	}
	return bin, nil
}

// NewCLI prepares cli (terraform|tofu) to run in workDir against the
// provider binary in providerDir, through a dev_overrides CLI configuration
// written to workDir. The override covers both registries' addresses.
func NewCLI(name, workDir, providerDir string) (*CLI, error) {
	path, err := Tool(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	rc := filepath.Join(workDir, ".cli.tfrc")
	conf := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/kmshealth/kmshealth" = %q
    "registry.opentofu.org/kmshealth/kmshealth" = %q
  }
  direct {}
}
`, providerDir, providerDir)
	if err := os.WriteFile(rc, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return &CLI{
		Name: name, Path: path, Dir: workDir,
		Env: []string{"TF_CLI_CONFIG_FILE=" + rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1"},
	}, nil
}

// Run runs the CLI with args, streaming to c.Stdout, and returns its exit
// code (a non-zero code is not an error: plan -detailed-exitcode uses 2).
func (c *CLI) Run(ctx context.Context, args ...string) (int, error) {
	cmd := exec.CommandContext(ctx, c.Path, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout = orDiscard(c.Stdout)
	cmd.Stderr = orDiscard(c.Stdout)
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("%s %s: %w", c.Name, strings.Join(args, " "), err)
	}
	return 0, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
