package image

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads a (an image or an index, with all its blobs) to ref with the
// credentials keychain finds for ref's registry (authn.DefaultKeychain reads
// the Docker config, as `crane auth login` and `docker login` write it), and
// returns the digest ref now names: the digest a release pins.
func Push(ctx context.Context, ref name.Reference, a Artifact, keychain authn.Keychain) (v1.Hash, error) {
	d, err := a.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: digest of the image: %w", ref, err)
	}
	err = remote.Push(ref, a, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w (log in to %s first, e.g. `crane auth login %s`)", ref, err, ref.Context().RegistryStr(), ref.Context().RegistryStr())
	}
	return d, nil
}
