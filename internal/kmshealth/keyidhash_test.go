package kmshealth

import (
	"strings"
	"testing"
)

func TestKeyIDHash(t *testing.T) {
	tests := []struct {
		keyID, want, wantErr string
	}{
		// Expected values from `printf %s <key id> | sha256sum`.
		{keyID: "1", want: "sha256:6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"},
		{keyID: "kek-2026-11", want: "sha256:3689fef6122471554fb2d7af934bd6581415d770bd7d2065c3596e62a3cd5a07"},
		{keyID: strings.Repeat("k", MaxKEKIDBytes), want: "sha256:fb236ae29378d0cf16cdc6b4b5b9f82d6642514a61b60542efd33641eab2662d"},
		{keyID: "", wantErr: "the key ID is empty"},
		{keyID: strings.Repeat("k", MaxKEKIDBytes+1), wantErr: "1025 bytes, more than the 1024"},
	}
	for _, tt := range tests {
		got, err := KeyIDHash(tt.keyID)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("KeyIDHash(%d bytes) = %q, %v; want an error containing %q", len(tt.keyID), got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("KeyIDHash(%.20q) = %q, %v; want %s", tt.keyID, got, err, tt.want)
		}
	}
}
