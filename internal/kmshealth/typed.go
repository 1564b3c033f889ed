package kmshealth

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// OpenShift's typed KMS health reports (openshift/api operator/v1
// types_kmsencryption.go, added by openshift/api#2881 and renamed to their
// final field names in commit 628227733dba): the operator CRs KubeAPIServer,
// OpenShiftAPIServer and Authentication carry, behind the KMSEncryption
// feature gate, status.encryptionStatus.healthReports, a list
// (listType=map, keys nodeName and keyID, at most 200 items) of
//
//	{nodeName, keyID, status: Healthy|Unhealthy|Error, lastCheckedTime, remoteKeyID, detail}
//
// openshift/library-go pkg/operator/encryption/kms/health writes them, one
// server-side apply per node and tick, each node under its own field
// manager, so every node owns exactly its own entries.

// ReportFormat is a wire format of the per-node health reports.
type ReportFormat string

// The report formats a reporter writes and the data source reads.
const (
	// FormatConditions is ours: one KMSHealthReporter_<node> condition per
	// node in status.conditions, its plugins as JSON in the message.
	FormatConditions ReportFormat = "conditions"
	// FormatOpenShiftTyped is OpenShift's: one
	// status.encryptionStatus.healthReports entry per node and plugin.
	FormatOpenShiftTyped ReportFormat = "openshift-typed"
	// FormatMixed is what a target carrying both formats was read as.
	FormatMixed ReportFormat = "mixed"
	// FormatNone is what a target carrying no report was read as.
	FormatNone ReportFormat = "none"
)

// WriteFormats are the formats a reporter can write, the default first.
var WriteFormats = []ReportFormat{FormatConditions, FormatOpenShiftTyped}

// ParseReportFormat checks a reporter's --report-format.
func ParseReportFormat(s string) (ReportFormat, error) {
	for _, f := range WriteFormats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%q is not a report format: use %q (KMSHealthReporter_<node> conditions, read by kmshealth) or %q (OpenShift's status.encryptionStatus.healthReports, for an operator.openshift.io/v1 target)",
		s, FormatConditions, FormatOpenShiftTyped)
}

// The typed statuses (PascalCase, an enum in the published schema).
const (
	TypedHealthy   = "Healthy"
	TypedUnhealthy = "Unhealthy"
	TypedError     = "Error"
)

// RemoteKeyIDUnknown is written as remoteKeyID when the plugin gave no
// key_id (an RPC error, or an unhealthy plugin without one): the published
// schema requires a non-empty remoteKeyID in every entry. It is read back
// as no kekID.
const RemoteKeyIDUnknown = "unknown"

// NoPluginKeyID is the keyID of the single Error entry a node writes when it
// found no plugin socket: the schema requires at least one entry, and a node
// without plugins must not look like no report at all.
const NoPluginKeyID = "none"

// Bounds of the published schema.
const (
	maxTypedDetail      = 1024
	maxTypedRemoteKeyID = 1024
)

var healthReportsPath = []string{"status", "encryptionStatus", "healthReports"}

var fromTyped = map[string]PluginStatus{TypedHealthy: StatusHealthy, TypedUnhealthy: StatusUnhealthy, TypedError: StatusError}

var toTyped = map[PluginStatus]string{StatusHealthy: TypedHealthy, StatusUnhealthy: TypedUnhealthy, StatusError: TypedError}

// TypedReports reads the target's status.encryptionStatus.healthReports,
// grouped per node; ok is false when the object carries none. An entry
// that breaks the format makes its node invalid (never silently healthy).
func TypedReports(obj *unstructured.Unstructured) (reports []NodeReport, ok bool) {
	raw, found, _ := unstructured.NestedSlice(obj.Object, healthReportsPath...)
	if !found || len(raw) == 0 {
		return nil, false
	}
	byNode := map[string]*NodeReport{}
	var order []string
	for i, r := range raw {
		m, _ := r.(map[string]any)
		node, _ := m["nodeName"].(string)
		if node == "" {
			node = fmt.Sprintf("<healthReports[%d] without nodeName>", i)
		}
		nr := byNode[node]
		if nr == nil {
			nr = &NodeReport{Node: node}
			byNode[node] = nr
			order = append(order, node)
		}
		p, err := typedPlugin(m)
		if err == nil {
			for _, q := range nr.Plugins {
				if q.KeyID == p.KeyID {
					err = fmt.Errorf("keyID %q appears twice", p.KeyID)
				}
			}
		}
		if err != nil {
			if nr.Err == nil {
				nr.Err = fmt.Errorf("unreadable healthReports[%d]: %w", i, err)
			}
			continue
		}
		nr.Plugins = append(nr.Plugins, p)
	}
	for _, node := range order {
		nr := byNode[node]
		sort.SliceStable(nr.Plugins, func(i, j int) bool { return keyIDLess(nr.Plugins[i].KeyID, nr.Plugins[j].KeyID) })
		nr.Status, _ = Verdict(nr.Plugins)
		reports = append(reports, *nr)
	}
	return reports, true
}

func typedPlugin(m map[string]any) (Plugin, error) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	p := Plugin{KeyID: str("keyID"), Detail: str("detail")}
	if p.KeyID == "" {
		return p, fmt.Errorf("keyID is missing")
	}
	st, ok := fromTyped[str("status")]
	if !ok {
		return p, fmt.Errorf("keyID %s: status %q, want %s, %s or %s", p.KeyID, str("status"), TypedHealthy, TypedUnhealthy, TypedError)
	}
	p.Status = st
	t, err := time.Parse(time.RFC3339, str("lastCheckedTime"))
	if err != nil {
		return p, fmt.Errorf("keyID %s: lastCheckedTime: %w", p.KeyID, err)
	}
	p.LastChecked = t
	if kek := str("remoteKeyID"); kek != RemoteKeyIDUnknown {
		p.KEKID = kek
	}
	return p, nil
}

// Reports reads every node's report on the target, in whichever format it
// carries, and says which it read. A node reported in both formats is
// invalid: two writers for one node cannot both be believed.
func Reports(obj *unstructured.Unstructured) ([]NodeReport, ReportFormat) {
	conds := ConditionReports(Conditions(obj))
	typed, hasTyped := TypedReports(obj)
	switch {
	case hasTyped && len(conds) == 0:
		return typed, FormatOpenShiftTyped
	case !hasTyped && len(conds) > 0:
		return conds, FormatConditions
	case !hasTyped:
		return nil, FormatNone
	}
	return mergeReports(conds, typed), FormatMixed
}

// mergeReports is the reports of both formats together; a node reported
// in both is invalid: two writers for one node cannot both be believed.
func mergeReports(conds, typed []NodeReport) []NodeReport {
	inConds := map[string]bool{}
	for _, c := range conds {
		inConds[c.Node] = true
	}
	out := slices.Clone(conds)
	for _, r := range typed {
		if !inConds[r.Node] {
			out = append(out, r)
			continue
		}
		for i := range out {
			if out[i].Node == r.Node {
				out[i] = NodeReport{Node: r.Node, Err: fmt.Errorf("reported both as condition %s and in status.encryptionStatus.healthReports: run one reporter per node, writing one --report-format", ReporterConditionType(r.Node))}
			}
		}
	}
	return out
}

// HealthReportEntries are a node's typed healthReports entries for its
// plugins, within the published schema's bounds; now dates the entry of a
// node without plugins.
func HealthReportEntries(node string, plugins []Plugin, now time.Time) []any {
	if len(plugins) == 0 {
		plugins = []Plugin{{KeyID: NoPluginKeyID, Status: StatusError, LastChecked: now, Detail: "the reporter found no KMS plugin socket"}}
	}
	out := make([]any, 0, len(plugins))
	for _, p := range plugins {
		kek := truncate(p.KEKID, maxTypedRemoteKeyID)
		if kek == "" {
			kek = RemoteKeyIDUnknown
		}
		e := map[string]any{
			"nodeName":        node,
			"keyID":           p.KeyID,
			"status":          toTyped[p.Status],
			"lastCheckedTime": p.LastChecked.UTC().Format(time.RFC3339),
			"remoteKeyID":     kek,
		}
		if d := truncate(p.Detail, maxTypedDetail); d != "" {
			e["detail"] = d
		}
		out = append(out, e)
	}
	return out
}

// ApplyHealthReports server-side applies the node's typed healthReports
// entries on the target's status as fieldManager (forcing): the entries the
// node applied before and no longer reports are removed, other nodes'
// entries and every other field are untouched.
func ApplyHealthReports(ctx context.Context, dyn dynamic.Interface, t Target, kind, node string, plugins []Plugin, now time.Time, fieldManager string) error {
	body := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schema.GroupVersion{Group: t.Group, Version: t.Version}.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": t.Name},
		"status":     map[string]any{"encryptionStatus": map[string]any{"healthReports": HealthReportEntries(node, plugins, now)}},
	}}
	_, err := dyn.Resource(t.GVR()).Apply(ctx, t.Name, body, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}, "status")
	if err != nil {
		return fmt.Errorf("apply healthReports of node %s on %s: %w", node, t, err)
	}
	return nil
}

// RemoveHealthReports removes the typed healthReports entries of the nodes
// drop selects from the target's status (obj is the target as last read),
// with a JSON patch that first tests each entry's position and nodeName,
// as RemoveConditions does for conditions. It returns the nodes whose
// entries it removed. The published schema wants at least one entry and
// encryptionStatus not empty, so removing the last entry removes
// healthReports (and an encryptionStatus left empty) instead.
func RemoveHealthReports(ctx context.Context, dyn dynamic.Interface, t Target, obj *unstructured.Unstructured, drop func(node string) bool) ([]string, error) {
	raw, _, _ := unstructured.NestedSlice(obj.Object, healthReportsPath...)
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	const list = "/status/encryptionStatus/healthReports"
	var tests, removes []op
	var removed []string
	for i := len(raw) - 1; i >= 0; i-- { // back to front: indices stay valid
		m, _ := raw[i].(map[string]any)
		node, _ := m["nodeName"].(string)
		if !drop(node) {
			continue
		}
		path := list + "/" + strconv.Itoa(i)
		tests = append(tests, op{Op: "test", Path: path + "/nodeName", Value: node})
		removes = append(removes, op{Op: "remove", Path: path})
		if !slices.Contains(removed, node) {
			removed = append(removed, node)
		}
	}
	if len(removes) == 0 {
		return nil, nil
	}
	var ops []op
	if len(removes) == len(raw) {
		// Every entry goes: the list goes, after the tests (the schema
		// allows no empty list, nor an empty encryptionStatus).
		whole := list
		if enc, _, _ := unstructured.NestedMap(obj.Object, "status", "encryptionStatus"); len(enc) == 1 {
			whole = "/status/encryptionStatus"
		}
		ops = append(tests, op{Op: "remove", Path: whole})
	} else {
		for i := range tests {
			ops = append(ops, tests[i], removes[i])
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	_, err = dyn.Resource(t.GVR()).Patch(ctx, t.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: AggregatorFieldManager}, "status")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove the healthReports entries of nodes %v from %s: %w", removed, t, err)
	}
	return removed, nil
}
