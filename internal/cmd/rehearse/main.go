// Command rehearse builds what a release publishes, the way the release
// workflow builds it, for the release rehearsal test
// (internal/provider/podtest TestAccRelease_rehearsal) to install as a user
// would: the in-cluster image (`make image`'s program) and, linked to its
// digest, the provider archives, SHA256SUMS, their GPG signature and the
// registry manifest, made by goreleaser from the project's own
// .goreleaser.yaml. scripts/test-acc.sh runs it once before the acceptance
// passes and hands the directory to both through
// KMSHEALTH_RELEASE_REHEARSAL.
//
//	go run ./internal/cmd/rehearse [-out build/rehearsal] [-goreleaser path]
//
// What differs from a tag's release, and why:
//   - the version is fixed (Version below): the image must be built before
//     the provider, whose build links the image's digest, and the image's
//     tag is the provider's version, so the version has to be known first;
//     goreleaser's snapshot version_template is set to it;
//   - the archives are built for this machine's OS and architecture only
//     (the project's list of six, intersected): the test can run only these,
//     and the cross builds would cost minutes in every `make test`;
//   - the checksums are signed with a throwaway key made here (gpg
//     --quick-gen-key, no passphrase), not the release key;
//   - nothing is published.
//
// A second release, WrongDigestVersion, is the same build linked to a digest
// that was never pushed: the test's mutant, whose apply must fail on the
// pull.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	// Version is the rehearsal's release version: the provider's version
	// and the image's tag. A pre-release, so no constraint but an exact
	// one selects it.
	Version = "0.0.1-rehearsal"
	// WrongDigestVersion is the mutant release, linked to WrongDigest.
	WrongDigestVersion = "0.0.1-rehearsal.wrong-digest"
	// ManifestFile is what the test reads: a Manifest as JSON.
	ManifestFile = "rehearsal.json"
)

// WrongDigest is a well-formed digest of no image: the mutant's.
var WrongDigest = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("kmshealth release rehearsal: an image nobody pushed")))

// Manifest describes a rehearsal directory; paths are relative to it.
type Manifest struct {
	Commit       string    `json:"commit"`
	Clean        bool      `json:"clean"`          // built from Commit's tree, nothing changed or added
	Goreleaser   string    `json:"goreleaser"`     // the goreleaser binary (its path names its version)
	Image        string    `json:"image"`          // the image's OCI layout tarball
	ImageDigest  string    `json:"image_digest"`   // its digest, linked into Releases[0]
	SigningKey   string    `json:"signing_key"`    // the ASCII-armoured public key that signed the SHA256SUMS
	SigningKeyID string    `json:"signing_key_id"` // its long key ID
	Releases     []Release `json:"releases"`       // the good one first, then the mutant
}

// Release is one goreleaser run's output.
type Release struct {
	Version     string `json:"version"`
	ImageDigest string `json:"image_digest"` // what its provider links
	Dir         string `json:"dir"`          // goreleaser's dist: zips, SHA256SUMS(.sig), manifest
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rehearse:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rehearse", flag.ContinueOnError)
	out := fs.String("out", filepath.Join("build", "rehearsal"), "the directory to write (replaced)")
	goreleaser := fs.String("goreleaser", "", "the goreleaser binary (default: what `bash tools/install.sh goreleaser` prints)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every input is a flag (see -h)", fs.Args())
	}
	start := time.Now()
	moduleDir, err := output(ctx, "", "go", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return fmt.Errorf("find the module (run inside the checkout): %w", err)
	}
	if *goreleaser == "" {
		if *goreleaser, err = output(ctx, moduleDir, "bash", "tools/install.sh", "goreleaser"); err != nil {
			return fmt.Errorf("goreleaser: %w", err)
		}
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	m := Manifest{Image: "image.oci.tar", SigningKey: "signing-key.asc", Goreleaser: *goreleaser}
	if m.Commit, err = output(ctx, moduleDir, "git", "rev-parse", "HEAD"); err != nil {
		return err
	}
	status, err := output(ctx, moduleDir, "git", "status", "--porcelain")
	if err != nil {
		return err
	}
	m.Clean = status == ""
	// Same commit, clean tree, same goreleaser: the same release (the
	// image and the builds are reproducible), so a warm `make test` reuses
	// it. Any change, even uncommitted, builds again.
	if prev, err := os.ReadFile(filepath.Join(dir, ManifestFile)); err == nil && m.Clean {
		var p Manifest
		if json.Unmarshal(prev, &p) == nil && p.Clean && p.Commit == m.Commit && p.Goreleaser == m.Goreleaser {
			fmt.Printf("rehearse: %s is up to date (commit %s)\n", dir, m.Commit)
			return nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	step := time.Now()
	if _, err := output(ctx, moduleDir, "go", "run", "./internal/cmd/image", "-version", Version, "-out", filepath.Join(dir, m.Image)); err != nil {
		return fmt.Errorf("build the image: %w", err)
	}
	digest, err := os.ReadFile(filepath.Join(dir, "image.digest"))
	if err != nil {
		return err
	}
	m.ImageDigest = strings.TrimSpace(string(digest))
	fmt.Printf("rehearse: image %s %s in %s\n", Version, m.ImageDigest, time.Since(step).Round(time.Second))

	gnupg, err := os.MkdirTemp("", "kmshealth-gpg-")
	if err != nil {
		return err
	}
	defer func() {
		_ = exec.Command("gpgconf", "--homedir", gnupg, "--kill", "gpg-agent").Run()
		_ = os.RemoveAll(gnupg)
	}()
	fingerprint, err := signingKey(ctx, gnupg, filepath.Join(dir, m.SigningKey))
	if err != nil {
		return err
	}
	m.SigningKeyID = fingerprint[len(fingerprint)-16:]

	config, err := deriveConfig(filepath.Join(moduleDir, ".goreleaser.yaml"))
	if err != nil {
		return err
	}
	for _, r := range []Release{
		{Version: Version, ImageDigest: m.ImageDigest, Dir: "dist"},
		{Version: WrongDigestVersion, ImageDigest: WrongDigest, Dir: "dist-wrong-digest"},
	} {
		step := time.Now()
		if err := release(ctx, moduleDir, *goreleaser, config, filepath.Join(dir, r.Dir), r, gnupg, fingerprint); err != nil {
			return err
		}
		fmt.Printf("rehearse: release %s (image %s) in %s\n", r.Version, r.ImageDigest, time.Since(step).Round(time.Second))
		m.Releases = append(m.Releases, r)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		return err
	}
	fmt.Printf("rehearse: %s in %s\n", dir, time.Since(start).Round(time.Second))
	return nil
}

// signingKey makes a throwaway RSA signing key without a passphrase in the
// GnuPG home gnupg (as the registries require RSA or DSA keys), writes its
// ASCII-armoured public key to pub and returns its fingerprint.
func signingKey(ctx context.Context, gnupg, pub string) (string, error) {
	gpg := func(args ...string) (string, error) {
		return output(ctx, "", "gpg", append([]string{"--homedir", gnupg, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	}
	const uid = "kmshealth release rehearsal <rehearsal@kmshealth.test>"
	if _, err := gpg("--quick-gen-key", uid, "rsa3072", "sign", "never"); err != nil {
		return "", fmt.Errorf("make the test signing key (GnuPG: apt-get install gpg gpg-agent, or `bash tools/install.sh node-packages`): %w", err)
	}
	colons, err := gpg("--with-colons", "--list-secret-keys", uid)
	if err != nil {
		return "", err
	}
	var fingerprint string
	for _, line := range strings.Split(colons, "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			fingerprint = f[9]
			break
		}
	}
	if len(fingerprint) != 40 {
		return "", fmt.Errorf("no fingerprint for the test signing key in %q", colons)
	}
	armor, err := gpg("--armor", "--export", fingerprint)
	if err != nil {
		return "", err
	}
	return fingerprint, os.WriteFile(pub, []byte(armor+"\n"), 0o644)
}

// deriveConfig is the project's goreleaser configuration with the
// rehearsal's changes (see the package comment): every build for this
// machine's OS and architecture only, which must be among those the
// project releases. The snapshot version and dist are set per release.
func deriveConfig(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var config map[string]any
	if err := yaml.Unmarshal(b, &config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	builds, _ := config["builds"].([]any)
	if len(builds) == 0 {
		return nil, fmt.Errorf("%s: no builds", path)
	}
	for i, b := range builds {
		build, ok := b.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: builds[%d] is not a map", path, i)
		}
		for key, want := range map[string]string{"goos": runtime.GOOS, "goarch": runtime.GOARCH} {
			list, _ := build[key].([]any)
			if !slices.Contains(list, any(want)) {
				return nil, fmt.Errorf("%s: builds[%d].%s %v does not release this machine's %s: the rehearsal could not install it", path, i, key, list, want)
			}
			build[key] = []string{want}
		}
	}
	return config, nil
}

// release runs goreleaser's snapshot release with config into dist, linked
// to r's image digest and signed with the key fingerprint in gnupg, and
// adds the registry manifest under its release name (the release uploads
// it beside the archives; goreleaser only checksums it).
func release(ctx context.Context, moduleDir, goreleaser string, config map[string]any, dist string, r Release, gnupg, fingerprint string) error {
	config["dist"] = dist
	config["snapshot"] = map[string]any{"version_template": r.Version}
	b, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	path := dist + ".goreleaser.yaml"
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goreleaser, "release", "--snapshot", "--clean", "--skip=publish", "--config", path)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "IMAGE_DIGEST="+r.ImageDigest, "GPG_FINGERPRINT="+fingerprint, "GNUPGHOME="+gnupg)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("goreleaser release --snapshot (%s): %w\n%s", r.Version, err, log.String())
	}
	manifest, err := os.ReadFile(filepath.Join(moduleDir, "terraform-registry-manifest.json"))
	if err != nil {
		return err
	}
	name := fmt.Sprintf("terraform-provider-kmshealth_%s_manifest.json", r.Version)
	return os.WriteFile(filepath.Join(dist, name), manifest, 0o644)
}

// output runs a command in dir and returns its trimmed standard output, or
// an error holding what it wrote to standard error.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) || stderr.Len() > 0 {
			return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
