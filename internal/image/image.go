// Package image builds the OCI image of the in-cluster binaries (the modes
// reconcile and report of the provider's own main package) without Docker:
// one layer holding two static builds of the same source and version — the
// in-cluster binary (-tags incluster: both modes, no provider server) and
// the reporter's (-tags reportonly: the report mode alone, a third of the
// size, so a node agent maps a third of the memory) — run as a non-root user, labelled with the
// source, version and revision it was built from. Everything that goes into
// the image comes from Metadata and the binary's bytes — file times are the
// commit time, never the clock — so the same commit gives the same digest.
//
// Building an image and writing it as an OCI layout tarball are pure; only
// Push talks to a registry. Building the binary itself is the job of the
// command internal/cmd/image (`make image`).
package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinaryName is the binary's file name, at the root of the image's file
	// system.
	BinaryName = "terraform-provider-kmshealth"
	// Entrypoint is the binary's path in the image: the container's command
	// is the mode (reconcile or report) and its flags.
	Entrypoint = "/" + BinaryName
	// ReporterBinaryName is the reporter's build of the same source and
	// version (-tags reportonly), beside BinaryName: the reporter DaemonSet
	// runs it as its command (reporterinstall.Command), so the node agent
	// does not map the reconciler.
	ReporterBinaryName = BinaryName + "-report"
	// User runs the binary: a numeric non-root user and group, so the image
	// needs no /etc/passwd and `runAsNonRoot` can check it.
	User = "65532:65532"
	// SourceURL is where the source of every image lives.
	SourceURL = "https://github.com/kmshealth/terraform-provider-kmshealth"
	// OS is the only operating system the in-cluster binary runs on.
	OS = "linux"
)

// Architectures returns the GOARCH values an image can be built for.
func Architectures() []string { return []string{"amd64", "arm64"} }

// The OCI annotation keys used as image labels (and as annotations of an
// index of images).
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelCreated     = "org.opencontainers.image.created"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
)

// Metadata identifies a build: the same for every architecture.
type Metadata struct {
	// Version is the binary's main.version and the image's tag.
	Version string
	// Revision is the commit the binary was built from.
	Revision string
	// Created is the commit's time: the image's created time and the
	// modification time of its files. Never the time of the build, or the
	// digest would change with every build.
	Created time.Time
	// Source is the source repository's URL; empty means SourceURL.
	Source string
}

// Validate checks that m names a build.
func (m Metadata) Validate() error {
	var errs []error
	if m.Version == "" {
		errs = append(errs, errors.New("version is empty: give the binary's main.version (git describe), which is also the tag"))
	}
	if m.Revision == "" {
		errs = append(errs, errors.New("revision is empty: give the commit the binary was built from (git rev-parse HEAD)"))
	}
	if m.Created.IsZero() {
		errs = append(errs, errors.New("created time is zero: give the commit's time (git log -1 --format=%ct), never the clock"))
	}
	return errors.Join(errs...)
}

// Labels are the image's labels, the OCI annotation keys for source,
// version, revision, created, title and description.
func (m Metadata) Labels() map[string]string {
	source := m.Source
	if source == "" {
		source = SourceURL
	}
	return map[string]string{
		LabelSource:      source,
		LabelVersion:     m.Version,
		LabelRevision:    m.Revision,
		LabelCreated:     m.created().Format(time.RFC3339),
		LabelTitle:       BinaryName,
		LabelDescription: "The in-cluster modes (reconcile, report) of terraform-provider-kmshealth",
	}
}

// created is Created as stored: UTC, whole seconds (what a tar header keeps).
func (m Metadata) created() time.Time { return m.Created.UTC().Truncate(time.Second) }

// Image builds the image of binary and reporter, static linux binaries for
// arch (a GOARCH): one layer holding the binary at Entrypoint and the
// reporter's build at /ReporterBinaryName, owned by root with mode 0755,
// run as User from the working directory /, with OCI media types and m's
// labels. The same inputs always give the same digest.
func Image(m Metadata, arch string, binary, reporter []byte) (v1.Image, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("image metadata: %w", err)
	}
	if err := checkArch(arch); err != nil {
		return nil, err
	}
	if len(binary) == 0 {
		return nil, errors.New("binary is empty: build the in-cluster binary first (CGO_ENABLED=0 go build -tags incluster)")
	}
	if len(reporter) == 0 {
		return nil, errors.New("reporter binary is empty: build the reporter's binary first (CGO_ENABLED=0 go build -tags reportonly,grpcnotrace)")
	}
	layerTar, err := LayerTar(binary, reporter, m.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer), // gzip-compressed, as OCILayer says
		tarball.WithCompressedCaching,
	)
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	// Only the v1.Layer methods: the tarball layer's own descriptor carries
	// an empty annotations map, which the manifest's JSON drops, so the image
	// would not read back as it was built.
	layer = struct{ v1.Layer }{layer}

	created := v1.Time{Time: m.created()}
	config := &v1.ConfigFile{
		Architecture: arch,
		OS:           OS,
		Created:      created,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{Entrypoint},
			WorkingDir: "/",
			Labels:     m.Labels(),
		},
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, config)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: fmt.Sprintf("make image: %s %s for %s/%s (go build -tags incluster; %s: -tags reportonly)", BinaryName, m.Version, OS, arch, ReporterBinaryName),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return img, nil
}

// LayerTar is the uncompressed tar of the image's only layer: exactly two
// regular files at the root of the file system, the binary at BinaryName
// and the reporter's build at ReporterBinaryName, mode 0755, owned by uid
// and gid 0, modified at mtime (whole seconds, UTC). Root owns them so the
// user that runs them cannot change them.
func LayerTar(binary, reporter []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{BinaryName, binary}, {ReporterBinaryName, reporter}} {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.name,
			Mode:     0o755,
			Size:     int64(len(f.data)),
			ModTime:  mtime.UTC().Truncate(time.Second),
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer tar header for %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer tar: writing %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// Index is the image index of images (one per architecture, as Image builds
// them), annotated with m's labels. Every image must be for a different
// platform.
func Index(m Metadata, images ...v1.Image) (v1.ImageIndex, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("index metadata: %w", err)
	}
	if len(images) == 0 {
		return nil, errors.New("index of no images: build at least one architecture")
	}
	seen := map[string]bool{}
	adds := make([]mutate.IndexAddendum, 0, len(images))
	for _, img := range images {
		platform, err := platformOf(img)
		if err != nil {
			return nil, err
		}
		key := platform.OS + "/" + platform.Architecture
		if seen[key] {
			return nil, fmt.Errorf("index: two images for %s: build each architecture once", key)
		}
		seen[key] = true
		adds = append(adds, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	annotated, ok := mutate.Annotations(idx, m.Labels()).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("index: annotating the index did not give an index (go-containerregistry changed?)")
	}
	return annotated, nil
}

// platformOf reads the platform an image was built for from its config.
func platformOf(img v1.Image) (*v1.Platform, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	if cf.OS == "" || cf.Architecture == "" {
		return nil, fmt.Errorf("image config names no platform (os %q, architecture %q): build it with Image", cf.OS, cf.Architecture)
	}
	return &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}, nil
}

func checkArch(arch string) error {
	if !slices.Contains(Architectures(), arch) {
		return fmt.Errorf("architecture %q is not supported: want one of %v", arch, Architectures())
	}
	return nil
}
