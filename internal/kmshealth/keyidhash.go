package kmshealth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeyIDHashPrefix starts every key ID hash kube-apiserver reports.
const KeyIDHashPrefix = "sha256:"

// KeyIDHash is the value of the key_id_hash label kube-apiserver gives a KMS
// v2 key ID in its apiserver_envelope_encryption_key_id_hash_total,
// _key_id_hash_last_timestamp_seconds and
// _key_id_hash_status_last_timestamp_seconds metrics: "sha256:" followed by
// the lower-case hex SHA-256 of the key ID's bytes (k8s.io/apiserver
// pkg/storage/value/encrypt/envelope/metrics, getHash). It lets a key ID be
// matched with the metrics without putting the ID itself in a label.
//
// kube-apiserver refuses a key ID that is empty or longer than
// [MaxKEKIDBytes] bytes (envelope/kmsv2 ValidateKeyID), so it never reports
// a hash of one; such an ID is an error here too.
func KeyIDHash(keyID string) (string, error) {
	if keyID == "" {
		return "", errors.New("the key ID is empty: kube-apiserver refuses an empty KMS v2 key ID, so no metric carries its hash; give the key_id a plugin's Status returns")
	}
	if len(keyID) > MaxKEKIDBytes {
		return "", fmt.Errorf("the key ID is %d bytes, more than the %d kube-apiserver accepts from a KMS v2 plugin, so no metric carries its hash", len(keyID), MaxKEKIDBytes)
	}
	sum := sha256.Sum256([]byte(keyID))
	return KeyIDHashPrefix + hex.EncodeToString(sum[:]), nil
}
