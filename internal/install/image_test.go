package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDefaultImage(t *testing.T) {
	tests := []struct {
		name                              string
		version, publishedVersion, digest string
		want                              string
		published                         bool
	}{
		{"dev build", "dev", "", "", ImageRepository + ":dev", false},
		{"no version", "", "", "", ImageRepository + ":dev", false},
		{"untagged build", "a654e48-dirty", "", "", ImageRepository + ":a654e48-dirty", false},
		{"release build", "1.2.3", "1.2.3", testDigest, ImageRepository + ":1.2.3@" + testDigest, true},
		{"release build asked for another version", "1.2.4", "1.2.3", testDigest, ImageRepository + ":1.2.4", true},
		{"digest without version", "1.2.3", "", testDigest, ImageRepository + ":1.2.3", false},
		{"version without digest", "1.2.3", "1.2.3", "", ImageRepository + ":1.2.3", false},
		{"digest without algorithm", "1.2.3", "1.2.3", strings.TrimPrefix(testDigest, "sha256:"), ImageRepository + ":1.2.3", false},
		{"short digest", "1.2.3", "1.2.3", testDigest[:70], ImageRepository + ":1.2.3", false},
		{"upper-case digest", "1.2.3", "1.2.3", strings.ToUpper(testDigest), ImageRepository + ":1.2.3", false},
		{"sha512 digest", "1.2.3", "1.2.3", "sha512:" + strings.TrimPrefix(testDigest, "sha256:"), ImageRepository + ":1.2.3", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultImage(tt.version, tt.publishedVersion, tt.digest); got != tt.want {
				t.Errorf("defaultImage(%q, %q, %q) = %q, want %q", tt.version, tt.publishedVersion, tt.digest, got, tt.want)
			}
			if got := published(tt.publishedVersion, tt.digest); got != tt.published {
				t.Errorf("published(%q, %q) = %v, want %v", tt.publishedVersion, tt.digest, got, tt.published)
			}
		})
	}
}

// TestDefaultImageAtLinkTime checks the link-time variables as a release
// build sets them; `make release-check` runs it with -ldflags -X …. In a
// plain test binary they are empty, and DefaultImage names the tag alone.
func TestDefaultImageAtLinkTime(t *testing.T) {
	if imageDigest == "" && imageVersion == "" {
		if ImagePublished() {
			t.Error("ImagePublished() = true in a build without a published digest")
		}
		if got, want := DefaultImage("1.2.3"), ImageRepository+":1.2.3"; got != want {
			t.Errorf("DefaultImage(1.2.3) = %q, want %q", got, want)
		}
		return
	}
	if !ImagePublished() {
		t.Fatalf("imageVersion=%q imageDigest=%q are set but not a published image: want a version and sha256:<64 lower-case hex>", imageVersion, imageDigest)
	}
	if got, want := DefaultImage(imageVersion), ImageRepository+":"+imageVersion+"@"+imageDigest; got != want {
		t.Errorf("DefaultImage(%q) = %q, want %q", imageVersion, got, want)
	}
}

// TestReleaseLinksImageVariables keeps .goreleaser.yaml's -X flags in step
// with the variables here: a -X naming a variable that does not exist is
// silently ignored by the linker, and the release would ask for an unpinned
// image.
func TestReleaseLinksImageVariables(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatalf("reading the release configuration: %v", err)
	}
	config := string(b)
	const pkg = "github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	for _, flag := range []string{
		"-X main.version={{ .Version }}",
		"-X " + pkg + ".imageVersion={{ .Version }}",
		"-X " + pkg + ".imageDigest={{ index .Env \"IMAGE_DIGEST\" }}",
	} {
		if !strings.Contains(config, flag) {
			t.Errorf(".goreleaser.yaml does not link %s", flag)
		}
	}
}
