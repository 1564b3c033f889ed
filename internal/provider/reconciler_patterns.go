package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
)

// reconcilerPatternAttribute is one pattern's attribute on
// kmshealth_reconciler — what the reconciler keeps of that pattern — with
// its schema, its conversion into the installer's Config, its read-back
// from the cluster and its plan-time checks. Schema, ValidateConfig,
// ModifyPlan, config and Read loop over reconcilerPatternAttributes; each
// pattern declares its entry in its own file (reconciler_ca_bundles.go,
// reconciler_webhook_cabundles.go, reconciler_tls_profiles.go,
// reconciler_rbac_proxies.go), beside its model field, which
// reconcilerPatternsModel embeds.
type reconcilerPatternAttribute struct {
	name   string
	schema func() schema.Attribute
	// toConfig reads the attribute of m (known values) into c.
	toConfig func(ctx context.Context, m *reconcilerModel, c *reconcilerinstall.Config) diag.Diagnostics
	// fromLive sets the attribute of state from got, the installation as
	// the cluster holds it; want is what state configured (got on import),
	// so an equal value keeps the configuration's order and shape.
	fromLive func(ctx context.Context, state *reconcilerModel, got, want reconcilerinstall.Config) diag.Diagnostics
	// validate checks the configuration (ValidateConfig); may be nil.
	// Receiver first, so a method expression fits.
	validate func(m *reconcilerModel, ctx context.Context, diags *diag.Diagnostics) //nolint:revive // receiver first: a method expression

	// warn looks at the cluster when a plan changes the attribute
	// (ModifyPlan; state is nil on create); may be nil.
	warn func(r *reconcilerResource, ctx context.Context, plan, state *reconcilerModel, diags *diag.Diagnostics) //nolint:revive // receiver first: a method expression
}

// reconcilerPatternAttributes are the patterns' attributes of
// kmshealth_reconciler, one per entry of reconcilerinstall.Patterns that
// keeps something named by the user (the KMS aggregator's kms_target and
// kms_max_staleness are plain attributes).
var reconcilerPatternAttributes = []reconcilerPatternAttribute{
	caBundlesAttribute,
	webhookBundlesAttribute,
	tlsProfilesAttribute,
	rbacProxiesAttribute,
}

// reconcilerPatternsModel holds the attributes of
// reconcilerPatternAttributes, one embedded model per pattern.
type reconcilerPatternsModel struct {
	reconcilerCABundlesModel
	reconcilerWebhookBundlesModel
	reconcilerTLSProfilesModel
	reconcilerRBACProxiesModel
}
