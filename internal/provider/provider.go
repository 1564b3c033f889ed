// Package provider is the Terraform layer: schemas, models and glue over the
// internal/<concern> packages that hold the logic.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/providervalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// TypeName is the provider's type name, the prefix of every resource.
const TypeName = "kmshealth"

var (
	_ provider.ProviderWithConfigValidators = (*kmshealthProvider)(nil)
	_ provider.ProviderWithFunctions        = (*kmshealthProvider)(nil)
)

type kmshealthProvider struct {
	version string
}

// New returns a provider factory for providerserver.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &kmshealthProvider{version: version} }
}

type providerModel struct {
	Host                  types.String       `tfsdk:"host"`
	Username              types.String       `tfsdk:"username"`
	Password              types.String       `tfsdk:"password"`
	Token                 types.String       `tfsdk:"token"`
	ClusterCACertificate  types.String       `tfsdk:"cluster_ca_certificate"`
	ClientCertificate     types.String       `tfsdk:"client_certificate"`
	ClientKey             types.String       `tfsdk:"client_key"`
	Insecure              types.Bool         `tfsdk:"insecure"`
	TLSServerName         types.String       `tfsdk:"tls_server_name"`
	ProxyURL              types.String       `tfsdk:"proxy_url"`
	ConfigPath            types.String       `tfsdk:"config_path"`
	ConfigPaths           types.List         `tfsdk:"config_paths"`
	ConfigContext         types.String       `tfsdk:"config_context"`
	ConfigContextAuthInfo types.String       `tfsdk:"config_context_auth_info"`
	ConfigContextCluster  types.String       `tfsdk:"config_context_cluster"`
	Exec                  []execModel        `tfsdk:"exec"`
	IgnoreAnnotations     types.List         `tfsdk:"ignore_annotations"`
	IgnoreLabels          types.List         `tfsdk:"ignore_labels"`
	Experiments           []experimentsModel `tfsdk:"experiments"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

// experimentsModel is hashicorp/kubernetes' deprecated experiments block,
// accepted so that a copied provider block plans.
type experimentsModel struct {
	ManifestResource types.Bool `tfsdk:"manifest_resource"`
}

func (p *kmshealthProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = TypeName
	resp.Version = p.version
}

func (p *kmshealthProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	env := func(attribute string) string { return " Environment: `" + kube.EnvVar(attribute) + "`." }
	noEffect := " Accepted so that a `hashicorp/kubernetes` provider block can be copied over; it has no effect here: " +
		"every kmshealth resource owns only its own fields by server-side apply, so other annotations and labels never show as drift."
	resp.Schema = schema.Schema{
		MarkdownDescription: "Hardens a Kubernetes control plane: APIService and webhook caBundles that cannot drift, " +
			"TLS security profiles handed to workloads without API calls at startup, kube-rbac-proxy in front of workloads' HTTP APIs, " +
			"and KMS v2 encryption plugin health on every control-plane node, read back to gate a key rotation at plan time; " +
			"with the in-cluster reconciler that keeps them true between applies. The connection settings are " +
			"those of the `hashicorp/kubernetes` provider (same names, same `KUBE_*` environment variables), " +
			"so a provider block can be copied over. Nothing connects until a resource needs the cluster. " +
			"With nothing configured, Terraform running in a pod uses the pod's ServiceAccount, as `hashicorp/kubernetes` does; " +
			"anywhere else an empty configuration is an error, never a silent fallback to localhost.",
		Attributes: map[string]schema.Attribute{
			"host": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "URL of the Kubernetes API server, e.g. `https://10.0.0.1:6443` (`https://` is assumed when no scheme is given). " +
					"When neither `host` nor `config_path`/`config_paths` (nor their variables) is set and Terraform runs in a pod, " +
					"the pod's `KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` and ServiceAccount are used." + env("host"),
			},
			"username": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "User name for HTTP basic authentication, with `password`. Kubernetes API servers dropped basic authentication in 1.19; it is kept for servers behind an authenticating proxy. Cannot be combined with `token`." + env("username"),
			},
			"password": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Password for HTTP basic authentication, with `username`." + env("password"),
			},
			"token": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Bearer token for the API server. In a pod with no `host` or kubeconfig, it replaces the pod's ServiceAccount token." + env("token"),
			},
			"cluster_ca_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM CA certificate(s) that sign the API server's serving certificate." + env("cluster_ca_certificate"),
			},
			"client_certificate": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM client certificate for TLS client authentication; set with `client_key`." + env("client_certificate"),
			},
			"client_key": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "PEM private key of `client_certificate`." + env("client_key"),
			},
			"insecure": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Skip verification of the API server's certificate. Only for throw-away clusters; cannot be combined with `cluster_ca_certificate`. An explicit `false` beats `KUBE_INSECURE=true`." + env("insecure"),
			},
			"tls_server_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Server name to verify the API server's certificate against, when it differs from the host in `host`." + env("tls_server_name"),
			},
			"proxy_url": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Proxy for every request to the API server: `http://`, `https://` or `socks5://` URL. " +
					"It overrides a `proxy-url` of the kubeconfig cluster (in `hashicorp/kubernetes` the kubeconfig's wins). " +
					"When unset, `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` apply." + env("proxy_url"),
			},
			"config_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path to a kubeconfig file (`~/` is expanded). Conflicts with `config_paths`. No kubeconfig is read unless a path is configured (`KUBECONFIG` is not)." + env("config_path"),
			},
			"config_paths": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Kubeconfig files merged in order, as in `KUBECONFIG`. Conflicts with `config_path`. Environment: `KUBE_CONFIG_PATHS` (separated by `:`, or `;` on Windows).",
			},
			"config_context": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Context to use from the kubeconfig instead of its current context." + env("config_context"),
			},
			"config_context_auth_info": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Kubeconfig user to use instead of the one the context names." + env("config_context_auth_info"),
			},
			"config_context_cluster": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Kubeconfig cluster to use instead of the one the context names." + env("config_context_cluster"),
			},
			"ignore_annotations": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Regular expressions of annotation keys `hashicorp/kubernetes` ignores when diffing." + noEffect,
			},
			"ignore_labels": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Regular expressions of label keys `hashicorp/kubernetes` ignores when diffing." + noEffect,
			},
		},
		Blocks: map[string]schema.Block{
			// A list of at most one, as in hashicorp/kubernetes: required
			// attributes of a single nested block would be required even
			// when the block is absent.
			"exec": schema.ListNestedBlock{
				MarkdownDescription: "A client-go credential plugin that prints an `ExecCredential`, e.g. `aws eks get-token`. It never prompts. " +
					"At most one; needs `api_version` and `command`.",
				Validators: []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "`apiVersion` of the ExecCredential the plugin prints: `client.authentication.k8s.io/v1` or `client.authentication.k8s.io/v1beta1`.",
						Validators:          []validator.String{execAPIVersion{}},
					},
					"command": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Command to run (looked up in `PATH`).",
						Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
					},
					"args": schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments to the command."},
					"env":  schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Extra environment variables for the command."},
				}},
			},
			"experiments": schema.ListNestedBlock{
				MarkdownDescription: "`hashicorp/kubernetes`' deprecated experiments block. Accepted so that a copied provider block plans; it has no effect here.",
				DeprecationMessage:  "The experiments block has no effect in the kmshealth provider (nor, since its manifest resource became permanent, in hashicorp/kubernetes): remove it.",
				Validators:          []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"manifest_resource": schema.BoolAttribute{Optional: true, MarkdownDescription: "No effect."},
				}},
			},
		},
	}
}

// ConfigValidators reject at plan time what hashicorp/kubernetes rejects too.
func (p *kmshealthProvider) ConfigValidators(context.Context) []provider.ConfigValidator {
	return []provider.ConfigValidator{
		providervalidator.Conflicting(path.MatchRoot("config_path"), path.MatchRoot("config_paths")),
	}
}

// execAPIVersion accepts the ExecCredential versions client-go reads.
type execAPIVersion struct{}

func (execAPIVersion) Description(context.Context) string {
	return "client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1"
}

func (v execAPIVersion) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (execAPIVersion) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	switch v := req.ConfigValue.ValueString(); v {
	case "client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1":
	case "client.authentication.k8s.io/v1alpha1":
		resp.Diagnostics.AddAttributeError(req.Path, "Unsupported exec api_version",
			"client.authentication.k8s.io/v1alpha1 was removed from client-go in Kubernetes 1.24. Set api_version to "+
				"client.authentication.k8s.io/v1beta1 or client.authentication.k8s.io/v1 (whichever your plugin prints; update the plugin if it prints neither).")
	default:
		resp.Diagnostics.AddAttributeError(req.Path, "Unknown exec api_version",
			fmt.Sprintf("%q is not an ExecCredential version. Set api_version to client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1, whichever your plugin prints.", v))
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
	data := &Clients{lazy: kube.NewLazy(cfg.Merge(env), "terraform-provider-kmshealth/"+p.version), Version: p.version}
	resp.ResourceData, resp.DataSourceData = data, data
}

func (m providerModel) kubeConfig(ctx context.Context) (kube.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	c := kube.Config{
		Host:                  m.Host.ValueString(),
		Username:              m.Username.ValueString(),
		Password:              m.Password.ValueString(),
		Token:                 m.Token.ValueString(),
		ClusterCACertificate:  m.ClusterCACertificate.ValueString(),
		ClientCertificate:     m.ClientCertificate.ValueString(),
		ClientKey:             m.ClientKey.ValueString(),
		Insecure:              m.Insecure.ValueBool(),
		InsecureSet:           !m.Insecure.IsNull(), // an explicit false beats KUBE_INSECURE=true
		TLSServerName:         m.TLSServerName.ValueString(),
		ProxyURL:              m.ProxyURL.ValueString(),
		ConfigPath:            m.ConfigPath.ValueString(),
		ConfigContext:         m.ConfigContext.ValueString(),
		ConfigContextAuthInfo: m.ConfigContextAuthInfo.ValueString(),
		ConfigContextCluster:  m.ConfigContextCluster.ValueString(),
	}
	if !m.ConfigPaths.IsNull() {
		diags.Append(m.ConfigPaths.ElementsAs(ctx, &c.ConfigPaths, false)...)
	}
	for _, x := range m.Exec { // at most one; api_version and command are required in it
		e := &kube.Exec{APIVersion: x.APIVersion.ValueString(), Command: x.Command.ValueString()}
		if !x.Args.IsNull() {
			diags.Append(x.Args.ElementsAs(ctx, &e.Args, false)...)
		}
		if !x.Env.IsNull() {
			diags.Append(x.Env.ElementsAs(ctx, &e.Env, false)...)
		}
		c.Exec = e
	}
	return c, diags
}

func (p *kmshealthProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewAPIServiceCABundleResource, NewReconcilerResource, NewReporterResource, NewTLSProfileConfigMapResource, NewRBACProxySidecarResource, NewWebhookCABundleResource, NewKMSReencryptionResource}
}

func (p *kmshealthProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewKMSPluginHealthDataSource, NewKMSKeyUsageDataSource}
}

// Functions are the provider functions: plan-time answers that need no
// cluster (Terraform 1.8 and later, OpenTofu 1.7 and later).
func (p *kmshealthProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{NewCertificatesFunction, NewTLSProfileFunction, NewKMSKeyIDHashFunction, NewCABundleFunction}
}

// Clients is the provider data handed to resources: Kubernetes clients
// built on first use, so a plan that needs no cluster never connects.
type Clients struct {
	// Version is the provider's version: the tag of the in-cluster image.
	Version string

	unknown bool // provider configuration not known yet (plan only)
	lazy    *kube.Lazy

	once       sync.Once
	conn       *kube.Connection
	core       kubernetes.Interface
	aggregator aggregator.Interface
	dynamic    dynamic.Interface
	extensions apiextensionsclient.Interface
	err        error

	// inline reads inline-bundle ConfigMaps on refresh: one LIST per
	// namespace per process; every ConfigMap write of the process turns
	// it off for that namespace (the transport tells it).
	inline cabundle.InlineReader
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
		c.err = c.build()
	})
	return c.err
}

// build makes the clients, each request logged under TF_LOG=DEBUG. Its
// errors are configuration errors: nothing has been sent yet.
func (c *Clients) build() error {
	conn, err := c.lazy.Connection()
	if err != nil {
		return &configError{err}
	}
	c.conn = conn
	cfg := rest.CopyConfig(conn.REST)
	cfg.Wrap(kube.LogRequests(logRequest))
	cfg.Wrap(c.inline.WatchWrites)
	if c.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return &configError{err}
	}
	if c.aggregator, err = aggregator.NewForConfig(cfg); err != nil {
		return &configError{err}
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return &configError{err}
	}
	if c.extensions, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return &configError{err}
	}
	return nil
}

// connection describes the connection in use, nil when there is none.
func (c *Clients) connection() *kube.Connection {
	if c.get() != nil {
		return nil
	}
	return c.conn
}

// logSubsystem is the tflog subsystem of the Kubernetes request log:
// TF_LOG=DEBUG (or TF_LOG_PROVIDER=DEBUG) shows it;
// TF_LOG_PROVIDER_KMSHEALTH_KUBERNETES sets its level apart, e.g. WARN to
// leave it out of a debug log.
const logSubsystem = "kubernetes"

// RequestLogLevelEnv sets the level of the Kubernetes request log apart.
const RequestLogLevelEnv = "TF_LOG_PROVIDER_KMSHEALTH_KUBERNETES"

// logRequest writes one entry of the request log with the request's
// context, which carries Terraform's logger. With the log's level OFF (the
// provider sets it so when no TF_LOG* variable asks for logs) it costs
// nothing: no subsystem logger is built for a request nobody reads.
func logRequest(ctx context.Context, msg string, fields map[string]any) {
	if strings.EqualFold(os.Getenv(RequestLogLevelEnv), "OFF") {
		return
	}
	ctx = tflog.NewSubsystem(ctx, logSubsystem, tflog.WithLevelFromEnv(RequestLogLevelEnv))
	tflog.SubsystemDebug(ctx, logSubsystem, msg, fields)
}

// inlineReader reads inline-bundle ConfigMaps for this provider process.
func (c *Clients) inlineReader() *cabundle.InlineReader {
	if c == nil {
		return nil
	}
	return &c.inline
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

// CABundle returns the clients of the caBundle injectables.
func (c *Clients) CABundle() (cabundle.Clients, error) {
	if err := c.get(); err != nil {
		return cabundle.Clients{}, err
	}
	return cabundle.Clients{Core: c.core, Aggregator: c.aggregator, Extensions: c.extensions}, nil
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

// connectionError is the diagnostic for clients that could not be built
// (or any other error that stopped a resource from using the cluster).
func connectionError(diags *diag.Diagnostics, err error) {
	diags.Append(diagnoseAPIError(nil, apiRequest{}, err))
}
