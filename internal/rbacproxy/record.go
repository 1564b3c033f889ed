package rbacproxy

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// RecordVersion is the version of the record's encoding.
const RecordVersion = 1

// record is what RecordKey holds: the defaulted Config, as JSON. It is
// what the reconciler keeps true; labels and annotations on the workload
// are never the only record (a kubectl replace drops them).
type record struct {
	Version int    `json:"version"`
	Config  Config `json:"config"`
}

// EncodeRecord is the record of c (after Defaulted): {"version":1,
// "config":{...}} with Config's JSON names, stable for equal Configs.
func (c Config) EncodeRecord() ([]byte, error) {
	data, err := json.Marshal(record{Version: RecordVersion, Config: c.Defaulted()})
	if err != nil {
		return nil, fmt.Errorf("encode the rbac proxy record of %s: %w", c.Target, err)
	}
	return data, nil
}

// DecodeRecord reads the Config back from a config ConfigMap of ours
// (labelled ManagedByLabel=ManagedByValue and ForLabel). It refuses
// records it does not fully understand (another version, unknown fields:
// a skewed kmshealth), and records that no longer validate, rather than
// re-inject a sidecar that differs from what the user asked for.
func DecodeRecord(cm *corev1.ConfigMap) (Config, error) {
	where := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	if cm.Labels[ManagedByLabel] != ManagedByValue || cm.Labels[ForLabel] == "" {
		return Config{}, fmt.Errorf("%s is not an rbac proxy record of kmshealth (labels %s=%s and %s): leave it alone", where, ManagedByLabel, ManagedByValue, ForLabel)
	}
	raw, ok := cm.Data[RecordKey]
	if !ok {
		return Config{}, fmt.Errorf("%s has no %q: re-apply the kmshealth_rbac_proxy_sidecar resource to rewrite it", where, RecordKey)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var r record
	if err := dec.Decode(&r); err != nil {
		return Config{}, fmt.Errorf("%s: %q does not decode (%w): it was edited, or written by another kmshealth version; re-apply the kmshealth_rbac_proxy_sidecar resource", where, RecordKey, err)
	}
	if r.Version != RecordVersion {
		return Config{}, fmt.Errorf("%s: record version %d, this kmshealth reads %d: run the reconciler of the provider's version", where, r.Version, RecordVersion)
	}
	c := r.Config
	if c.Target.Namespace != cm.Namespace || ObjectName(c.Target) != cm.Name {
		return Config{}, fmt.Errorf("%s records %s, which is not the workload it is named for: delete it, or re-apply the kmshealth_rbac_proxy_sidecar resource", where, c.Target)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: the recorded configuration is invalid: %w", where, err)
	}
	return c, nil
}
