package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of a manifest in an OCI layout's index.json that name it.
const (
	// AnnotationRefName is the OCI name of a reference in a layout: the tag.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the full image name `ctr images import`
	// gives what it imports (the OCI ref name alone would be prefixed with
	// its import-<date> base name).
	AnnotationContainerdName = "io.containerd.image.name"
)

// Artifact is what a layout holds and a registry takes: an image (Image) or
// an index of images (Index).
type Artifact interface {
	partial.Describable
	RawManifest() ([]byte, error)
}

// WriteLayout writes a as a tar of an OCI image layout (oci-layout,
// index.json, blobs/sha256/…) to w, its index.json naming it ref, so that
// `ctr -n k8s.io images import` gives it that name. The tar's own entries
// have fixed times, owners and modes: the same artifact and ref give the
// same bytes.
func WriteLayout(w io.Writer, ref name.Tag, a Artifact) error {
	desc, err := partial.Descriptor(a)
	if err != nil {
		return fmt.Errorf("layout: describing the image: %w", err)
	}
	if img, ok := a.(v1.Image); ok {
		if desc.Platform, err = platformOf(img); err != nil {
			return fmt.Errorf("layout: %w", err)
		}
	}
	desc.Annotations = map[string]string{
		AnnotationContainerdName: containerdName(ref),
		AnnotationRefName:        ref.TagStr(),
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{*desc},
	})
	if err != nil {
		return fmt.Errorf("layout: index.json: %w", err)
	}
	blobs, err := blobsOf(a)
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}

	tw := tar.NewWriter(w)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(layoutHeader(dir, tar.TypeDir, 0o755, 0)); err != nil {
			return fmt.Errorf("layout: %s: %w", dir, err)
		}
	}
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, f.data); err != nil {
			return err
		}
	}
	for _, b := range blobs {
		if err := writeBlob(tw, b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("layout: closing the tar: %w", err)
	}
	return nil
}

// containerdName is ref as containerd names images: Docker Hub's registry
// is docker.io there.
func containerdName(ref name.Tag) string {
	registry := ref.Context().RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + ref.Context().RepositoryStr() + ":" + ref.TagStr()
}

// blob is one content-addressed file of a layout.
type blob struct {
	digest v1.Hash
	size   int64
	open   func() (io.ReadCloser, error)
}

// blobsOf lists the blobs of a: its manifest, and for an image its config
// and layers, for an index the blobs of each image; each once, in a fixed
// order.
func blobsOf(a Artifact) ([]blob, error) {
	var out []blob
	seen := map[v1.Hash]bool{}
	add := func(b blob) {
		if !seen[b.digest] {
			seen[b.digest] = true
			out = append(out, b)
		}
	}
	var walk func(a Artifact) error
	walk = func(a Artifact) error {
		raw, err := a.RawManifest()
		if err != nil {
			return fmt.Errorf("reading a manifest: %w", err)
		}
		d, err := a.Digest()
		if err != nil {
			return fmt.Errorf("digest of a manifest: %w", err)
		}
		add(bytesBlob(d, raw))
		switch a := a.(type) {
		case v1.ImageIndex:
			im, err := a.IndexManifest()
			if err != nil {
				return fmt.Errorf("reading index %s: %w", d, err)
			}
			for _, m := range im.Manifests {
				var child Artifact
				switch {
				case m.MediaType.IsIndex():
					child, err = a.ImageIndex(m.Digest)
				case m.MediaType.IsImage():
					child, err = a.Image(m.Digest)
				default:
					return fmt.Errorf("index %s: manifest %s has media type %q, neither an image nor an index", d, m.Digest, m.MediaType)
				}
				if err != nil {
					return fmt.Errorf("index %s: manifest %s: %w", d, m.Digest, err)
				}
				if err := walk(child); err != nil {
					return err
				}
			}
		case v1.Image:
			m, err := a.Manifest()
			if err != nil {
				return fmt.Errorf("reading image %s: %w", d, err)
			}
			config, err := a.RawConfigFile()
			if err != nil {
				return fmt.Errorf("image %s: reading its config: %w", d, err)
			}
			add(bytesBlob(m.Config.Digest, config))
			for _, l := range m.Layers {
				layer, err := a.LayerByDigest(l.Digest)
				if err != nil {
					return fmt.Errorf("image %s: layer %s: %w", d, l.Digest, err)
				}
				add(blob{digest: l.Digest, size: l.Size, open: layer.Compressed})
			}
		default:
			return fmt.Errorf("manifest %s is neither an image nor an index (%T)", d, a)
		}
		return nil
	}
	if err := walk(a); err != nil {
		return nil, err
	}
	return out, nil
}

func bytesBlob(d v1.Hash, data []byte) blob {
	return blob{digest: d, size: int64(len(data)), open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// writeBlob writes b under blobs/sha256/, checking that its bytes have the
// digest its descriptor claims (a layer compressed differently on a second
// read would otherwise give a layout that does not verify).
func writeBlob(tw *tar.Writer, b blob) error {
	if b.digest.Algorithm != "sha256" {
		return fmt.Errorf("layout: blob %s: only sha256 digests are written", b.digest)
	}
	path := "blobs/sha256/" + b.digest.Hex
	if err := tw.WriteHeader(layoutHeader(path, tar.TypeReg, 0o644, b.size)); err != nil {
		return fmt.Errorf("layout: %s: %w", path, err)
	}
	rc, err := b.open()
	if err != nil {
		return fmt.Errorf("layout: opening %s: %w", path, err)
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, h), rc)
	if err != nil {
		return fmt.Errorf("layout: writing %s (%d of %d bytes): %w", path, n, b.size, err)
	}
	if n != b.size {
		return fmt.Errorf("layout: %s has %d bytes, its descriptor says %d", path, n, b.size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != b.digest.Hex {
		return fmt.Errorf("layout: %s has digest sha256:%s, its descriptor says %s: the blob is not reproducible", path, got, b.digest)
	}
	return nil
}

func writeFile(tw *tar.Writer, path string, data []byte) error {
	if err := tw.WriteHeader(layoutHeader(path, tar.TypeReg, 0o644, int64(len(data)))); err != nil {
		return fmt.Errorf("layout: %s: %w", path, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("layout: writing %s: %w", path, err)
	}
	return nil
}

// layoutHeader is a tar header with a fixed time (the Unix epoch) and owner
// (root), so a layout's tar is as reproducible as its content.
func layoutHeader(path string, typ byte, mode int64, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     path,
		Mode:     mode,
		Size:     size,
		ModTime:  time.Unix(0, 0).UTC(),
		Format:   tar.FormatUSTAR,
	}
}
