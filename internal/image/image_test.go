package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testBinary is a fake binary: the image does not care what the bytes are,
// and the tests need not build the provider.
const testBinaryText = "#!fake in-cluster binary\x00\x01\x02 of a few bytes"

// testReporterText is the fake reporter's build, beside it.
const testReporterText = "#!fake reporter binary\x00\x03"

// testMetadata is the metadata of a build of commit 0123… at a fixed time.
func testMetadata() Metadata {
	return Metadata{
		Version:  "v1.2.3",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  time.Date(2026, 5, 8, 12, 34, 56, 0, time.UTC),
	}
}

func mustImage(t *testing.T, m Metadata, arch string, binary []byte) v1.Image {
	t.Helper()
	img, err := Image(m, arch, binary, []byte(testReporterText))
	if err != nil {
		t.Fatalf("Image(%s): %v", arch, err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("Image(%s) does not validate: %v", arch, err)
	}
	return img
}

func mustDigest(t *testing.T, a Artifact) v1.Hash {
	t.Helper()
	d, err := a.Digest()
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return d
}

func TestImageConfig(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	for _, arch := range Architectures() {
		t.Run(arch, func(t *testing.T) {
			img := mustImage(t, testMeta, arch, testBinary)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != arch {
				t.Errorf("platform = %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
			}
			if !cf.Created.Equal(testMeta.Created) {
				t.Errorf("created = %v, want the commit time %v", cf.Created, testMeta.Created)
			}
			c := cf.Config
			if c.User != "65532:65532" {
				t.Errorf("user = %q, want 65532:65532", c.User)
			}
			if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/terraform-provider-kmshealth" {
				t.Errorf("entrypoint = %q, want [/terraform-provider-kmshealth]", c.Entrypoint)
			}
			if len(c.Cmd) != 0 {
				t.Errorf("cmd = %q, want none: the pod gives the mode", c.Cmd)
			}
			if c.WorkingDir != "/" {
				t.Errorf("working dir = %q, want /", c.WorkingDir)
			}
			wantLabels := map[string]string{
				"org.opencontainers.image.source":   "https://github.com/kmshealth/terraform-provider-kmshealth",
				"org.opencontainers.image.version":  "v1.2.3",
				"org.opencontainers.image.revision": testMeta.Revision,
				"org.opencontainers.image.created":  "2026-05-08T12:34:56Z",
			}
			for k, want := range wantLabels {
				if got := c.Labels[k]; got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}

			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
				t.Errorf("media types: manifest %s, config %s; want OCI", m.MediaType, m.Config.MediaType)
			}
			if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
				t.Fatalf("layers = %+v, want one %s", m.Layers, types.OCILayer)
			}
			if len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 || !cf.History[0].Created.Equal(testMeta.Created) {
				t.Errorf("rootfs %v, history %+v: want one layer created at the commit time", cf.RootFS.DiffIDs, cf.History)
			}
		})
	}
}

func TestLayerContents(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	img := mustImage(t, testMeta, "amd64", testBinary)
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	compressed, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 2)
	if _, err := io.ReadFull(compressed, head); err != nil || !bytes.Equal(head, []byte{0x1f, 0x8b}) {
		t.Errorf("compressed layer starts %x (%v), want gzip", head, err)
	}
	_ = compressed.Close()

	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	var entries []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, hdr.Name)
		want := map[string][]byte{"terraform-provider-kmshealth": testBinary, "terraform-provider-kmshealth-report": []byte(testReporterText)}[hdr.Name]
		if hdr.Typeflag != tar.TypeReg {
			t.Errorf("type %q, want a regular file", hdr.Typeflag)
		}
		if hdr.Mode != 0o755 {
			t.Errorf("mode %o, want 755", hdr.Mode)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("owner %d:%d, want 0:0 (root owns it, 65532 runs it)", hdr.Uid, hdr.Gid)
		}
		if !hdr.ModTime.Equal(testMeta.Created) {
			t.Errorf("mtime %v, want the commit time %v", hdr.ModTime, testMeta.Created)
		}
		got, err := io.ReadAll(tr)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: content %q (%v), want the binary's bytes", hdr.Name, got, err)
		}
	}
	if len(entries) != 2 || entries[0] != "terraform-provider-kmshealth" || entries[1] != "terraform-provider-kmshealth-report" {
		t.Errorf("layer holds %q, want exactly [terraform-provider-kmshealth terraform-provider-kmshealth-report]", entries)
	}
}

func TestReproducible(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	ref := mustTag(t, "ghcr.io/kmshealth/terraform-provider-kmshealth:v1.2.3")
	build := func(m Metadata, binary []byte) (v1.Hash, []byte) {
		// A fresh copy of the input, as a second build reads the file anew.
		img := mustImage(t, m, "amd64", append([]byte(nil), binary...))
		var buf bytes.Buffer
		if err := WriteLayout(&buf, ref, img); err != nil {
			t.Fatal(err)
		}
		return mustDigest(t, img), buf.Bytes()
	}
	d1, tar1 := build(testMeta, testBinary)
	d2, tar2 := build(testMeta, testBinary)
	if d1 != d2 {
		t.Errorf("same input, digests %s and %s", d1, d2)
	}
	if !bytes.Equal(tar1, tar2) {
		t.Error("same input, different layout tarballs")
	}

	// And the digest does depend on every input.
	later := testMeta
	later.Created = later.Created.Add(time.Second)
	other := testMeta
	other.Revision = strings.Repeat("f", 40)
	for name, d := range map[string]v1.Hash{
		"binary":   first(build(testMeta, append(testBinary, '!'))),
		"created":  first(build(later, testBinary)),
		"revision": first(build(other, testBinary)),
	} {
		if d == d1 {
			t.Errorf("another %s gives the same digest %s", name, d)
		}
	}

	// An index of the same images is as reproducible.
	index := func() v1.Hash {
		idx, err := Index(testMeta, mustImage(t, testMeta, "amd64", testBinary), mustImage(t, testMeta, "arm64", testBinary))
		if err != nil {
			t.Fatal(err)
		}
		return mustDigest(t, idx)
	}
	if a, b := index(), index(); a != b {
		t.Errorf("same images, index digests %s and %s", a, b)
	}
}

func first(d v1.Hash, _ []byte) v1.Hash { return d }

func TestIndex(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	amd := mustImage(t, testMeta, "amd64", testBinary)
	arm := mustImage(t, testMeta, "arm64", testBinary)
	idx, err := Index(testMeta, amd, arm)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("index does not validate: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	if im.Annotations[LabelVersion] != "v1.2.3" || im.Annotations[LabelSource] != SourceURL {
		t.Errorf("annotations %v, want the labels", im.Annotations)
	}
	want := map[string]v1.Hash{"linux/amd64": mustDigest(t, amd), "linux/arm64": mustDigest(t, arm)}
	if len(im.Manifests) != len(want) {
		t.Fatalf("%d manifests, want %d", len(im.Manifests), len(want))
	}
	for _, m := range im.Manifests {
		key := m.Platform.OS + "/" + m.Platform.Architecture
		if m.Digest != want[key] {
			t.Errorf("%s: %s, want %s", key, m.Digest, want[key])
		}
	}

	if _, err := Index(testMeta, amd, amd); err == nil || !strings.Contains(err.Error(), "two images for linux/amd64") {
		t.Errorf("index of the same platform twice: %v, want an error naming linux/amd64", err)
	}
	if _, err := Index(testMeta); err == nil {
		t.Error("index of no images: no error")
	}
}

func TestImageRefusesBadInput(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	tests := []struct {
		name     string
		meta     Metadata
		arch     string
		binary   []byte
		reporter []byte
		want     string
	}{
		{"no version", Metadata{Revision: "r", Created: testMeta.Created}, "amd64", testBinary, []byte(testReporterText), "version is empty"},
		{"no revision", Metadata{Version: "v", Created: testMeta.Created}, "amd64", testBinary, []byte(testReporterText), "revision is empty"},
		{"no time", Metadata{Version: "v", Revision: "r"}, "amd64", testBinary, []byte(testReporterText), "created time is zero"},
		{"unknown arch", testMeta, "riscv64", testBinary, []byte(testReporterText), `architecture "riscv64" is not supported`},
		{"no binary", testMeta, "amd64", nil, []byte(testReporterText), "binary is empty"},
		{"no reporter binary", testMeta, "amd64", testBinary, nil, "reporter binary is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Image(tt.meta, tt.arch, tt.binary, tt.reporter)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Image: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckBinary(t *testing.T) {
	testBinary := []byte(testBinaryText)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	if err := CheckBinary(testBinary, "amd64"); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("fake binary: %v, want not an ELF", err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the test binary is an ELF only on linux")
	}
	if err := CheckBinary(exe, other); err == nil || !strings.Contains(err.Error(), "GOARCH="+other) {
		t.Errorf("%s binary checked as %s: %v, want an error naming GOARCH=%s", runtime.GOARCH, other, err, other)
	}
	// The test binary itself may be static or not, depending on cgo.
	err = CheckBinary(exe, runtime.GOARCH)
	if err != nil && !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("the test binary for its own architecture: %v, want nil or a dynamic-linking error", err)
	}
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	ref, err := name.NewTag(s, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
