package kmstest

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// envelopePrefix starts every etcd value kube-apiserver wrote through a KMS
// v2 provider; the provider's name and a colon follow, then the
// EncryptedObject message.
const envelopePrefix = "k8s:enc:kms:v2:"

// Field numbers of message EncryptedObject in k8s.io/apiserver's
// pkg/storage/value/encrypt/envelope/kmsv2/v2/api.proto.
const (
	fieldEncryptedData          = 1 // bytes
	fieldKeyID                  = 2 // string
	fieldEncryptedDEKSource     = 3 // bytes
	fieldAnnotations            = 4 // map<string, bytes>
	fieldEncryptedDEKSourceType = 5 // enum
)

// ErrNotKMSv2 is returned by ParseEnvelope for a value not written through
// a KMS v2 provider (identity, aescbc, secretbox, KMS v1, ...).
var ErrNotKMSv2 = errors.New("value is not a KMS v2 envelope")

// Envelope is what a KMS v2 encrypted etcd value says about how it was
// encrypted (the ciphertexts are left out).
type Envelope struct {
	// Provider is the KMS provider's name in the EncryptionConfiguration.
	Provider string
	// KeyID is the key ID the plugin returned when it wrapped the data key:
	// the KEK this object needs to be read.
	KeyID string
	// DEKSourceType is 0 for a data key, 1 for an HKDF seed (the default
	// since Kubernetes 1.29).
	DEKSourceType int32
}

// ParseEnvelope reads the envelope of one raw etcd value. A value of
// another provider yields an error wrapping ErrNotKMSv2; a KMS v2 value
// that does not parse, or names no key ID, yields another error.
func ParseEnvelope(value []byte) (Envelope, error) {
	rest, ok := bytes.CutPrefix(value, []byte(envelopePrefix))
	if !ok {
		return Envelope{}, fmt.Errorf("%w (starts %q)", ErrNotKMSv2, head(value))
	}
	// Provider names cannot contain ':' (the API server refuses such an
	// EncryptionConfiguration), so the first colon ends the name.
	name, msg, ok := bytes.Cut(rest, []byte(":"))
	if !ok || len(name) == 0 {
		return Envelope{}, fmt.Errorf("KMS v2 envelope without a provider name: %q", head(value))
	}
	env := Envelope{Provider: string(name)}
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return Envelope{}, fmt.Errorf("KMS v2 envelope of provider %s: field tag: %w", env.Provider, protowire.ParseError(n))
		}
		msg = msg[n:]
		switch {
		case num == fieldKeyID && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(msg)
			if m < 0 {
				return Envelope{}, fmt.Errorf("KMS v2 envelope of provider %s: keyID: %w", env.Provider, protowire.ParseError(m))
			}
			env.KeyID, n = string(v), m
		case num == fieldEncryptedDEKSourceType && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(msg)
			if m < 0 {
				return Envelope{}, fmt.Errorf("KMS v2 envelope of provider %s: encryptedDEKSourceType: %w", env.Provider, protowire.ParseError(m))
			}
			env.DEKSourceType, n = int32(v), m //nolint:gosec // a protobuf enum is an int32 on the wire
		default: // encryptedData, encryptedDEKSource, annotations, or a field added later
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return Envelope{}, fmt.Errorf("KMS v2 envelope of provider %s: field %d: %w", env.Provider, num, protowire.ParseError(n))
			}
		}
		msg = msg[n:]
	}
	if env.KeyID == "" {
		return Envelope{}, fmt.Errorf("KMS v2 envelope of provider %s names no keyID", env.Provider)
	}
	return env, nil
}

// head is the start of a value, for error messages that must not dump
// whole (possibly plaintext) objects.
func head(b []byte) []byte {
	const n = 16
	if len(b) > n {
		return b[:n]
	}
	return b
}
