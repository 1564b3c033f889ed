package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func TestWriteLayout(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	ref := mustTag(t, "ghcr.io/kmshealth/terraform-provider-kmshealth:v1.2.3")
	amd := mustImage(t, testMeta, "amd64", testBinary)
	arm := mustImage(t, testMeta, "arm64", testBinary)
	idx, err := Index(testMeta, amd, arm)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		artifact  Artifact
		mediaType types.MediaType
		platform  string // of the named manifest; "" for an index
		blobs     int    // manifests, configs and layers
	}{
		{"one image", amd, types.OCIManifestSchema1, "linux/amd64", 3},
		// Both architectures carry the same fake binary: one layer blob, once.
		{"index", idx, types.OCIImageIndex, "", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteLayout(&buf, ref, tt.artifact); err != nil {
				t.Fatal(err)
			}
			dir := untar(t, buf.Bytes())

			// index.json names the artifact as ctr images import reads it.
			raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
			if err != nil {
				t.Fatal(err)
			}
			var index v1.IndexManifest
			if err := json.Unmarshal(raw, &index); err != nil {
				t.Fatalf("index.json: %v", err)
			}
			if len(index.Manifests) != 1 {
				t.Fatalf("index.json lists %d manifests, want 1", len(index.Manifests))
			}
			desc := index.Manifests[0]
			if got, want := desc.Annotations["io.containerd.image.name"], "ghcr.io/kmshealth/terraform-provider-kmshealth:v1.2.3"; got != want {
				t.Errorf("io.containerd.image.name = %q, want %q", got, want)
			}
			if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != "v1.2.3" {
				t.Errorf("org.opencontainers.image.ref.name = %q, want the tag v1.2.3", got)
			}
			if desc.Digest != mustDigest(t, tt.artifact) || desc.MediaType != tt.mediaType {
				t.Errorf("index.json names %s %s, want %s %s", desc.MediaType, desc.Digest, tt.mediaType, mustDigest(t, tt.artifact))
			}
			platform := ""
			if desc.Platform != nil {
				platform = desc.Platform.OS + "/" + desc.Platform.Architecture
			}
			if platform != tt.platform {
				t.Errorf("platform %q, want %q", platform, tt.platform)
			}
			layoutFile, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
			if err != nil || string(layoutFile) != `{"imageLayoutVersion":"1.0.0"}` {
				t.Errorf("oci-layout = %q (%v)", layoutFile, err)
			}
			blobs, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
			if err != nil || len(blobs) != tt.blobs {
				t.Errorf("%d blobs (%v), want %d", len(blobs), err, tt.blobs)
			}

			// go-containerregistry reads the layout back, every digest checked.
			lidx, err := layout.ImageIndexFromPath(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := validate.Index(lidx); err != nil {
				t.Errorf("the layout does not validate: %v", err)
			}
		})
	}
}

func TestWriteLayoutDockerHubName(t *testing.T) {
	img := mustImage(t, testMetadata(), "amd64", []byte(testBinaryText))
	var buf bytes.Buffer
	if err := WriteLayout(&buf, mustTag(t, "index.docker.io/kmshealth/kmshealth:v1"), img); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(untar(t, buf.Bytes()), "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	if got, want := index.Manifests[0].Annotations[AnnotationContainerdName], "docker.io/kmshealth/kmshealth:v1"; got != want {
		t.Errorf("containerd name %q, want %q (containerd's spelling of Docker Hub)", got, want)
	}
}

// untar extracts a layout tarball, checking every entry has the fixed time,
// owner and mode WriteLayout promises.
func untar(t *testing.T, b []byte) string {
	t.Helper()
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.ModTime.Unix() != 0 || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s: mtime %v, owner %d:%d; want the epoch and root", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if hdr.Mode != 0o755 {
				t.Errorf("%s: mode %o, want 755", hdr.Name, hdr.Mode)
			}
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if hdr.Mode != 0o644 {
				t.Errorf("%s: mode %o, want 644", hdr.Name, hdr.Mode)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: unexpected type %q", hdr.Name, hdr.Typeflag)
		}
	}
}
