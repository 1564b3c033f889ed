// Package reencrypt carries a KMS key rotation through: it rewrites every
// object of the encrypted resources so each is stored under the current key
// (through StorageVersionMigration where the cluster runs it, else by a
// resumable rewrite of its own), and records each run in a ConfigMap of
// ours, which the key-usage check reads to say when an old key may be
// retired.
package reencrypt

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RecordKey is the ConfigMap data key holding a run's Record as JSON.
const RecordKey = "run.json"

// Paths a run can take.
const (
	PathStorageVersionMigration = "StorageVersionMigration"
	PathRewrite                 = "Rewrite"
)

// RecordName is the name of the ConfigMap recording the run of the
// re-encryption named name.
func RecordName(name string) string { return "kmshealth-reencryption-" + name }

// Record is one re-encryption run as kept in its ConfigMap.
type Record struct {
	// KeyID is the KMS key ID (the plugin's StatusResponse.key_id, the
	// kekID of our reports) the run re-encrypts under: its trigger.
	KeyID string `json:"keyID"`
	// Resources are the resources the run rewrites, as "secrets" or
	// "<resource>.<group>".
	Resources []string `json:"resources"`
	// Path is PathStorageVersionMigration or PathRewrite.
	Path      string      `json:"path"`
	StartedAt metav1.Time `json:"startedAt"`
	// FinishedAt is set once every resource has been rewritten completely;
	// a run without it is unfinished (and resumes on the next apply).
	FinishedAt *metav1.Time       `json:"finishedAt,omitempty"`
	Progress   []ResourceProgress `json:"progress,omitempty"`
	// Method, Concurrency and HealthTarget are the settings the run was
	// started or last resumed with, so an import reads them back.
	Method       string `json:"method,omitempty"`
	Concurrency  int    `json:"concurrency,omitempty"`
	HealthTarget string `json:"healthTarget,omitempty"`
}

// ResourceProgress is how far a run got through one resource.
type ResourceProgress struct {
	Resource string `json:"resource"`
	// Continue is the LIST continue token of the next page to rewrite
	// (PathRewrite), empty before the first page and once complete.
	Continue string `json:"continue,omitempty"`
	Done     int64  `json:"done"`
	Complete bool   `json:"complete"`
	// Total is how many objects the resource had when the run (or its
	// latest resumption) counted them; 0 when not counted.
	Total int64 `json:"total,omitempty"`
}

// Complete reports whether the run finished every resource.
func (r *Record) Complete() bool { return r != nil && r.FinishedAt != nil }

// ReadRecord reads the run of the re-encryption name in namespace; it
// returns nil and no error when there is none.
func ReadRecord(ctx context.Context, c kubernetes.Interface, namespace, name string) (*Record, error) {
	cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, RecordName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read re-encryption record %s/%s: %w", namespace, RecordName(name), err)
	}
	return DecodeRecord(cm.Data[RecordKey])
}

// DecodeRecord parses a record's JSON.
func DecodeRecord(s string) (*Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("decode re-encryption record: %w", err)
	}
	return &r, nil
}
