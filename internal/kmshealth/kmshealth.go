// Package kmshealth is the KMS v2 plugin health logic shared by the `report`
// mode (probe the local plugin sockets, build and write this node's
// condition), the aggregator in `reconcile` mode (roll the nodes up into
// KMSPluginsDegraded, clean up orphans) and the kmshealth_kms_plugin_health
// data source (parse and judge the conditions). The wire format is fixed by
// ARCHITECTURE.md, "KMS health wire format".
//
// Probing, building a condition and judging conditions are pure steps; only
// the functions in write.go talk to the API server.
package kmshealth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The KMSHealth custom resource that holds the conditions by default.
const (
	Group         = "kmshealth.io"
	Version       = "v1alpha1"
	Resource      = "kmshealths"
	Kind          = "KMSHealth"
	ListKind      = "KMSHealthList"
	Singular      = "kmshealth"
	CRDName       = Resource + "." + Group
	DefaultObject = "cluster"
)

// Condition types and reasons of the wire format.
const (
	// ReporterConditionPrefix + node name is each node's condition type,
	// owned by that node's reporter.
	ReporterConditionPrefix = "KMSHealthReporter_"
	// DegradedCondition is the aggregator's rollup, owned by the reconciler.
	DegradedCondition = "KMSPluginsDegraded"

	ReasonAsExpected = "AsExpected"
	ReasonUnhealthy  = "Unhealthy"
	ReasonError      = "Error"
	// Rollup-only reasons of KMSPluginsDegraded.
	ReasonStale   = "Stale"
	ReasonMissing = "Missing"
	ReasonInvalid = "InvalidReport"
)

// Probe timing defaults shared by the reporter flags, the kmshealth_reporter
// resource and the data source.
const (
	DefaultInterval     = 30 * time.Second
	MinInterval         = 5 * time.Second
	DefaultReadTimeout  = 5 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	// StalenessFactor × interval is how old lastChecked may be before a node
	// counts as stale.
	StalenessFactor = 4
	// MaxClockSkew is how far ahead of the reader's clock (and of the API
	// server's, which the reporter's admission policy enforces) a lastChecked
	// may be; a later one makes the report invalid, never fresh.
	MaxClockSkew = 5 * time.Minute
)

// ReporterConditionType is the condition type a node's reporter owns.
func ReporterConditionType(node string) string { return ReporterConditionPrefix + node }

// NodeFromConditionType returns the node a reporter condition type belongs
// to, and false for any other condition type.
func NodeFromConditionType(t string) (string, bool) {
	node, ok := strings.CutPrefix(t, ReporterConditionPrefix)
	return node, ok && node != ""
}

// ReporterFieldManager is the server-side apply field manager of a node's
// reporter: a stable, short name per node, so each reporter owns exactly its
// own list entry and two reporters never conflict.
func ReporterFieldManager(node string) string {
	sum := sha256.Sum256([]byte(node))
	return "kms-health-reporter-" + hex.EncodeToString(sum[:])[:16]
}

// ValidateNodeName checks a node name for use in a condition type: a DNS
// subdomain, as Node names are. Condition types allow at most 316 characters,
// which a 253-character name plus the prefix stays within.
func ValidateNodeName(node string) error {
	if msgs := validation.IsDNS1123Subdomain(node); len(msgs) > 0 {
		return fmt.Errorf("node name %q: %s", node, strings.Join(msgs, "; "))
	}
	return nil
}

// Target is the object whose status.conditions carry the health: by default
// the KMSHealth object "cluster", or any object with metav1.Condition
// conditions and a status subresource (e.g. an OpenShift operator CR).
type Target struct {
	Group    string
	Version  string
	Resource string
	Name     string
}

// DefaultTarget is kmshealth.io/v1alpha1/kmshealths/cluster.
func DefaultTarget() Target {
	return Target{Group: Group, Version: Version, Resource: Resource, Name: DefaultObject}
}

// ParseTarget parses "group/version/resource/name" (group empty for the
// core group, as in "/v1/namespaces/kube-system" — though cluster-scoped
// objects are the only ones supported).
func ParseTarget(s string) (Target, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return Target{}, fmt.Errorf("target %q: want group/version/resource/name, e.g. %s", s, DefaultTarget())
	}
	t := Target{Group: parts[0], Version: parts[1], Resource: parts[2], Name: parts[3]}
	return t, t.Validate()
}

// Validate checks each part of the target.
func (t Target) Validate() error {
	var errs []error
	if t.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(t.Group); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("group %q: %s", t.Group, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsDNS1123Label(t.Version); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("version %q: %s", t.Version, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Label(t.Resource); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("resource %q (plural, lower case): %s", t.Resource, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(t.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("name %q: %s", t.Name, strings.Join(msgs, "; ")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("target %s: %w", t, err)
	}
	return nil
}

// String is the group/version/resource/name form ParseTarget reads.
func (t Target) String() string {
	return t.Group + "/" + t.Version + "/" + t.Resource + "/" + t.Name
}

// GVR is the target's group, version and resource.
func (t Target) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
}

// IsDefault reports whether the target is the KMSHealth CRD's resource
// (whatever the object name).
func (t Target) IsDefault() bool {
	return t.Group == Group && t.Version == Version && t.Resource == Resource
}
