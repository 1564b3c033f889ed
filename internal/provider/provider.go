// Package provider is the Terraform layer: schemas, models and glue over the
// internal/<concern> packages that hold the logic.
package provider

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// TypeName is the provider's type name, the prefix of every resource.
const TypeName = "kmshealth"

var _ provider.Provider = (*kmshealthProvider)(nil)

type kmshealthProvider struct {
	version string
}

// New returns a provider factory for providerserver.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &kmshealthProvider{version: version} }
}

type providerModel struct {
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate    types.String `tfsdk:"client_certificate"`
	ClientKey            types.String `tfsdk:"client_key"`
	Insecure             types.Bool   `tfsdk:"insecure"`
	TLSServerName        types.String `tfsdk:"tls_server_name"`
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigPaths          types.List   `tfsdk:"config_paths"`
	ConfigContext        types.String `tfsdk:"config_context"`
	Exec                 *execModel   `tfsdk:"exec"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

func (p *kmshealthProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = TypeName
	resp.Version = p.version
}

func (p *kmshealthProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Hardens a Kubernetes control plane: APIService caBundles that cannot drift, " +
			"and the in-cluster parts that keep them true between applies. The connection settings are " +
			"those of the `hashicorp/kubernetes` provider (same names, same `KUBE_*` environment variables), " +
			"so a provider block can be copied over. Nothing connects until a resource needs the cluster, and " +
			"an empty configuration is an error, never a silent fallback to localhost.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "URL of the Kubernetes API server, e.g. `https://10.0.0.1:6443` (`https://` is assumed when no scheme is given). Environment: `KUBE_HOST`.",
			},
			"token": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Bearer token for the API server. Environment: `KUBE_TOKEN`.",
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM CA certificate(s) that sign the API server's serving certificate. Environment: `KUBE_CLUSTER_CA_CERT_DATA`.",
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM client certificate for TLS client authentication; set with `client_key`. Environment: `KUBE_CLIENT_CERT_DATA`.",
			},
			"client_key": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "PEM private key of `client_certificate`. Environment: `KUBE_CLIENT_KEY_DATA`.",
			},
			"insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API server's certificate. Only for throw-away clusters; cannot be combined with `cluster_ca_certificate`. Environment: `KUBE_INSECURE`.",
			},
			"tls_server_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Server name to verify the API server's certificate against, when it differs from the host in `host`. Environment: `KUBE_TLS_SERVER_NAME`.",
			},
			"config_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path to a kubeconfig file (`~/` is expanded). Conflicts with `config_paths`. Environment: `KUBE_CONFIG_PATH`. No kubeconfig is read unless a path is configured.",
			},
			"config_paths": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Kubeconfig files merged in order, as in `KUBECONFIG`. Conflicts with `config_path`. Environment: `KUBE_CONFIG_PATHS` (path-list separated).",
			},
			"config_context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Context to use from the kubeconfig instead of its current context. Environment: `KUBE_CTX`.",
			},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "A client-go credential plugin that prints an `ExecCredential`, e.g. `aws eks get-token`. It never prompts.",
				Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{Optional: true, MarkdownDescription: "`apiVersion` of the ExecCredential the plugin prints, e.g. `client.authentication.k8s.io/v1`."},
					"command":     schema.StringAttribute{Optional: true, MarkdownDescription: "Command to run (looked up in `PATH`)."},
					"args":        schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments to the command."},
					"env":         schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Extra environment variables for the command."},
				},
			},
		},
	}
}

func (p *kmshealthProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !req.Config.Raw.IsFullyKnown() {
		// Values from resources not yet created: nothing can be read now.
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
		}
		data := &Clients{unknown: true, Version: p.version}
		resp.ResourceData, resp.DataSourceData = data, data
		return
	}
	cfg, diags := m.kubeConfig(ctx)
	resp.Diagnostics.Append(diags...)
	env, err := kube.FromEnv(os.Getenv)
	if err != nil {
		resp.Diagnostics.AddError("Invalid KUBE_* environment variable", err.Error())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	merged := cfg.Merge(env)
	if !m.Insecure.IsNull() {
		merged.Insecure = m.Insecure.ValueBool() // an explicit false beats KUBE_INSECURE=true
	}
	data := &Clients{lazy: kube.NewLazy(merged, "terraform-provider-kmshealth/"+p.version), Version: p.version}
	resp.ResourceData, resp.DataSourceData = data, data
}

func (m providerModel) kubeConfig(ctx context.Context) (kube.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	c := kube.Config{
		Host:                 m.Host.ValueString(),
		Token:                m.Token.ValueString(),
		ClusterCACertificate: m.ClusterCACertificate.ValueString(),
		ClientCertificate:    m.ClientCertificate.ValueString(),
		ClientKey:            m.ClientKey.ValueString(),
		Insecure:             m.Insecure.ValueBool(),
		TLSServerName:        m.TLSServerName.ValueString(),
		ConfigPath:           m.ConfigPath.ValueString(),
		ConfigContext:        m.ConfigContext.ValueString(),
	}
	if !m.ConfigPaths.IsNull() {
		diags.Append(m.ConfigPaths.ElementsAs(ctx, &c.ConfigPaths, false)...)
	}
	if m.Exec != nil && !m.Exec.Command.IsNull() {
		e := &kube.Exec{APIVersion: m.Exec.APIVersion.ValueString(), Command: m.Exec.Command.ValueString()}
		if !m.Exec.Args.IsNull() {
			diags.Append(m.Exec.Args.ElementsAs(ctx, &e.Args, false)...)
		}
		if !m.Exec.Env.IsNull() {
			diags.Append(m.Exec.Env.ElementsAs(ctx, &e.Env, false)...)
		}
		c.Exec = e
	}
	return c, diags
}

func (p *kmshealthProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewAPIServiceCABundleResource, NewReconcilerResource, NewReporterResource}
}

func (p *kmshealthProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewKMSPluginHealthDataSource}
}

// Clients is the provider data handed to resources: Kubernetes clients
// built on first use, so a plan that needs no cluster never connects.
type Clients struct {
	// Version is the provider's version: the tag of the in-cluster image.
	Version string

	unknown bool // provider configuration not known yet (plan only)
	lazy    *kube.Lazy

	once       sync.Once
	core       kubernetes.Interface
	aggregator aggregator.Interface
	dynamic    dynamic.Interface
	err        error
}

// ErrConfigUnknown is returned while the provider configuration depends on
// values known only after apply.
var ErrConfigUnknown = errors.New("the kmshealth provider configuration depends on values not known until apply")

// Known reports whether the cluster can be reached during this plan.
func (c *Clients) Known() bool { return c != nil && !c.unknown }

func (c *Clients) get() error {
	if c == nil {
		return errors.New("the kmshealth provider is not configured")
	}
	if c.unknown {
		return ErrConfigUnknown
	}
	c.once.Do(func() {
		cfg, err := c.lazy.RESTConfig()
		if err != nil {
			c.err = err
			return
		}
		if c.core, err = kubernetes.NewForConfig(cfg); err != nil {
			c.err = err
			return
		}
		if c.aggregator, err = aggregator.NewForConfig(cfg); err != nil {
			c.err = err
			return
		}
		c.dynamic, c.err = dynamic.NewForConfig(cfg)
	})
	return c.err
}

// Core returns the core Kubernetes clientset.
func (c *Clients) Core() (kubernetes.Interface, error) {
	if err := c.get(); err != nil {
		return nil, err
	}
	return c.core, nil
}

// Aggregator returns the kube-aggregator clientset (APIServices).
func (c *Clients) Aggregator() (aggregator.Interface, error) {
	if err := c.get(); err != nil {
		return nil, err
	}
	return c.aggregator, nil
}

// Dynamic returns a dynamic client, for custom resources and targets known
// only by group/version/resource.
func (c *Clients) Dynamic() (dynamic.Interface, error) {
	if err := c.get(); err != nil {
		return nil, err
	}
	return c.dynamic, nil
}

// coreAndDynamic returns the clientset and the dynamic client, or adds the
// connection error to diags and reports false.
func (c *Clients) coreAndDynamic(diags *diag.Diagnostics) (kubernetes.Interface, dynamic.Interface, bool) {
	if err := c.get(); err != nil {
		connectionError(diags, err)
		return nil, nil, false
	}
	return c.core, c.dynamic, true
}

// installClients returns the clients of the installers, or adds the
// connection error to diags and reports false.
func (c *Clients) installClients(diags *diag.Diagnostics) (install.Clients, bool) {
	core, dyn, ok := c.coreAndDynamic(diags)
	return install.Clients{Core: core, Dynamic: dyn}, ok
}

// configure is the shared body of every resource's Configure.
func configure(providerData any, diags *diag.Diagnostics) *Clients {
	if providerData == nil {
		return nil
	}
	c, ok := providerData.(*Clients)
	if !ok {
		diags.AddError("Unexpected provider data", "This is a bug in the kmshealth provider: please report it.")
	}
	return c
}

// connectionError is the diagnostic for a cluster that cannot be reached.
func connectionError(diags *diag.Diagnostics, err error) {
	diags.AddError("Cannot connect to Kubernetes", err.Error())
}
