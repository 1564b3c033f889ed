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

// monitoringAttribute is kmshealth_reporter's monitoring: the
// prometheus-operator objects, written only while their CRDs are served.
func monitoringAttribute(component string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Install what prometheus-operator needs to scrape and alert on the " + component + ": a ServiceAccount " +
			"`<name>-metrics` whose only right is `get` on the `/metrics` non-resource URL, its token Secret (a long-lived " +
			"token, since a PodMonitor takes its credentials from a Secret; it can read `/metrics` and nothing else), a PodMonitor " +
			"`<name>-metrics` that scrapes every pod's secured `/metrics` with that token (and labels the series with the " +
			"pod's `node`), and, with `rules`, kmshealth's alert rules as a PrometheusRule `<name>` (see the runbooks guide). " +
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
				MarkdownDescription: "Install the alert rules as a PrometheusRule. Default `true`. Install them once per " +
					"cluster: they cover the reconciler's series too.",
			},
		},
	}
}

// monitoringConfig converts the attribute; nil when unset or unknown.
func monitoringConfig(ctx context.Context, v types.Object) (*reporterinstall.Monitoring, diag.Diagnostics) {
	if v.IsNull() || v.IsUnknown() {
		return nil, nil
	}
	var m monitoringModel
	diags := v.As(ctx, &m, basetypes.ObjectAsOptions{})
	out := &reporterinstall.Monitoring{Rules: m.Rules.IsNull() || m.Rules.ValueBool()}
	if !m.Labels.IsNull() && !m.Labels.IsUnknown() {
		diags.Append(m.Labels.ElementsAs(ctx, &out.Labels, false)...)
	}
	return out, diags
}

// monitoringAvailable reports whether the prometheus-operator CRDs are
// served, with a warning when they are not (monitoring is then not
// written).
func monitoringAvailable(ctx context.Context, cl install.Clients, diags *diag.Diagnostics) bool {
	ok, err := reporterinstall.MonitoringAvailable(ctx, cl)
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
