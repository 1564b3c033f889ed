package provider

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// env is the package's one control plane (TestMain).
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, func(e *testenv.Env) { env = e })
}

// protoV6 serves the provider in-process to the Terraform or OpenTofu CLI
// that TF_ACC_TERRAFORM_PATH names.
var protoV6 = map[string]func() (tfprotov6.ProviderServer, error){
	"kmshealth": providerserver.NewProtocol6WithError(New("test")()),
}

// wrappedRE matches pattern across the CLIs' line wrapping: a space
// matches any whitespace.
func wrappedRE(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// literalRE matches the parts in order, literally, across CLI line wrapping.
func literalRE(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = regexp.QuoteMeta(p)
	}
	return wrappedRE("(?s)" + strings.Join(quoted, ".*"))
}

// outOfBand is a step that changes the cluster behind Terraform's back
// with change, and expects the next plan to show it.
//
// Its opposite, an empty plan of the config just applied, needs no step:
// after every apply step the framework (terraform-plugin-testing) plans,
// refreshes and plans again, and fails the step when either plan is not
// empty. A PlanOnly step of the same config right after it would run those
// six CLI commands a second time and assert nothing new.
func outOfBand(config string, change func()) resource.TestStep {
	return resource.TestStep{PreConfig: change, Config: config, PlanOnly: true, ExpectNonEmptyPlan: true}
}

// leftBehind is what a CheckDestroy found of an installation.
type leftBehind []string

// listed adds the n kind objects that a list by the installation's labels
// found, or the failed list.
func (l *leftBehind) listed(kind string, n int, err error) {
	if err != nil {
		*l = append(*l, fmt.Sprintf("list %s: %v", kind, err))
	} else if n > 0 {
		*l = append(*l, fmt.Sprintf("%d %s", n, kind))
	}
}

// named adds each object at one of the installation's names whose read
// (by what it is) did not answer NotFound.
func (l *leftBehind) named(reads map[string]error) {
	for what, err := range reads {
		if !apierrors.IsNotFound(err) {
			*l = append(*l, fmt.Sprintf("%s (err=%v)", what, err))
		}
	}
}

// err is nil when destroy of namespace/name left nothing behind.
func (l leftBehind) err(namespace, name string) error {
	if len(l) > 0 {
		return fmt.Errorf("left behind by destroy of %s/%s: %s", namespace, name, strings.Join(l, ", "))
	}
	return nil
}

// errOf keeps the error of a (value, error) call.
func errOf[T any](_ T, err error) error { return err }

// providerBlock points the provider at the test control plane.
func providerBlock() string {
	return fmt.Sprintf("provider \"kmshealth\" {\n  config_path = %q\n}\n", env.Kubeconfig)
}

// dynamicClient is a dynamic client of the test control plane.
func dynamicClient() dynamic.Interface {
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		panic(err) // a rest.Config that works for the clientset
	}
	return dyn
}

func aggregatorClient(t *testing.T) aggregator.Interface {
	t.Helper()
	c, err := aggregator.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// uniqueName returns a DNS-safe name that no other test in the package uses.
func uniqueName(t *testing.T) string {
	name := strings.ToLower(strings.NewReplacer("_", "", "/", "-").Replace(t.Name()))
	name = strings.TrimPrefix(name, "testacc")
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-")
}

type apiServiceOpts struct {
	local    bool // no spec.service
	insecure bool
	caBundle []byte
}

// createAPIService creates an aggregated APIService v1.<group> pointing at
// a Service that need not exist (there is no kubelet; only the object
// matters), and deletes it when the test ends.
func createAPIService(t *testing.T, group string, o apiServiceOpts) string {
	t.Helper()
	svc := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + group},
		Spec: apiregv1.APIServiceSpec{
			Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			InsecureSkipTLSVerify: o.insecure, CABundle: o.caBundle,
		},
	}
	if !o.local {
		port := int32(443)
		svc.Spec.Service = &apiregv1.ServiceReference{Namespace: "default", Name: "api-" + strings.Split(group, ".")[0], Port: &port}
	}
	c := aggregatorClient(t).ApiregistrationV1().APIServices()
	if _, err := c.Create(context.Background(), svc, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		t.Fatalf("create APIService: %v", err)
	}
	t.Cleanup(func() {
		err := c.Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete APIService %s: %v", svc.Name, err)
		}
	})
	return svc.Name
}

func getAPIService(t *testing.T, name string) *apiregv1.APIService {
	t.Helper()
	svc, err := aggregatorClient(t).ApiregistrationV1().APIServices().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get APIService %s: %v", name, err)
	}
	return svc
}

type certOpts struct {
	notAfter time.Time
	notCA    bool
}

// newCertPEM returns a fresh self-signed certificate; by default a CA valid
// for a year.
func newCertPEM(t *testing.T, cn string, o certOpts) string {
	t.Helper()
	b, err := testpki.CertPEM(cn, testpki.Options{NotAfter: o.notAfter, NotCA: o.notCA})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hashicorpConnectionAttributes are the connection settings the
// hashicorp/kubernetes provider documents (docs/index.md, argument
// reference), with their environment variables; exec is a block.
func hashicorpConnectionAttributes() map[string]string {
	return map[string]string{
		"host": "KUBE_HOST", "username": "KUBE_USER", "password": "KUBE_PASSWORD", "insecure": "KUBE_INSECURE",
		"tls_server_name": "KUBE_TLS_SERVER_NAME", "client_certificate": "KUBE_CLIENT_CERT_DATA",
		"client_key": "KUBE_CLIENT_KEY_DATA", "cluster_ca_certificate": "KUBE_CLUSTER_CA_CERT_DATA",
		"config_path": "KUBE_CONFIG_PATH", "config_paths": "KUBE_CONFIG_PATHS", "config_context": "KUBE_CTX",
		"config_context_auth_info": "KUBE_CTX_AUTH_INFO", "config_context_cluster": "KUBE_CTX_CLUSTER",
		"token": "KUBE_TOKEN", "proxy_url": "KUBE_PROXY_URL",
	}
}

// TestProviderSchemaParity: every hashicorp/kubernetes provider-block
// attribute exists here, documents its KUBE_* variable, and exec requires
// api_version and command as it does there.
func TestProviderSchemaParity(t *testing.T) {
	var resp provider.SchemaResponse
	New("test")().Schema(context.Background(), provider.SchemaRequest{}, &resp)
	s := resp.Schema
	for attr, envVar := range hashicorpConnectionAttributes() {
		a, ok := s.Attributes[attr]
		if !ok {
			t.Errorf("attribute %s is missing", attr)
			continue
		}
		if !strings.Contains(a.GetMarkdownDescription(), "`"+envVar+"`") {
			t.Errorf("description of %s does not name %s: %q", attr, envVar, a.GetMarkdownDescription())
		}
		if kube.EnvVar(attr) != envVar {
			t.Errorf("kube.EnvVar(%q) = %q, want %q", attr, kube.EnvVar(attr), envVar)
		}
	}
	for _, attr := range []string{"ignore_annotations", "ignore_labels"} {
		if a, ok := s.Attributes[attr]; !ok || !strings.Contains(a.GetMarkdownDescription(), "no effect") {
			t.Errorf("behaviour attribute %s missing or not documented as having no effect", attr)
		}
	}
	if _, ok := s.Blocks["experiments"]; !ok {
		t.Error("block experiments is missing")
	}
	exec, ok := s.Blocks["exec"].(providerschema.ListNestedBlock)
	if !ok {
		t.Fatalf("exec block = %T, want a list nested block (of at most one, as in hashicorp/kubernetes)", s.Blocks["exec"])
	}
	for attr, required := range map[string]bool{"api_version": true, "command": true, "args": false, "env": false} {
		if got := exec.NestedObject.Attributes[attr].IsRequired(); got != required {
			t.Errorf("exec.%s required = %v, want %v", attr, got, required)
		}
	}
}

// TestProviderModelKubeConfig: every attribute reaches kube.Config.
func TestProviderModelKubeConfig(t *testing.T) {
	ctx := context.Background()
	str := types.StringValue
	m := providerModel{
		Host: str("https://h"), Username: str("u"), Password: str("p"), Token: str("t"),
		ClusterCACertificate: str("ca"), ClientCertificate: str("cert"), ClientKey: str("key"),
		Insecure: types.BoolValue(false), TLSServerName: str("sni"), ProxyURL: str("http://proxy"),
		ConfigPath: str("/k"), ConfigPaths: types.ListNull(types.StringType), ConfigContext: str("ctx"),
		ConfigContextAuthInfo: str("user"), ConfigContextCluster: str("cluster"),
		Exec: []execModel{{
			APIVersion: str("client.authentication.k8s.io/v1"), Command: str("get-token"),
			Args: types.ListValueMust(types.StringType, []attr.Value{str("--a")}),
			Env:  types.MapValueMust(types.StringType, map[string]attr.Value{"K": str("v")}),
		}},
	}
	got, diags := m.kubeConfig(ctx)
	if diags.HasError() {
		t.Fatal(diags)
	}
	want := kube.Config{
		Host: "https://h", Username: "u", Password: "p", Token: "t",
		ClusterCACertificate: "ca", ClientCertificate: "cert", ClientKey: "key",
		InsecureSet: true, TLSServerName: "sni", ProxyURL: "http://proxy",
		ConfigPath: "/k", ConfigContext: "ctx", ConfigContextAuthInfo: "user", ConfigContextCluster: "cluster",
		Exec: &kube.Exec{APIVersion: "client.authentication.k8s.io/v1", Command: "get-token", Args: []string{"--a"}, Env: map[string]string{"K": "v"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kubeConfig() =\n%+v\nwant\n%+v", got, want)
	}
	// An explicit insecure = false beats KUBE_INSECURE=true.
	if merged := got.Merge(kube.Config{Insecure: true}); merged.Insecure {
		t.Error("Merge(KUBE_INSECURE=true).Insecure = true, want the explicit false")
	}
}

// TestAccProvider_explicitAttributes connects with the attributes of a
// hashicorp/kubernetes block (no kubeconfig) and, in a second test, with
// their KUBE_* variables and an empty block: the data source reads an
// APIService that every API server has.
func TestAccProvider_explicitAttributes(t *testing.T) {
	// Serial: t.Setenv changes the environment of the whole test process.
	const read = `
data "kmshealth_kms_plugin_health" "test" {
  target = "apiregistration.k8s.io/v1/apiservices/v1.apps"
}
`
	check := resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
		resource.TestCheckResourceAttr(healthAddr, "nodes.#", "0"),
	)
	hostPort := strings.TrimPrefix(env.Host, "https://")
	t.Run("attributes", func(t *testing.T) {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6,
			Steps: []resource.TestStep{
				{
					// A bare host:port gets https; tls_server_name is a SAN of the serving certificate.
					Config: fmt.Sprintf("provider \"kmshealth\" {\n  host = %q\n  token = %q\n  cluster_ca_certificate = %q\n  tls_server_name = \"kubernetes.default.svc\"\n}\n",
						hostPort, env.Token, env.CAPEM) + read,
					Check: check,
				},
				{
					Config: fmt.Sprintf("provider \"kmshealth\" {\n  host = %q\n  client_certificate = %q\n  client_key = %q\n  cluster_ca_certificate = %q\n}\n",
						env.Host, env.ClientCert, env.ClientKey, env.CAPEM) + read,
					Check: check,
				},
			},
		})
	})
	t.Run("KUBE_ variables", func(t *testing.T) {
		t.Setenv("KUBE_HOST", env.Host)
		t.Setenv("KUBE_TOKEN", env.Token)
		t.Setenv("KUBE_CLUSTER_CA_CERT_DATA", string(env.CAPEM))
		t.Setenv("KUBE_TLS_SERVER_NAME", "kubernetes.default.svc")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6,
			Steps:                    []resource.TestStep{{Config: "provider \"kmshealth\" {}\n" + read, Check: check}},
		})
	})
}

// TestAccProvider_inPodWithoutServiceAccount: with nothing configured and
// the pod's variables set, the provider takes the in-cluster path (read
// from the real environment) and says what it lacks.
func TestAccProvider_inPodWithoutServiceAccount(t *testing.T) {
	// Serial: t.Setenv changes the environment of the whole test process.
	if _, err := os.Stat(kube.DefaultServiceAccountDir + "/token"); err == nil {
		t.Skip("this machine is a pod with a ServiceAccount token: the in-cluster path would really be used")
	}
	for _, v := range []string{"KUBE_HOST", "KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBE_TOKEN"} {
		t.Setenv(v, "")
	}
	u, err := url.Parse(env.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", u.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", u.Port())
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config:      "data \"kmshealth_kms_plugin_health\" \"test\" {}\n",
			ExpectError: literalRE("Cannot connect to Kubernetes", "running in a pod (KUBERNETES_SERVICE_HOST="+u.Hostname()+") without a readable ServiceAccount token", "automountServiceAccountToken: true"),
		}},
	})
}

// TestAccProvider_requestLog: under TF_LOG=DEBUG each request and response
// is logged through tflog, with the bearer token redacted.
func TestAccProvider_requestLog(t *testing.T) {
	// Serial: t.Setenv changes the environment of the whole test process.
	logFile := filepath.Join(t.TempDir(), "tf.log")
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_ACC_LOG_PATH", logFile)
	t.Setenv("KUBE_TOKEN", env.Token) // not in the configuration, so only the provider knows it
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf("provider \"kmshealth\" {\n  host = %q\n  cluster_ca_certificate = %q\n}\n", env.Host, env.CAPEM) + `
data "kmshealth_kms_plugin_health" "test" {
  target = "apiregistration.k8s.io/v1/apiservices/v1.apps"
}
`,
			Check: resource.TestCheckResourceAttr(healthAddr, "healthy", "false"),
		}},
	})
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"Kubernetes API request", "Kubernetes API response", "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps", "Bearer " + kube.Redacted, "200 OK", "kubernetes"} {
		if !strings.Contains(log, want) {
			t.Errorf("the debug log does not contain %q", want)
		}
	}
	if strings.Contains(log, env.Token) {
		t.Error("the debug log contains the bearer token")
	}
}
