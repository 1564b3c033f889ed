package reporterinstall

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
)

// Monitoring is the opt-in prometheus-operator part of an installation: a
// PodMonitor that scrapes every reporter's secured /metrics with the token
// of a scraper ServiceAccount of its own (allowed get on /metrics, nothing
// else), and optionally kmshealth's KMS alert rules as a PrometheusRule.
// Written only while the prometheus-operator CRDs are served
// (install.MonitoringAvailable); the caller drops it, with a warning, otherwise.
type Monitoring struct {
	// Labels go on the PodMonitor and the PrometheusRule, for the
	// Prometheus' podMonitorSelector and ruleSelector.
	Labels map[string]string
	// Rules installs the KMS alert rules (internal/monitoring, group
	// kmshealth-kms) as a PrometheusRule named like the installation.
	Rules bool
}

// ComponentMonitoring labels the monitoring objects.
const ComponentMonitoring = "monitoring"

// ScraperName names the scraper's ServiceAccount, its token Secret (with
// the suffix -token) and the PodMonitor.
func (c Config) ScraperName() string { return c.Name + "-metrics" }

// ScraperClusterRoleName names the ClusterRole (and binding) that allows
// the scraper get on /metrics.
func (c Config) ScraperClusterRoleName() string { return c.ClusterRoleName() + ":metrics" }

// monitoringObjects are the monitoring objects in apply order; without
// c.Monitoring (by name, for Observe and Delete) their bodies are nil.
func monitoringObjects(c Config) ([]install.Object, error) {
	byName := c.Monitoring == nil
	labels := c.Labels(ComponentMonitoring)
	var monitorLabels map[string]string
	if !byName {
		monitorLabels = maps.Clone(c.Monitoring.Labels)
		if monitorLabels == nil {
			monitorLabels = map[string]string{}
		}
		maps.Copy(monitorLabels, labels)
	}
	body := func(b any) any {
		if byName {
			return nil
		}
		return b
	}
	sa := corev1ac.ServiceAccount(c.ScraperName(), c.Namespace).WithLabels(labels).WithAutomountServiceAccountToken(false)
	token := unstructuredObject("v1", "Secret", c.Namespace, c.ScraperName()+"-token", labels)
	token.SetAnnotations(map[string]string{corev1.ServiceAccountNameKey: c.ScraperName()})
	token.Object["type"] = string(corev1.SecretTypeServiceAccountToken)
	role := rbacv1ac.ClusterRole(c.ScraperClusterRoleName()).WithLabels(labels).
		WithRules(rbacv1ac.PolicyRule().WithNonResourceURLs("/metrics").WithVerbs("get"))
	binding := rbacv1ac.ClusterRoleBinding(c.ScraperClusterRoleName()).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(c.ScraperClusterRoleName())).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(c.ScraperName()).WithNamespace(c.Namespace))
	pm := unstructuredObject(install.PodMonitors.GVR.GroupVersion().String(), "PodMonitor", c.Namespace, c.ScraperName(), monitorLabels)
	// The per-node panels and alerts group by node.
	pm.Object["spec"] = monitoring.PodMonitorSpec(c.Namespace, c.SelectorLabels(), metricsPortName, c.ScraperName()+"-token", true)
	id := func(kind install.Kind, namespace, name string) install.ID {
		return install.ID{Kind: kind, Namespace: namespace, Name: name}
	}
	objs := []install.Object{
		{ID: id(install.ServiceAccounts, c.Namespace, c.ScraperName()), Body: body(sa)},
		{ID: id(install.Secrets, c.Namespace, c.ScraperName()+"-token"), Body: body(token)},
		{ID: id(install.ClusterRoles, "", c.ScraperClusterRoleName()), Body: body(role)},
		{ID: id(install.ClusterRoleBindings, "", c.ScraperClusterRoleName()), Body: body(binding)},
		{ID: id(install.PodMonitors, c.Namespace, c.ScraperName()), Body: body(pm), ForeignHint: "remove monitoring, or delete that PodMonitor"},
	}
	if byName || c.Monitoring.Rules {
		var rule *unstructured.Unstructured
		if !byName {
			// The KMS alerts only; kmshealth_reconciler.monitoring
			// installs the reconciler's.
			group, err := monitoring.RuleGroup(monitoring.GroupKMS)
			if err != nil {
				return nil, err
			}
			rule = unstructuredObject(install.PrometheusRules.GVR.GroupVersion().String(), "PrometheusRule", c.Namespace, c.Name, monitorLabels)
			rule.Object["spec"] = map[string]any{"groups": []any{group}}
		}
		objs = append(objs, install.Object{ID: id(install.PrometheusRules, c.Namespace, c.Name), Body: body(rule),
			ForeignHint: "set monitoring.rules = false, or delete that PrometheusRule"})
	}
	return objs, nil
}

func unstructuredObject(apiVersion, kind, namespace, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}
