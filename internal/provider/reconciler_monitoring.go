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
func (m *reconcilerMonitoringModel) monitoringFromLive(got *reconcilerinstall.Monitoring) diag.Diagnostics {
	attrTypes := map[string]attr.Type{"labels": types.MapType{ElemType: types.StringType}, "rules": types.BoolType}
	if got == nil {
		m.Monitoring = types.ObjectNull(attrTypes)
		return nil
	}
	labels := types.MapNull(types.StringType)
	var diags diag.Diagnostics
	if len(got.Labels) > 0 {
		var d diag.Diagnostics
		labels, d = types.MapValueFrom(context.Background(), types.StringType, got.Labels)
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

// monitoringServed drops c's monitoring when the prometheus-operator CRDs
// are not served: without them its objects cannot exist, which is neither
// drift (Read) nor something to write (apply, which warns).
func monitoringServed(ctx context.Context, cl install.Clients, c *reconcilerinstall.Config, diags *diag.Diagnostics) {
	if c.Monitoring == nil {
		return
	}
	if diags == nil {
		if ok, err := reconcilerinstall.MonitoringAvailable(ctx, cl); err == nil && !ok {
			c.Monitoring = nil
		}
		return
	}
	if !monitoringAvailable(ctx, cl, diags) {
		c.Monitoring = nil // nothing to write it to; the next refresh sees it missing once it can be
	}
}
