// Command image builds the OCI image of the in-cluster binary from this
// checkout, without Docker (`make image`): for each architecture it builds
// the provider's main package twice, as static binaries of the same source
// and version: with -tags incluster (the provider server left out: the
// reconcile and report modes) and with -tags reportonly,grpcnotrace (the
// report mode alone, which the reporter DaemonSet runs); it packages them with
// internal/image, and writes an OCI layout tarball whose index.json names it
// <repository>:<version>, plus the digest beside it. With -push it also
// uploads the image (an index when several architectures are built) to a
// registry, as the release workflow does.
//
//	go run ./internal/cmd/image [-version v] [-arch amd64,arm64] [-out file.oci.tar] [-push ref]
//
// Load the tarball on a node with `ctr -n k8s.io images import <file>`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/gobuild"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/image"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
)

// buildTags leave the provider server out of the in-cluster binary;
// reporterTags leave out everything but the report mode (and gRPC's
// x/net/trace, whose html/template keeps every exported method of every
// linked type: 4 MiB of the reporter's 20). BENCHMARKS.md has the sizes
// and the reporter's memory.
const (
	buildTags    = "incluster"
	reporterTags = "reportonly,grpcnotrace"
)

// options are the command's flags as given.
type options struct {
	version    string
	revision   string
	created    string
	arch       string
	repository string
	out        string
	binary     string
	reporter   string
	push       string
}

// config is what a run needs, validated.
type config struct {
	meta       image.Metadata
	arches     []string
	ref        name.Tag // the name the layout gives the image
	out        string
	digestFile string
	binary     string         // a prebuilt binary to package, or "" to build one
	reporter   string         // a prebuilt reporter binary, with binary
	push       name.Reference // nil: do not push
	moduleDir  string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&o.version, "version", "", "the binary's main.version and the image tag (default: git describe --tags --always --dirty, without a leading v)")
	fs.StringVar(&o.revision, "revision", "", "the commit, for the revision label (default: git rev-parse HEAD)")
	fs.StringVar(&o.created, "created", "", "the image's created time, Unix seconds or RFC 3339 (default: $SOURCE_DATE_EPOCH, else the commit time)")
	fs.StringVar(&o.arch, "arch", defaultArch(), "comma-separated GOARCH values, of "+strings.Join(image.Architectures(), ", ")+"; several give an image index")
	fs.StringVar(&o.repository, "repository", install.ImageRepository, "the image's repository; the layout names the image <repository>:<version>")
	fs.StringVar(&o.out, "out", "", "the OCI layout tarball to write (default: build/image/terraform-provider-kmshealth-<version>.oci.tar); the digest goes beside it in .digest")
	fs.StringVar(&o.binary, "binary", "", "package this static linux binary (-tags incluster) instead of building one (a single -arch only; with -reporter-binary)")
	fs.StringVar(&o.reporter, "reporter-binary", "", "package this static linux binary (-tags "+reporterTags+") as the reporter's, with -binary")
	fs.StringVar(&o.push, "push", "", "also push the image to this reference (e.g. "+install.ImageRepository+":<version>) with the Docker config's credentials")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every input is a flag (see -h)", fs.Args())
	}
	c, err := o.validate(ctx)
	if err != nil {
		return err
	}
	return c.run(ctx)
}

// defaultArch is this machine's architecture when an image can be built for
// it, else amd64.
func defaultArch() string {
	if slices.Contains(image.Architectures(), runtime.GOARCH) {
		return runtime.GOARCH
	}
	return "amd64"
}

// validate checks the flags and fills in what git knows, before anything is
// built.
func (o options) validate(ctx context.Context) (*config, error) {
	moduleDir, err := goModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	git := func(flagName string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", moduleDir}, args...)...).Output()
		if err != nil {
			return "", fmt.Errorf("-%s not given and `git %s` failed (%w): run in a git checkout or give -%s", flagName, strings.Join(args, " "), err, flagName)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var errs []error
	if o.version == "" {
		o.version, err = git("version", "describe", "--tags", "--always", "--dirty")
		o.version = strings.TrimPrefix(o.version, "v") // as make and goreleaser: v1.2.3 is 1.2.3
		errs = append(errs, err)
	}
	if o.revision == "" {
		o.revision, err = git("revision", "rev-parse", "HEAD")
		errs = append(errs, err)
	}
	if o.created == "" {
		o.created = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if o.created == "" {
		o.created, err = git("created", "log", "-1", "--format=%ct", "HEAD")
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	c := &config{moduleDir: moduleDir, binary: o.binary, reporter: o.reporter}
	created, err := parseTime(o.created)
	c.meta = image.Metadata{Version: o.version, Revision: o.revision, Created: created}
	if err != nil {
		errs = append(errs, fmt.Errorf("-created: %w", err))
	} else if err := c.meta.Validate(); err != nil {
		errs = append(errs, err)
	}
	c.ref, err = name.NewTag(o.repository+":"+o.version, name.StrictValidation)
	if err != nil {
		errs = append(errs, fmt.Errorf("-repository %q with -version %q is not an image reference: %w", o.repository, o.version, err))
	}
	for _, a := range strings.Split(o.arch, ",") {
		a = strings.TrimSpace(a)
		if !slices.Contains(image.Architectures(), a) {
			errs = append(errs, fmt.Errorf("-arch: %q is not one of %s", a, strings.Join(image.Architectures(), ", ")))
		} else if slices.Contains(c.arches, a) {
			errs = append(errs, fmt.Errorf("-arch: %s given twice", a))
		}
		c.arches = append(c.arches, a)
	}
	if (o.binary == "") != (o.reporter == "") {
		errs = append(errs, errors.New("-binary and -reporter-binary: give both prebuilt binaries, or neither"))
	}
	if o.binary != "" && len(c.arches) != 1 {
		errs = append(errs, fmt.Errorf("-binary packages one binary: give a single -arch, not %q", o.arch))
	}
	c.out = o.out
	if c.out == "" {
		c.out = filepath.Join(moduleDir, "build", "image", image.BinaryName+"-"+o.version+".oci.tar")
	}
	c.digestFile = strings.TrimSuffix(strings.TrimSuffix(c.out, ".tar"), ".oci") + ".digest"
	if o.push != "" {
		c.push, err = name.ParseReference(o.push, name.StrictValidation)
		if err != nil {
			errs = append(errs, fmt.Errorf("-push %q is not an image reference: %w", o.push, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *config) run(ctx context.Context) error {
	var built []v1.Image
	for _, arch := range c.arches {
		bin, err := c.binaryFor(ctx, arch, c.binary, buildTags)
		if err != nil {
			return err
		}
		rep, err := c.binaryFor(ctx, arch, c.reporter, reporterTags)
		if err != nil {
			return err
		}
		for _, b := range [][]byte{bin, rep} {
			if err := image.CheckBinary(b, arch); err != nil {
				return fmt.Errorf("%s/%s: %w", image.OS, arch, err)
			}
		}
		img, err := image.Image(c.meta, arch, bin, rep)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", image.OS, arch, err)
		}
		d, err := img.Digest()
		if err != nil {
			return fmt.Errorf("%s/%s: digest: %w", image.OS, arch, err)
		}
		fmt.Printf("%s/%s: %s (binary %.1f MiB, reporter's %.1f MiB)\n", image.OS, arch, d, float64(len(bin))/(1<<20), float64(len(rep))/(1<<20))
		built = append(built, img)
	}
	var artifact image.Artifact = built[0]
	if len(built) > 1 {
		idx, err := image.Index(c.meta, built...)
		if err != nil {
			return err
		}
		artifact = idx
	}
	digest, err := artifact.Digest()
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	if err := c.writeLayout(artifact); err != nil {
		return err
	}
	if err := os.WriteFile(c.digestFile, []byte(digest.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing the digest: %w", err)
	}
	fmt.Printf("%s: %s\n%s\n", c.ref.Name(), c.out, digest)
	if c.push != nil {
		pushed, err := image.Push(ctx, c.push, artifact, authn.DefaultKeychain)
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", c.push, pushed)
	}
	return nil
}

// writeLayout writes the layout tarball next to its final path, then
// renames it, so a reader never sees half a tarball.
func (c *config) writeLayout(a image.Artifact) error {
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		return fmt.Errorf("creating the output directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.out), ".image-*.tar")
	if err != nil {
		return fmt.Errorf("creating the layout tarball: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone after the rename
	if err := image.WriteLayout(tmp, c.ref, a); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("%s: %w", c.out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", c.out, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", c.out, err)
	}
	if err := os.Rename(tmp.Name(), c.out); err != nil {
		return fmt.Errorf("%s: %w", c.out, err)
	}
	return nil
}

// binaryFor reads the prebuilt file, or builds the provider's main package
// with tags for arch: static (CGO_ENABLED=0), -trimpath, stripped, with
// main.version set.
func (c *config) binaryFor(ctx context.Context, arch, prebuilt, tags string) ([]byte, error) {
	if prebuilt != "" {
		b, err := os.ReadFile(prebuilt)
		if err != nil {
			return nil, fmt.Errorf("prebuilt binary: %w", err)
		}
		return b, nil
	}
	name := fmt.Sprintf("%s-%s-%s-%s-%s", image.BinaryName, image.OS, arch, strings.ReplaceAll(tags, ",", "+"), c.meta.Version)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "image: building %s %s for %s/%s (-tags %s)\n", image.BinaryName, c.meta.Version, image.OS, arch, tags)
	var b []byte
	err := gobuild.Binary(ctx, c.moduleDir, name, ".", []string{"CGO_ENABLED=0", "GOOS=" + image.OS, "GOARCH=" + arch},
		[]string{"-trimpath", "-tags", tags, "-ldflags", "-s -w -X main.version=" + c.meta.Version},
		func(path string) (err error) { b, err = os.ReadFile(path); return err })
	if err != nil {
		return nil, fmt.Errorf("building the binary (-tags %s) for %s/%s: %w (run `CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -tags %s .` to see why)", tags, image.OS, arch, err, arch, tags)
	}
	fmt.Fprintf(os.Stderr, "image: built in %s\n", time.Since(start).Round(time.Second))
	return b, nil
}

// goModuleDir is the directory of the main module's go.mod: the checkout.
func goModuleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("`go env GOMOD` failed (%w): is the go command on PATH?", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the module: run from the terraform-provider-kmshealth checkout")
	}
	return filepath.Dir(gomod), nil
}

// parseTime reads Unix seconds or an RFC 3339 time.
func parseTime(s string) (time.Time, error) {
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither Unix seconds nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}
