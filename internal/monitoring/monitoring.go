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

// RuleGroups returns the rule groups as a PrometheusRule's spec.groups
// holds them.
func RuleGroups() ([]any, error) {
	var f struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(Rules, &f); err != nil {
		return nil, fmt.Errorf("monitoring: decode the embedded rules: %w", err)
	}
	return f.Groups, nil
}
