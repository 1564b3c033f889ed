// Package monitoring holds what an operator of kmshealth alerts and looks
// at: the alert rules (the Prometheus rule-file format, which is also a
// prometheus-operator PrometheusRule's spec), the Grafana dashboard, and
// where the runbooks live. The files are embedded so the installers can
// write them into the cluster and the docs can point at one source.
package monitoring

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

// RunbookURL is the runbooks guide every alert's runbook_url points into.
const RunbookURL = "https://registry.terraform.io/providers/kmshealth/kmshealth/latest/docs/guides/runbooks"

// Rules is the alert rules file (groups: […]).
//
//go:embed rules.yaml
var Rules []byte

// Dashboard is the Grafana dashboard JSON (datasource variable
// "datasource").
//
//go:embed dashboard.json
var Dashboard []byte

// The rule groups of rules.yaml: one per component whose monitoring
// installs it, so no alert is defined twice when both are on.
const (
	// GroupKMS holds the KMS health alerts; kmshealth_reporter.monitoring
	// installs it. They read the reconciler's KMS aggregator gauges.
	GroupKMS = "kmshealth-kms"
	// GroupReconciler holds the reconciler's own alerts (caBundle expiry,
	// restore storm, leadership, reconcile errors);
	// kmshealth_reconciler.monitoring installs it.
	GroupReconciler = "kmshealth-reconciler"
)

// RuleGroup returns the rule group name as a PrometheusRule's
// spec.groups holds it.
func RuleGroup(name string) (any, error) {
	var f struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := yaml.Unmarshal(Rules, &f); err != nil {
		return nil, fmt.Errorf("monitoring: decode the embedded rules: %w", err)
	}
	for _, g := range f.Groups {
		if g["name"] == name {
			return g, nil
		}
	}
	return nil, fmt.Errorf("monitoring: the embedded rules have no group %q", name)
}

// PodMonitorSpec is the spec of a PodMonitor that scrapes the secured
// /metrics on the port named port of the pods selector selects in
// namespace, with the bearer token of the ServiceAccount token Secret
// tokenSecret. The pods serve a self-signed certificate; the token, not
// the certificate, is what the endpoint checks. nodeLabel labels the
// series with the pod's node (the reporters: one per node); leave it off
// for a component whose own series carry a node label, which the relabel
// would rename to exported_node.
func PodMonitorSpec(namespace string, selector map[string]string, port, tokenSecret string, nodeLabel bool) map[string]any {
	match := map[string]any{}
	for k, v := range selector {
		match[k] = v
	}
	endpoint := map[string]any{
		"port":      port,
		"scheme":    "https",
		"tlsConfig": map[string]any{"insecureSkipVerify": true},
		"authorization": map[string]any{"type": "Bearer",
			"credentials": map[string]any{"name": tokenSecret, "key": "token"}},
	}
	if nodeLabel {
		endpoint["relabelings"] = []any{map[string]any{
			"sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node", "action": "replace"}}
	}
	return map[string]any{
		"selector":            map[string]any{"matchLabels": match},
		"namespaceSelector":   map[string]any{"matchNames": []any{namespace}},
		"podMetricsEndpoints": []any{endpoint},
	}
}
