package podtest

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// rehearsalEnv names the directory `go run ./internal/cmd/rehearse` wrote
// (scripts/test-acc.sh builds it once and sets this for both passes).
const rehearsalEnv = "KMSHEALTH_RELEASE_REHEARSAL"

// rehearsal is internal/cmd/rehearse's rehearsal.json: paths relative to
// dir.
type rehearsal struct {
	dir          string
	Commit       string `json:"commit"`
	Image        string `json:"image"`
	ImageDigest  string `json:"image_digest"`
	SigningKey   string `json:"signing_key"`
	SigningKeyID string `json:"signing_key_id"`
	Releases     []struct {
		Version     string `json:"version"`
		ImageDigest string `json:"image_digest"`
		Dir         string `json:"dir"`
	} `json:"releases"`
}

// loadRehearsal reads the rehearsal directory, and fails (never skips) when
// there is none: without it the release path is not tested at all.
func loadRehearsal(t *testing.T) *rehearsal {
	t.Helper()
	dir := os.Getenv(rehearsalEnv)
	if dir == "" {
		t.Fatalf("%s is not set: build the release rehearsal with `go run ./internal/cmd/rehearse` and set %s to its directory (scripts/test-acc.sh does both)", rehearsalEnv, rehearsalEnv)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rehearsal.json"))
	if err != nil {
		t.Fatalf("%s=%s: %v (build it with `go run ./internal/cmd/rehearse -out %s`)", rehearsalEnv, dir, err, dir)
	}
	r := &rehearsal{dir: dir}
	if err := json.Unmarshal(b, r); err != nil {
		t.Fatalf("%s/rehearsal.json: %v", dir, err)
	}
	if len(r.Releases) != 2 || r.Releases[0].ImageDigest != r.ImageDigest || r.Releases[1].ImageDigest == r.ImageDigest {
		t.Fatalf("%s/rehearsal.json: want the release linked to the image's digest %s, then the mutant linked to another; got %+v", dir, r.ImageDigest, r.Releases)
	}
	return r
}

// TestAccRelease_rehearsal installs a release as its users would, built by
// goreleaser from the project's .goreleaser.yaml (internal/cmd/rehearse),
// with no dev_overrides and no reattached provider:
//
//   - the archives, SHA256SUMS, its signature and the manifest are served by
//     a provider registry (the registry protocol, over loopback TLS) that
//     the CLI configuration's `host` blocks put in the place of
//     registry.terraform.io and registry.opentofu.org, so the CLI itself
//     checks what it checks on a real install: the archive against the
//     registry's shasum and the signed SHA256SUMS, the SHA256SUMS against
//     the signature and the registry's signing key. A network or file system
//     mirror would skip the signature;
//   - `providers lock`, then `init` against that lock;
//   - the release's image pushed to a registry in the test bed, which the
//     node's containerd mirrors ghcr.io to, and kmshealth_reconciler and
//     kmshealth_reporter applied with no `image`: their pods pull
//     ghcr.io/…:<version>@<digest the build linked> from it and become Ready;
//   - mutants that must fail: a renamed archive, a tampered archive,
//     SHA256SUMS changed after signing, and a build linked to a digest
//     nobody pushed.
//
// It runs under the CLI of each acceptance pass (Terraform 1.5.7, the
// newest Terraform, OpenTofu), on the package's node. The release is built
// once, before the passes, by scripts/test-acc.sh (`go run
// ./internal/cmd/rehearse`, about a minute warm, nothing when the commit is
// unchanged and the tree clean): every pass reads it, and building it here
// would cost each pass a goreleaser run on two shared cores. Without it the
// test fails; it never skips.
func TestAccRelease_rehearsal(t *testing.T) {
	// Serial: it serves a KMS plugin at the node's /var/run/kmsplugin/kms-1.sock
	// and installs the cluster-scoped KMSHealth CRD, as TestAccPod_reporter does.
	r := loadRehearsal(t)
	c := newCLI(t)
	good, wrongDigest := r.Releases[0], r.Releases[1]
	t.Logf("rehearsing release %s of commit %s under %s, image %s", good.Version, r.Commit, c.host, r.ImageDigest)

	// The archive mutants: each is the good release's files, changed as
	// described, served by a registry of its own, and `init` must fail.
	for _, m := range []struct {
		name   string
		mutate func(t *testing.T, dir string, sums map[string]string)
		want   *regexp.Regexp
	}{
		{
			name: "archive renamed after checksumming",
			mutate: func(t *testing.T, dir string, _ map[string]string) {
				zip := archiveName(good.Version)
				if err := os.Rename(filepath.Join(dir, zip), filepath.Join(dir, strings.TrimSuffix(zip, ".zip")+"-renamed.zip")); err != nil {
					t.Fatal(err)
				}
			},
			// "404 Not Found" (Terraform 1.5.7, OpenTofu), "bad response code:
			// 404" (the newest Terraform).
			want: regexp.MustCompile(`404 Not Found|bad response code: 404`),
		},
		{
			name: "archive tampered with",
			mutate: func(t *testing.T, dir string, _ map[string]string) {
				f, err := os.OpenFile(filepath.Join(dir, archiveName(good.Version)), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString("tampered"); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			},
			want: regexp.MustCompile(`incorrect checksum`),
		},
		{
			name: "SHA256SUMS changed after signing",
			mutate: func(t *testing.T, dir string, sums map[string]string) {
				// Another file's line: the archive still matches its
				// checksum, only the signature can tell.
				manifest := fmt.Sprintf("terraform-provider-kmshealth_%s_manifest.json", good.Version)
				if _, ok := sums[manifest]; !ok {
					t.Fatalf("SHA256SUMS does not list %s", manifest)
				}
				b, err := os.ReadFile(filepath.Join(dir, sumsName(good.Version)))
				if err != nil {
					t.Fatal(err)
				}
				changed := strings.Replace(string(b), sums[manifest], fmt.Sprintf("%x", sha256.Sum256([]byte("another manifest"))), 1)
				if err := os.WriteFile(filepath.Join(dir, sumsName(good.Version)), []byte(changed), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: regexp.MustCompile(`(?i)invalid signature`),
		},
	} {
		t.Run(m.name, func(t *testing.T) {
			dir := copyRelease(t, filepath.Join(r.dir, good.Dir))
			m.mutate(t, dir, readSums(t, dir, good.Version))
			reg := serveProviders(t, r, releaseDir{good.Version, dir})
			work := c.workdir(t, reg, rootModule(good.Version, ""))
			out, err := c.run(t, work, "init", "-input=false", "-no-color")
			if err == nil {
				t.Fatalf("init installed a release with its %s:\n%s", m.name, out)
			}
			if !m.want.MatchString(out) {
				t.Fatalf("init failed, but not on the %s (want %q):\n%s", m.name, m.want, out)
			}
			t.Logf("init refused the release with its %s: %s", m.name, lastLines(out, 3))
		})
	}
	if t.Failed() {
		return
	}

	// The image, pushed as the release workflow pushes it, to a registry in
	// the bed that the node's containerd mirrors ghcr.io to.
	node := mustNode(t)
	images := serveImages(t, node)
	pushed := pushImage(t, filepath.Join(r.dir, r.Image), images.addr, good.Version)
	if pushed != r.ImageDigest {
		t.Fatalf("pushed %s, but the provider links %s", pushed, r.ImageDigest)
	}

	ctx := context.Background()
	stopPlugin := startKMSPlugin(t)
	defer stopPlugin()
	const reconcilerNS, reporterNS = "release-reconciler", "release-reporter"
	if _, err := env.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: reporterNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := serveProviders(t, r, releaseDir{good.Version, filepath.Join(r.dir, good.Dir)}, releaseDir{wrongDigest.Version, filepath.Join(r.dir, wrongDigest.Dir)})
	sums := readSums(t, filepath.Join(r.dir, good.Dir), good.Version)
	t.Run("install", func(t *testing.T) {
		work := c.workdir(t, reg, rootModule(good.Version, fmt.Sprintf(`
resource "kmshealth_reconciler" "this" {
  namespace        = %q
  create_namespace = true
  replicas         = 1
  timeouts {
    create = "3m"
  }
}

resource "kmshealth_reporter" "this" {
  namespace      = %q
  probe_interval = "5s"
}
`, reconcilerNS, reporterNS)))
		// As a team locks a new provider: from the registry, for the
		// platforms it runs on; init then installs against that lock.
		platform := runtime.GOOS + "_" + runtime.GOARCH
		c.mustRun(t, work, "providers", "lock", "-platform="+platform)
		lock, err := os.ReadFile(filepath.Join(work, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			fmt.Sprintf("provider %q", c.host+"/kmshealth/kmshealth"),
			fmt.Sprintf("version     = %q", good.Version),
			"zh:" + sums[archiveName(good.Version)],
		} {
			if !strings.Contains(string(lock), want) {
				t.Fatalf("providers lock wrote no %s:\n%s", want, lock)
			}
		}
		out := c.mustRun(t, work, "init", "-input=false", "-no-color")
		installed := regexp.MustCompile(`(?m)^- Installed kmshealth/kmshealth .*$`).FindString(out)
		if !strings.Contains(strings.ToUpper(installed), r.SigningKeyID) {
			t.Errorf("init did not report the installation signed by key %s:\n%s", r.SigningKeyID, out)
		}
		t.Logf("providers lock recorded zh:%s; init: %s", sums[archiveName(good.Version)], installed)
		t.Cleanup(func() { c.mustRun(t, work, "destroy", "-auto-approve", "-input=false", "-no-color") })
		start := time.Now()
		c.mustRun(t, work, "apply", "-auto-approve", "-input=false", "-no-color")
		t.Logf("apply with the default image rolled out in %s", time.Since(start).Round(time.Second))

		want := install.ImageRepository + ":" + good.Version + "@" + r.ImageDigest
		for _, p := range []struct {
			ns       string
			selector map[string]string
		}{
			{reconcilerNS, map[string]string{install.NameLabel: reconcilerinstall.NameValue}},
			{reporterNS, map[string]string{install.NameLabel: reporterinstall.NameValue}},
		} {
			if err := checkPodsReady(p.ns, p.selector, 1)(nil); err != nil {
				t.Error(err)
			}
			pods, err := runningPods(ctx, p.ns, p.selector)
			if err != nil {
				t.Fatal(err)
			}
			for _, pod := range pods {
				for _, s := range pod.Status.ContainerStatuses {
					if !strings.HasSuffix(s.ImageID, "@"+r.ImageDigest) {
						t.Errorf("pod %s/%s container %s runs image %s, want the release's %s", pod.Namespace, pod.Name, s.Name, s.ImageID, r.ImageDigest)
					}
				}
				if got := pod.Spec.Containers[0].Image; got != want {
					t.Errorf("pod %s/%s names image %s, want the release's default %s", pod.Namespace, pod.Name, got, want)
				}
			}
		}
		if !images.served(r.ImageDigest) {
			t.Errorf("the bed's registry never served the manifest %s: the node did not pull the release's image from it (requests: %q)", r.ImageDigest, images.requests())
		} else {
			t.Logf("pods Ready on %s, image %s pulled from the bed's registry by digest", node.Name, want)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("mutant linked to a digest nobody pushed", func(t *testing.T) {
		work := c.workdir(t, reg, rootModule(wrongDigest.Version, `
resource "kmshealth_reconciler" "this" {
  namespace        = "release-wrong-digest"
  create_namespace = true
  replicas         = 1
  timeouts {
    create = "5m"
  }
}
`))
		c.mustRun(t, work, "init", "-input=false", "-no-color")
		t.Cleanup(func() { c.mustRun(t, work, "destroy", "-auto-approve", "-input=false", "-no-color") })
		start := time.Now()
		out, err := c.run(t, work, "apply", "-auto-approve", "-input=false", "-no-color")
		if err == nil {
			t.Fatalf("apply of the build linked to %s succeeded:\n%s", wrongDigest.ImageDigest, out)
		}
		if !regexp.MustCompile(`ErrImagePull|ImagePullBackOff`).MatchString(out) || !strings.Contains(out, strings.TrimPrefix(wrongDigest.ImageDigest, "sha256:")[:12]) {
			t.Fatalf("apply failed, but not on the pull of %s:\n%s", wrongDigest.ImageDigest, out)
		}
		if !images.asked(wrongDigest.ImageDigest) {
			t.Errorf("the node never asked the bed's registry for %s: the pull did not go by the linked digest (requests: %q)", wrongDigest.ImageDigest, images.requests())
		}
		t.Logf("apply of the build linked to a digest nobody pushed failed after %s: %s", time.Since(start).Round(time.Second), lastLines(out, 4))
	})
}

// archiveName and sumsName are the release's file names for this machine,
// as .goreleaser.yaml's templates write them.
func archiveName(version string) string {
	return fmt.Sprintf("terraform-provider-kmshealth_%s_%s_%s.zip", version, runtime.GOOS, runtime.GOARCH)
}

func sumsName(version string) string {
	return fmt.Sprintf("terraform-provider-kmshealth_%s_SHA256SUMS", version)
}

// readSums parses a release's SHA256SUMS: file name to hex digest.
func readSums(t *testing.T, dir, version string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, sumsName(version)))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			t.Fatalf("%s: malformed line %q", sumsName(version), line)
		}
		sums[f[1]] = f[0]
	}
	return sums
}

// copyRelease copies the release files (not goreleaser's build folders) of
// dir to a new temporary directory.
func copyRelease(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "terraform-provider-kmshealth_") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// releaseDir is one version's files, as goreleaser wrote them.
type releaseDir struct{ version, dir string }

// providerRegistry serves the provider registry protocol for
// kmshealth/kmshealth over TLS on loopback, from release directories, as
// the public registries serve an uploaded release: the versions and
// platforms named by each SHA256SUMS, the protocols of its manifest, and
// downloads whose shasum is the SHA256SUMS line, signed by the rehearsal's
// key. It serves files as they are: a mutated release is served mutated.
type providerRegistry struct {
	url    string // the providers.v1 base URL
	caFile string // the server certificate, for SSL_CERT_FILE
}

func serveProviders(t *testing.T, r *rehearsal, releases ...releaseDir) *providerRegistry {
	t.Helper()
	armor, err := os.ReadFile(filepath.Join(r.dir, r.SigningKey))
	if err != nil {
		t.Fatal(err)
	}
	type platform struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	type version struct {
		Version   string     `json:"version"`
		Protocols []string   `json:"protocols"`
		Platforms []platform `json:"platforms"`
	}
	var versions []version
	dirs, sums := map[string]string{}, map[string]map[string]string{}
	for _, rel := range releases {
		s := readSums(t, rel.dir, rel.version)
		var manifest struct {
			Metadata struct {
				ProtocolVersions []string `json:"protocol_versions"`
			} `json:"metadata"`
		}
		b, err := os.ReadFile(filepath.Join(rel.dir, fmt.Sprintf("terraform-provider-kmshealth_%s_manifest.json", rel.version)))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &manifest); err != nil || len(manifest.Metadata.ProtocolVersions) == 0 {
			t.Fatalf("release %s: manifest without protocol_versions (%v): %s", rel.version, err, b)
		}
		v := version{Version: rel.version, Protocols: manifest.Metadata.ProtocolVersions}
		prefix := "terraform-provider-kmshealth_" + rel.version + "_"
		for file := range s {
			osArch, ok := strings.CutSuffix(strings.TrimPrefix(file, prefix), ".zip")
			if goos, arch, found := strings.Cut(osArch, "_"); ok && found && strings.HasPrefix(file, prefix) {
				v.Platforms = append(v.Platforms, platform{goos, arch})
			}
		}
		if len(v.Platforms) == 0 {
			t.Fatalf("release %s: SHA256SUMS names no archive %s<os>_<arch>.zip", rel.version, prefix)
		}
		versions = append(versions, v)
		dirs[rel.version], sums[rel.version] = rel.dir, s
	}
	const base = "/v1/providers/kmshealth/kmshealth/"
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+base+"versions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"versions": versions})
	})
	mux.HandleFunc("GET "+base+"{version}/download/{os}/{arch}", func(w http.ResponseWriter, req *http.Request) {
		v, goos, arch := req.PathValue("version"), req.PathValue("os"), req.PathValue("arch")
		i := slices.IndexFunc(versions, func(x version) bool { return x.Version == v })
		file := fmt.Sprintf("terraform-provider-kmshealth_%s_%s_%s.zip", v, goos, arch)
		if i < 0 || sums[v][file] == "" {
			http.NotFound(w, req)
			return
		}
		files := srv.URL + "/files/" + v + "/"
		writeJSON(w, map[string]any{
			"protocols":             versions[i].Protocols,
			"os":                    goos,
			"arch":                  arch,
			"filename":              file,
			"download_url":          files + file,
			"shasums_url":           files + sumsName(v),
			"shasums_signature_url": files + sumsName(v) + ".sig",
			"shasum":                sums[v][file],
			"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{
				"key_id": r.SigningKeyID, "ascii_armor": string(armor),
			}}},
		})
	})
	mux.HandleFunc("GET /files/{version}/{file}", func(w http.ResponseWriter, req *http.Request) {
		dir, ok := dirs[req.PathValue("version")]
		if !ok || strings.Contains(req.PathValue("file"), "/") {
			http.NotFound(w, req)
			return
		}
		http.ServeFile(w, req, filepath.Join(dir, req.PathValue("file")))
	})
	srv = httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "registry.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return &providerRegistry{url: srv.URL + base[:len("/v1/providers/")], caFile: caFile}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// cli is the acceptance pass's Terraform or OpenTofu, run as a user runs
// it: its own CLI configuration, no dev_overrides, no reattached provider.
type cli struct {
	path string
	host string // the registry host a bare kmshealth/kmshealth source means
}

func newCLI(t *testing.T) cli {
	t.Helper()
	c := cli{path: os.Getenv("TF_ACC_TERRAFORM_PATH"), host: os.Getenv("TF_ACC_PROVIDER_HOST")}
	if c.path == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: run under scripts/test-acc.sh")
	}
	if c.host == "" {
		c.host = "registry.terraform.io"
	}
	return c
}

// rootModule is a user's root module requiring exactly version of the
// provider from its registry, with body.
func rootModule(version, body string) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    kmshealth = {
      source  = "kmshealth/kmshealth"
      version = "= %s"
    }
  }
}

provider "kmshealth" {
  config_path = %q
}
%s`, version, env.Kubeconfig, body)
}

// workdir is a new working directory holding main.tf and the CLI
// configuration that sends both registries' provider protocol to reg.
func (c cli) workdir(t *testing.T, reg *providerRegistry, module string) string {
	t.Helper()
	dir := t.TempDir()
	// Installation as a user's default, without the implied local
	// mirrors: from the registries only.
	config := "provider_installation {\n  direct {}\n}\n"
	for _, host := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		config += fmt.Sprintf("host %q {\n  services = {\n    \"providers.v1\" = %q\n  }\n}\n", host, reg.url)
	}
	ca, err := os.ReadFile(reg.caFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"main.tf": module, "cli.tfrc": config, "registry.crt": string(ca)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs the CLI in dir with only what a user's shell would give it and
// returns its combined output.
func (c cli) run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, "SSL_CERT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"TF_CLI_CONFIG_FILE="+filepath.Join(dir, "cli.tfrc"),
		// Trust the loopback registry's certificate as a system root.
		"SSL_CERT_FILE="+filepath.Join(dir, "registry.crt"),
		"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c cli) mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := c.run(t, dir, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(c.path), strings.Join(args, " "), err, out)
	}
	return out
}

// imageRegistry is an in-memory OCI registry on the node's bridge, which
// records the manifests it served.
type imageRegistry struct {
	addr string
	mu   sync.Mutex
	log  []string
}

func serveImages(t *testing.T, node *testenv.Node) *imageRegistry {
	t.Helper()
	reg := &imageRegistry{}
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	ln, err := net.Listen("tcp", net.JoinHostPort(testenv.BridgeAddress, "0"))
	if err != nil {
		t.Fatal(err)
	}
	reg.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		reg.mu.Lock()
		reg.log = append(reg.log, req.Method+" "+req.URL.Path)
		reg.mu.Unlock()
		handler.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := name.NewRepository(install.ImageRepository)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.MirrorRegistry(repo.RegistryStr(), "http://"+reg.addr); err != nil {
		t.Fatal(err)
	}
	return reg
}

func (r *imageRegistry) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// served tells whether a manifest was fetched by digest.
func (r *imageRegistry) served(digest string) bool {
	return slices.ContainsFunc(r.requests(), func(s string) bool {
		return strings.HasPrefix(s, "GET ") && strings.HasSuffix(s, "/manifests/"+digest)
	})
}

// asked tells whether a manifest was asked for by digest (HEAD or GET).
func (r *imageRegistry) asked(digest string) bool {
	return slices.ContainsFunc(r.requests(), func(s string) bool { return strings.HasSuffix(s, "/manifests/"+digest) })
}

// pushImage pushes the image (or index) of an OCI layout tarball to the
// registry at addr as <repository>:<version>, as the release workflow pushes
// it to ghcr.io, and returns the digest the tag now names.
func pushImage(t *testing.T, tarball, addr, version string) string {
	t.Helper()
	dir := t.TempDir()
	if err := untar(tarball, dir); err != nil {
		t.Fatalf("unpack %s: %v", tarball, err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%s holds %d manifests, want the image alone", tarball, len(m.Manifests))
	}
	repo, err := name.NewRepository(install.ImageRepository)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(addr+"/"+repo.RepositoryStr()+":"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc := m.Manifests[0]
	if desc.MediaType.IsIndex() {
		child, err := idx.ImageIndex(desc.Digest)
		if err == nil {
			err = remote.WriteIndex(tag, child)
		}
		if err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
	} else {
		img, err := idx.Image(desc.Digest)
		if err == nil {
			err = remote.Write(tag, img)
		}
		if err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
	}
	got, err := remote.Head(tag)
	if err != nil {
		t.Fatalf("head %s: %v", tag, err)
	}
	return got.Digest.String()
}

// untar unpacks the regular files and folders of a tarball into dir.
func untar(tarball, dir string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			var out *os.File
			if out, err = os.Create(target); err == nil {
				_, err = io.Copy(out, tr)
				err = errors.Join(err, out.Close())
			}
		}
		if err != nil {
			return err
		}
	}
}

// startKMSPlugin runs a real KMS v2 plugin where the reporter probes it,
// as TestAccPod_reporter does.
func startKMSPlugin(t *testing.T) func() {
	t.Helper()
	if err := os.MkdirAll("/var/run/kmsplugin", 0o755); err != nil {
		t.Fatal(err)
	}
	plugin, err := kmstest.Start(filepath.Join("/var/run/kmsplugin", "kms-1.sock"), "release-kek-1")
	if err != nil {
		t.Fatal(err)
	}
	return plugin.Stop
}

// lastLines is the last n non-empty lines of s, joined, for logs.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
