package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/monitoring"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
)

// monitoringModel is the optional monitoring attribute.
type monitoringModel struct {
	Labels types.Map  `tfsdk:"labels"`
	Rules  types.Bool `tfsdk:"rules"`
}

// monitoringText is what a component's monitoring attribute says about
// its PodMonitor and its rules.
type monitoringText struct {
	component  string // "reporters": whose pods the PodMonitor scrapes
	podMonitor string // after "scrapes every pod's secured /metrics with that token"
	rules      string // the rules attribute's description
}

// reporterMonitoring and reconcilerMonitoring are the two components'
// texts: each installs its own group of internal/monitoring's rules.
var (
	reporterMonitoring = monitoringText{
		component:  "reporters",
		podMonitor: " (and labels the series with the pod's `node`)",
		rules: "Install the KMS health alerts (group `" + monitoring.GroupKMS + "`: plugins degraded, a node's report stale, " +
			"plugins disagreeing on the key) as a PrometheusRule. Default `true`. They read the gauges of the reconciler's KMS " +
			"aggregator, so scrape the reconciler too (`kmshealth_reconciler`'s `monitoring`); the reconciler's own alerts are " +
			"its `monitoring.rules`, so no alert is defined twice when both are on.",
	}
	reconcilerMonitoring = monitoringText{
		component: "reconciler",
		podMonitor: " (no `node` relabel: the KMS aggregator's series carry their own `node` label; the scraper's token is what " +
			"the reconciler's `/metrics` authorizes, by a SubjectAccessReview)",
		rules: "Install the reconciler's alerts (group `" + monitoring.GroupReconciler + "`: a caBundle expiring within 30 and " +
			"within 7 days, a restore storm, no reconciler leading, reconcile errors) as a PrometheusRule. Default `true`. The KMS " +
			"health alerts are `kmshealth_reporter`'s `monitoring.rules`, so no alert is defined twice when both are on.",
	}
)

// monitoringAttribute is a component's monitoring: the prometheus-operator
// objects, written only while their CRDs are served.
func monitoringAttribute(text monitoringText) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Install what prometheus-operator needs to scrape and alert on the " + text.component + ": a ServiceAccount " +
			"`<name>-metrics` whose only right is `get` on the `/metrics` non-resource URL, its token Secret (a long-lived " +
			"token, since a PodMonitor takes its credentials from a Secret; it can read `/metrics` and nothing else), a PodMonitor " +
			"`<name>-metrics` that scrapes every pod's secured `/metrics` with that token" + text.podMonitor + ", and, with `rules`, " +
			"the alert rules as a PrometheusRule `<name>` (see the runbooks guide). " +
			"When the API server serves no `monitoring.coreos.com/v1` PodMonitors and PrometheusRules, plan warns and apply " +
			"writes none of them; once the CRDs exist, the next plan shows the objects missing and apply writes them. " +
			"Unset (the default): none, and removing it deletes them.",
		Attributes: map[string]schema.Attribute{
			"labels": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels for the PodMonitor and the PrometheusRule, to match your Prometheus' " +
					"`podMonitorSelector` and `ruleSelector` (e.g. `{ release = \"kube-prometheus-stack\" }`).",
				Validators: []validator.Map{labelMap{}},
			},
			"rules": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: text.rules,
			},
		},
	}
}

// monitoringValues converts the attribute: its labels and rules; ok is
// false when it is unset or unknown.
func monitoringValues(ctx context.Context, v types.Object) (labels map[string]string, rules, ok bool, diags diag.Diagnostics) {
	if v.IsNull() || v.IsUnknown() {
		return nil, false, false, nil
	}
	var m monitoringModel
	diags = v.As(ctx, &m, basetypes.ObjectAsOptions{})
	if !m.Labels.IsNull() && !m.Labels.IsUnknown() {
		diags.Append(m.Labels.ElementsAs(ctx, &labels, false)...)
	}
	return labels, m.Rules.IsNull() || m.Rules.ValueBool(), true, diags
}

// monitoringConfig converts kmshealth_reporter's attribute; nil when unset
// or unknown.
func monitoringConfig(ctx context.Context, v types.Object) (*reporterinstall.Monitoring, diag.Diagnostics) {
	labels, rules, ok, diags := monitoringValues(ctx, v)
	if !ok {
		return nil, diags
	}
	return &reporterinstall.Monitoring{Labels: labels, Rules: rules}, diags
}

// monitoringAvailable reports whether the prometheus-operator CRDs are
// served, with a warning when they are not (monitoring is then not
// written).
func monitoringAvailable(ctx context.Context, cl install.Clients, diags *diag.Diagnostics) bool {
	ok, err := install.MonitoringAvailable(ctx, cl)
	if err != nil {
		diags.AddAttributeWarning(path.Root("monitoring"), "Cannot tell whether prometheus-operator is installed",
			fmt.Sprintf("%v. No monitoring object is written now; apply again once discovery answers.", err))
		return false
	}
	if !ok {
		diags.AddAttributeWarning(path.Root("monitoring"), "prometheus-operator is not installed",
			"The API server serves no monitoring.coreos.com/v1 PodMonitors and PrometheusRules, so no monitoring object is written. "+
				"Install prometheus-operator (its CRDs) and apply again, or remove monitoring. The alert rules and the Grafana "+
				"dashboard are also published with the runbooks guide: "+monitoring.RunbookURL+".")
	}
	return ok
}
