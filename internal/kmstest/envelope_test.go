package kmstest

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// encryptedObject builds an EncryptedObject the way the API server's
// generated code lays it out, with the fields the caller asks for.
func encryptedObject(keyID string, sourceType uint64, annotations map[string]string, extra func([]byte) []byte) []byte {
	var b []byte
	b = protowire.AppendTag(b, fieldEncryptedData, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("\x00sealed:data\x12"))
	if keyID != "" {
		b = protowire.AppendTag(b, fieldKeyID, protowire.BytesType)
		b = protowire.AppendString(b, keyID)
	}
	b = protowire.AppendTag(b, fieldEncryptedDEKSource, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("wrapped-seed"))
	for k, v := range annotations {
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, []byte(v))
		b = protowire.AppendTag(b, fieldAnnotations, protowire.BytesType)
		b = protowire.AppendBytes(b, entry)
	}
	if sourceType != 0 {
		b = protowire.AppendTag(b, fieldEncryptedDEKSourceType, protowire.VarintType)
		b = protowire.AppendVarint(b, sourceType)
	}
	if extra != nil {
		b = extra(b)
	}
	return b
}

func TestParseEnvelope(t *testing.T) {
	seeded := encryptedObject("kek-2", 1, nil, nil)
	for _, tc := range []struct {
		name    string
		value   []byte
		want    Envelope
		wantErr string
		notKMS  bool
	}{
		{
			name:  "seeded, the API server's default",
			value: append([]byte("k8s:enc:kms:v2:kmshealth-test:"), seeded...),
			want:  Envelope{Provider: "kmshealth-test", KeyID: "kek-2", DEKSourceType: 1},
		},
		{
			name:  "data key with plugin annotations",
			value: append([]byte("k8s:enc:kms:v2:p:"), encryptedObject("arn:aws:kms:eu-west-1:1:key/x", 0, map[string]string{"kms.example.com/region": "eu"}, nil)...),
			want:  Envelope{Provider: "p", KeyID: "arn:aws:kms:eu-west-1:1:key/x"},
		},
		{
			name: "a field added later is skipped",
			value: append([]byte("k8s:enc:kms:v2:p:"), encryptedObject("k", 1, nil, func(b []byte) []byte {
				b = protowire.AppendTag(b, 42, protowire.Fixed64Type)
				return protowire.AppendFixed64(b, 7)
			})...),
			want: Envelope{Provider: "p", KeyID: "k", DEKSourceType: 1},
		},
		{name: "identity, protobuf", value: []byte("k8s\x00\n\x0c\n\x02v1\x12\x06Secret"), notKMS: true, wantErr: "not a KMS v2 envelope"},
		{name: "identity, JSON", value: []byte(`{"kind":"ConfigMap"}`), notKMS: true, wantErr: "not a KMS v2 envelope"},
		{name: "aescbc", value: []byte("k8s:enc:aescbc:v1:key1:xxxxxxxx"), notKMS: true, wantErr: "not a KMS v2 envelope"},
		{name: "KMS v1", value: []byte("k8s:enc:kms:v1:old:xxxx"), notKMS: true, wantErr: "not a KMS v2 envelope"},
		{name: "no provider name", value: append([]byte("k8s:enc:kms:v2::"), seeded...), wantErr: "without a provider name"},
		{name: "no colon after the name", value: []byte("k8s:enc:kms:v2:p"), wantErr: "without a provider name"},
		{name: "no keyID", value: append([]byte("k8s:enc:kms:v2:p:"), encryptedObject("", 1, nil, nil)...), wantErr: "names no keyID"},
		{name: "truncated", value: append([]byte("k8s:enc:kms:v2:p:"), seeded[:len(seeded)-9]...), wantErr: "provider p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEnvelope(tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseEnvelope = %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				if errors.Is(err, ErrNotKMSv2) != tc.notKMS {
					t.Fatalf("errors.Is(%v, ErrNotKMSv2) = %v, want %v", err, !tc.notKMS, tc.notKMS)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEnvelope: %v", err)
			}
			if got != tc.want {
				t.Fatalf("ParseEnvelope = %+v, want %+v", got, tc.want)
			}
		})
	}
}
