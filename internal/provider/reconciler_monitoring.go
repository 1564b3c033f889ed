package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
)

// reconcilerMonitoringModel is kmshealth_reconciler's monitoring: the
// PodMonitor, scraper identity and PrometheusRule of the reconciler
// (reconcilerinstall.Monitoring). It is not a pattern — nothing the
// reconciler keeps — so it is not among reconcilerPatternAttributes.
type reconcilerMonitoringModel struct {
	Monitoring types.Object `tfsdk:"monitoring"`
}

// monitoringToConfig reads the attribute (known values) into c.
func (m *reconcilerMonitoringModel) monitoringToConfig(ctx context.Context, c *reconcilerinstall.Config) diag.Diagnostics {
	labels, rules, ok, diags := monitoringValues(ctx, m.Monitoring)
	if ok {
		c.Monitoring = &reconcilerinstall.Monitoring{Labels: labels, Rules: rules}
	}
	return diags
}

// monitoringFromLive sets the attribute on import from what the cluster
// holds (nil: none).
func (m *reconcilerMonitoringModel) monitoringFromLive(ctx context.Context, got *reconcilerinstall.Monitoring) diag.Diagnostics {
	attrTypes := map[string]attr.Type{"labels": types.MapType{ElemType: types.StringType}, "rules": types.BoolType}
	if got == nil {
		m.Monitoring = types.ObjectNull(attrTypes)
		return nil
	}
	labels := types.MapNull(types.StringType)
	var diags diag.Diagnostics
	if len(got.Labels) > 0 {
		var d diag.Diagnostics
		labels, d = types.MapValueFrom(ctx, types.StringType, got.Labels)
		diags.Append(d...)
	}
	obj, d := types.ObjectValue(attrTypes, map[string]attr.Value{"labels": labels, "rules": types.BoolValue(got.Rules)})
	diags.Append(d...)
	m.Monitoring = obj
	return diags
}

// monitoringWarn warns at plan time when monitoring is set and the
// prometheus-operator CRDs are not served (nothing is written then).
func (r *reconcilerResource) monitoringWarn(ctx context.Context, plan *reconcilerModel, diags *diag.Diagnostics) {
	if plan.Monitoring.IsNull() || plan.Monitoring.IsUnknown() || !r.clients.Known() {
		return
	}
	if cl, ok := r.clients.installClients(diags); ok {
		monitoringAvailable(ctx, cl, diags)
	}
}

// monitoringUnlessUnserved drops want's monitoring when the
// prometheus-operator CRDs are not served: its objects cannot exist then,
// which is not drift (Read; the plan warns instead).
func monitoringUnlessUnserved(ctx context.Context, cl install.Clients, want *reconcilerinstall.Config) {
	if want.Monitoring == nil {
		return
	}
	if ok, err := install.MonitoringAvailable(ctx, cl); err == nil && !ok {
		want.Monitoring = nil
	}
}

// monitoringToWrite drops c's monitoring, with a warning, when the
// prometheus-operator CRDs are not served: there is nothing to write it to,
// and the next refresh sees it missing once there is.
func monitoringToWrite(ctx context.Context, cl install.Clients, c *reconcilerinstall.Config, diags *diag.Diagnostics) {
	if c.Monitoring != nil && !monitoringAvailable(ctx, cl, diags) {
		c.Monitoring = nil
	}
}
