package reconcilerinstall

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
)

// Monitoring is the opt-in prometheus-operator part of an installation: a
// PodMonitor that scrapes the reconcilers' secured /metrics with the token
// of a scraper ServiceAccount of its own (allowed get on /metrics, nothing
// else), and optionally the reconciler's alert rules (group
// kmshealth-reconciler of internal/monitoring) as a PrometheusRule.
// Written only while the prometheus-operator CRDs are served
// (install.MonitoringAvailable); the caller drops it, with a warning, otherwise.
type Monitoring struct {
	// Labels go on the PodMonitor and the PrometheusRule, for the
	// Prometheus' podMonitorSelector and ruleSelector.
	Labels map[string]string
	// Rules installs the reconciler's alert rules as a PrometheusRule
	// named like the installation.
	Rules bool
}

// ComponentMonitoring labels the monitoring objects.
const ComponentMonitoring = "monitoring"

// ScraperName names the scraper's ServiceAccount, its token Secret (with
// the suffix -token) and the PodMonitor. It is the metrics Service's name
// too; the kinds differ.
func (c Config) ScraperName() string { return c.Name + metricsSuffix }

// ScraperClusterRoleName names the ClusterRole (and binding) that allows
// the scraper get on /metrics.
func (c Config) ScraperClusterRoleName() string { return c.ClusterRoleName() + ":metrics" }

// validateMonitoring checks the monitoring labels.
func (c Config) validateMonitoring() []error {
	if c.Monitoring == nil {
		return nil
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(c.Monitoring.Labels)) {
		v := c.Monitoring.Labels[k]
		for _, m := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("monitoring.labels: key %q: %s", k, m))
		}
		for _, m := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("monitoring.labels[%q]: value %q: %s", k, v, m))
		}
	}
	return errs
}

// monitoringObjects are the monitoring objects in apply order; without
// c.Monitoring (by name, for Observe and Delete) their bodies are nil.
func monitoringObjects(c Config) []install.Object {
	byName := c.Monitoring == nil
	id := func(kind install.Kind, namespace, name string) install.ID {
		return install.ID{Kind: kind, Namespace: namespace, Name: name}
	}
	tokenName := c.ScraperName() + "-token"
	objs := []install.Object{
		{ID: id(install.ServiceAccounts, c.Namespace, c.ScraperName())},
		{ID: id(install.Secrets, c.Namespace, tokenName)},
		{ID: id(install.ClusterRoles, "", c.ScraperClusterRoleName())},
		{ID: id(install.ClusterRoleBindings, "", c.ScraperClusterRoleName())},
		{ID: id(install.PodMonitors, c.Namespace, c.ScraperName()), ForeignHint: "remove monitoring, or delete that PodMonitor"},
	}
	rule := install.Object{ID: id(install.PrometheusRules, c.Namespace, c.Name), ForeignHint: "set monitoring.rules = false, or delete that PrometheusRule"}
	if byName {
		return append(objs, rule)
	}

	labels := c.Labels(ComponentMonitoring)
	monitorLabels := maps.Clone(c.Monitoring.Labels)
	if monitorLabels == nil {
		monitorLabels = map[string]string{}
	}
	maps.Copy(monitorLabels, labels)

	objs[0].Body = corev1ac.ServiceAccount(c.ScraperName(), c.Namespace).WithLabels(labels).WithAutomountServiceAccountToken(false)
	token := unstructuredObject("v1", "Secret", c.Namespace, tokenName, labels)
	token.SetAnnotations(map[string]string{corev1.ServiceAccountNameKey: c.ScraperName()})
	token.Object["type"] = string(corev1.SecretTypeServiceAccountToken)
	objs[1].Body = token
	objs[2].Body = rbacv1ac.ClusterRole(c.ScraperClusterRoleName()).WithLabels(labels).
		WithRules(rbacv1ac.PolicyRule().WithNonResourceURLs("/metrics").WithVerbs("get"))
	objs[3].Body = rbacv1ac.ClusterRoleBinding(c.ScraperClusterRoleName()).WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(c.ScraperClusterRoleName())).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(c.ScraperName()).WithNamespace(c.Namespace))
	pm := unstructuredObject(install.PodMonitors.GVR.GroupVersion().String(), "PodMonitor", c.Namespace, c.ScraperName(), monitorLabels)
	// No node relabel: the KMS aggregator's series carry their own node.
	pm.Object["spec"] = monitoring.PodMonitorSpec(c.Namespace, c.SelectorLabels(), metricsPortName, tokenName, false)
	objs[4].Body = pm
	if !c.Monitoring.Rules {
		return objs // the PrometheusRule, if any, is a leftover of a swept kind
	}
	group, err := monitoring.RuleGroup(monitoring.GroupReconciler)
	if err != nil {
		panic("reconcilerinstall: " + err.Error()) // the embedded rules are tested
	}
	body := unstructuredObject(install.PrometheusRules.GVR.GroupVersion().String(), "PrometheusRule", c.Namespace, c.Name, monitorLabels)
	body.Object["spec"] = map[string]any{"groups": []any{group}}
	rule.Body = body
	return append(objs, rule)
}

// monitoringDeclaration declares only c's monitoring objects, by name.
func monitoringDeclaration(c Config) install.Declaration {
	mc := Config{Namespace: c.Namespace, Name: c.Name}
	return install.Declaration{Owner: owner(c.Namespace, c.Name), Namespace: c.Namespace, Objects: monitoringObjects(mc)}
}

// readMonitoring reads the monitoring back, for import: on when the
// PodMonitor is kmshealth's, with its labels less the installation's, and
// rules when the PrometheusRule is too.
func (l *Live) readMonitoring(c *Config) {
	pm := l.Get(install.ID{Kind: install.PodMonitors, Namespace: c.Namespace, Name: c.ScraperName()})
	if !l.Owns(pm, false) {
		return
	}
	m := &Monitoring{}
	own := c.Labels(ComponentMonitoring)
	for k, v := range pm.GetLabels() {
		if _, ok := own[k]; ok {
			continue
		}
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
	}
	m.Rules = l.Owns(l.Get(install.ID{Kind: install.PrometheusRules, Namespace: c.Namespace, Name: c.Name}), false)
	c.Monitoring = m
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
