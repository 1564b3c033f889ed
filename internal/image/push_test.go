package image

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush pushes an index of both architectures to an in-process registry
// on loopback and reads it back by the digest Push returned.
func TestPush(t *testing.T) {
	testBinary, testMeta := []byte(testBinaryText), testMetadata()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	idx, err := Index(testMeta, mustImage(t, testMeta, "amd64", testBinary), mustImage(t, testMeta, "arm64", testBinary))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(host+"/kmshealth/terraform-provider-kmshealth:v1.2.3", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pushed, err := Push(ctx, ref, idx, authn.NewMultiKeychain()) // anonymous
	if err != nil {
		t.Fatal(err)
	}
	if want := mustDigest(t, idx); pushed != want {
		t.Errorf("Push returned %s, want the index digest %s", pushed, want)
	}
	got, err := remote.Get(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != pushed {
		t.Errorf("the registry has %s at %s, want %s", got.Digest, ref, pushed)
	}
	pulled, err := got.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := pulled.IndexManifest()
	if err != nil || len(im.Manifests) != 2 {
		t.Fatalf("pulled index: %v, %v; want two manifests", im, err)
	}
}
