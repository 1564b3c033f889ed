package moduletest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

// acceptance skips t unless TF_ACC is set, as terraform-plugin-testing does.
func acceptance(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make acc runs it under Terraform and OpenTofu)")
	}
}

// cli is Terraform or OpenTofu in a root module directory, reaching the
// provider built from this checkout through dev_overrides.
type cli struct {
	t    *testing.T
	name string // terraform or tofu
	path string
	dir  string
	env  []string
}

// accCLIPath is the CLI the acceptance tests run under: TF_ACC_TERRAFORM_PATH
// (scripts/test-acc.sh sets it to Terraform 1.5.7 or OpenTofu), else the
// cached Terraform.
func accCLIPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	p, err := devenv.Tool("terraform")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// isOpenTofu tells OpenTofu from Terraform by its version line.
func isOpenTofu(t *testing.T, path string) bool {
	t.Helper()
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", path, err)
	}
	return strings.Contains(string(out), "OpenTofu v")
}

// buildProvider builds the provider from this checkout into a directory
// that lives as long as the test.
func buildProvider(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := devenv.BuildProvider(t.Context(), dir, "test"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newCLI prepares the CLI at path to run in dir against the provider in
// providerDir. The CLI configuration covers both registries' addresses and
// nothing else, whatever the environment's TF_CLI_CONFIG_FILE says.
func newCLI(t *testing.T, path, dir, providerDir string) *cli {
	t.Helper()
	rc := filepath.Join(t.TempDir(), "cli.tfrc")
	conf := `provider_installation {
  dev_overrides {
    "registry.terraform.io/kmshealth/kmshealth" = "` + providerDir + `"
    "registry.opentofu.org/kmshealth/kmshealth" = "` + providerDir + `"
  }
  direct {}
}
`
	if err := os.WriteFile(rc, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "terraform"
	if isOpenTofu(t, path) {
		name = "tofu"
	}
	return &cli{t: t, name: name, path: path, dir: dir, env: []string{
		"TF_CLI_CONFIG_FILE=" + rc, "TOFU_CLI_CONFIG_FILE=" + rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
		"TF_REATTACH_PROVIDERS=", "TF_LOG=",
	}}
}

// exec runs the CLI with args and returns its exit code, its standard
// output and both streams interleaved.
func (c *cli) exec(ctx context.Context, args ...string) (code int, stdout, combined string) {
	c.t.Helper()
	// Both streams are copied concurrently into all: a SyncBuffer, whose
	// writes are serialised (a bytes.Buffer's ReadFrom would drop what the
	// other stream wrote meanwhile).
	var out bytes.Buffer
	var all devenv.SyncBuffer
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdout = io.MultiWriter(&out, &all)
	cmd.Stderr = &all
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), all.String()
	}
	if err != nil {
		c.t.Fatalf("%s %s: %v", c.name, strings.Join(args, " "), err)
	}
	return 0, out.String(), all.String()
}

// must runs the CLI and fails the test unless it exits with want; it
// returns the output (both streams), which is logged either way.
func (c *cli) must(want int, args ...string) string {
	c.t.Helper()
	code, _, out := c.exec(c.t.Context(), args...)
	c.t.Logf("%s %s (exit %d):\n%s", c.name, strings.Join(args, " "), code, out)
	if code != want {
		c.t.Fatalf("%s %s: exit code %d, want %d", c.name, strings.Join(args, " "), code, want)
	}
	return out
}

// outputs returns the root module's outputs, each decoded into the value
// of the same key in into (pointers).
func (c *cli) outputs(into map[string]any) {
	c.t.Helper()
	code, out, all := c.exec(c.t.Context(), "output", "-json")
	if code != 0 {
		c.t.Fatalf("%s output -json: exit %d\n%s", c.name, code, all)
	}
	var raw map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		c.t.Fatalf("%s output -json: %v\n%s", c.name, err, all)
	}
	for name, v := range into {
		o, ok := raw[name]
		if !ok {
			c.t.Fatalf("no output %q (have %v)", name, keysOf(raw))
		}
		if err := json.Unmarshal(o.Value, v); err != nil {
			c.t.Fatalf("output %s: %v\n%s", name, err, o.Value)
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// copyTree copies the regular files under from (without .terraform, state
// or lock files) to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			if d.Name() == ".terraform" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if strings.HasPrefix(d.Name(), "terraform.tfstate") || d.Name() == ".terraform.lock.hcl" || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
}

// moduleDir is modules/cluster-bootstrap in this checkout.
func moduleDir() string { return filepath.Join(devenv.Root(), "modules", "cluster-bootstrap") }

// wrapped matches pattern across the CLIs' line wrapping: a space matches
// any run of whitespace.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}
