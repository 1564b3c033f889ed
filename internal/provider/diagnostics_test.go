package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

func apiservicesGR() schema.GroupResource {
	return schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}
}

// testConnection is a connection as kube.Config.Connect describes one.
func testConnection() *kube.Connection {
	return &kube.Connection{
		Server:      "https://203.0.113.10:6443",
		ServerFrom:  "the KUBE_HOST environment variable",
		Credentials: []string{"bearer token from the token attribute"},
	}
}

// wantDiagnostic is what a diagnostic must say.
type wantDiagnostic struct {
	summary     string   // exactly
	detail      []string // substrings
	notInDetail []string
	attribute   bool // attached to the request's attribute
}

func checkDiagnostic(t *testing.T, d diag.Diagnostic, want wantDiagnostic) {
	t.Helper()
	if d.Severity() != diag.SeverityError {
		t.Errorf("severity = %v, want error", d.Severity())
	}
	if d.Summary() != want.summary {
		t.Errorf("summary = %q, want %q", d.Summary(), want.summary)
	}
	for _, w := range want.detail {
		if !strings.Contains(d.Detail(), w) {
			t.Errorf("detail does not contain %q:\n%s", w, d.Detail())
		}
	}
	for _, w := range want.notInDetail {
		if strings.Contains(d.Detail(), w) {
			t.Errorf("detail contains %q:\n%s", w, d.Detail())
		}
	}
	_, hasPath := d.(diag.DiagnosticWithPath)
	if hasPath != want.attribute {
		t.Errorf("diagnostic attached to an attribute = %v, want %v", hasPath, want.attribute)
	}
}

// TestDiagnoseAPIErrorByCause: one case per cause, each from the error
// the API server or the transport really produces.
func TestDiagnoseAPIErrorByCause(t *testing.T) {
	getAPIService := apiServiceRequest("Cannot read APIService", "get", "v1.metrics.example.com")
	forbiddenBy := func(msg string) error {
		return fmt.Errorf("read APIService %q: %w", "v1.metrics.example.com", apierrors.NewForbidden(apiservicesGR(), "v1.metrics.example.com", errors.New(msg)))
	}
	tests := []struct {
		name string
		req  apiRequest
		err  error
		want wantDiagnostic
	}{
		{
			name: "not found names the object and the server",
			req:  getAPIService,
			err:  fmt.Errorf("APIService %q not found: create it first: %w", "v1.metrics.example.com", apierrors.NewNotFound(apiservicesGR(), "v1.metrics.example.com")),
			want: wantDiagnostic{
				summary: "Cannot read APIService: not found", attribute: true,
				detail: []string{`APIService "v1.metrics.example.com" does not exist on the API server https://203.0.113.10:6443 (chosen by the KUBE_HOST environment variable)`,
					"fix the name (apiservice_name)", `Error: APIService "v1.metrics.example.com" not found`},
			},
		},
		{
			name: "forbidden by RBAC at the cluster scope: identity, rule, binding to the ServiceAccount",
			req:  getAPIService,
			err:  forbiddenBy(`User "system:serviceaccount:ci:terraform" cannot get resource "apiservices" in API group "apiregistration.k8s.io" at the cluster scope`),
			want: wantDiagnostic{
				summary: "Cannot read APIService: forbidden", attribute: true,
				detail: []string{
					`does not allow user "system:serviceaccount:ci:terraform" to get APIService "v1.metrics.example.com" (at the cluster scope)`,
					"Credentials in use:\n  - bearer token from the token attribute",
					"kind: ClusterRole\n", `  - apiGroups: ["apiregistration.k8s.io"]` + "\n" + `    resources: ["apiservices"]` + "\n" + `    verbs: ["get"]` + "\n" + `    resourceNames: ["v1.metrics.example.com"]`,
					"kind: ClusterRoleBinding\n", "  - kind: ServiceAccount\n    name: \"terraform\"\n    namespace: \"ci\"",
					"kubectl auth can-i get apiservices.apiregistration.k8s.io/v1.metrics.example.com --as=system:serviceaccount:ci:terraform",
				},
				notInDetail: []string{"kind: Role\n", "admission"},
			},
		},
		{
			name: "forbidden in a namespace, on a subresource, for a user; the verb comes from the message",
			req:  apiRequest{Summary: "Cannot scale", Kind: "Deployment", Namespace: "prod", Name: "web"},
			err:  apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New(`User "alice@example.com" cannot patch resource "deployments/scale" in API group "apps" in the namespace "prod"`)),
			want: wantDiagnostic{
				summary: "Cannot scale: forbidden",
				detail: []string{`user "alice@example.com" to patch Deployment prod/web (in namespace "prod")`,
					"kind: Role\n  metadata:\n    name: kmshealth-provider\n    namespace: \"prod\"", `resources: ["deployments/scale"]`, `verbs: ["patch"]`,
					"kind: RoleBinding\n", "  - kind: User\n    apiGroup: rbac.authorization.k8s.io\n    name: \"alice@example.com\"",
					"kubectl auth can-i patch deployments.apps/web --subresource=scale -n prod --as=alice@example.com"},
			},
		},
		{
			name: "forbidden list without a name: no resourceNames",
			req:  apiRequest{Summary: "Cannot list"},
			err:  apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "bob" cannot list resource "configmaps" in API group "" at the cluster scope`)),
			want: wantDiagnostic{
				summary:     "Cannot list: forbidden",
				detail:      []string{`user "bob" to list configmaps (at the cluster scope)`, `apiGroups: [""]`, `verbs: ["list"]`, "kubectl auth can-i list configmaps --as=bob"},
				notInDetail: []string{"resourceNames"},
			},
		},
		{
			name: "forbidden watch of all objects: no resourceNames even when the request names one",
			req:  apiRequest{Summary: "Cannot wait", Verb: "watch", Resource: "configmaps", Namespace: "ns", Name: "c"},
			err:  apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "bob" cannot watch resource "configmaps" in API group "" in the namespace "ns"`)),
			want: wantDiagnostic{
				summary:     "Cannot wait: forbidden",
				detail:      []string{`verbs: ["watch"]`, "kubectl auth can-i watch configmaps -n ns --as=bob"},
				notInDetail: []string{"resourceNames"},
			},
		},
		{
			name: "forbidden non-resource URL",
			req:  apiRequest{Summary: "Cannot discover"},
			err:  apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(`User "bob" cannot get path "/apis"`)),
			want: wantDiagnostic{
				summary: "Cannot discover: forbidden",
				detail:  []string{`to get the path /apis`, `nonResourceURLs: ["/apis"]`, "kind: ClusterRole\n", "kubectl auth can-i get /apis --as=bob"},
			},
		},
		{
			name: "forbidden as anonymous: configure credentials, grant nothing",
			req:  getAPIService,
			err:  forbiddenBy(`User "system:anonymous" cannot get resource "apiservices" in API group "apiregistration.k8s.io" at the cluster scope`),
			want: wantDiagnostic{
				summary: "Cannot read APIService: forbidden (anonymous)", attribute: true,
				detail:      []string{"treated the request as anonymous", "Configure credentials", "Credentials in use:"},
				notInDetail: []string{"ClusterRoleBinding"},
			},
		},
		{
			name: "denied by a ValidatingAdmissionPolicy: its message, no RBAC advice",
			req:  apiServiceRequest("Cannot apply caBundle", "patch", "v1.metrics.example.com"),
			err:  forbiddenBy(`ValidatingAdmissionPolicy 'kmshealth-reconciler' with binding 'kmshealth-reconciler' denied request: only spec.caBundle may change`),
			want: wantDiagnostic{
				summary: "Cannot apply caBundle: denied by admission control", attribute: true,
				detail:      []string{"denied the request to patch APIService", "only spec.caBundle may change", "RBAC allowed it"},
				notInDetail: []string{"ClusterRole"},
			},
		},
		{
			name: "namespace being terminated",
			req:  apiRequest{Summary: "Cannot install", Verb: "create", Kind: "ServiceAccount", Namespace: "kmshealth", Name: "reporter"},
			err: apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "reporter",
				errors.New(`unable to create new content in namespace kmshealth because it is being terminated`)),
			want: wantDiagnostic{summary: "Cannot install: denied by admission control", detail: []string{"wait until it is gone, then apply again"}},
		},
		{
			name: "unauthorized: the credentials in use",
			req:  getAPIService,
			err:  fmt.Errorf("read: %w", apierrors.NewUnauthorized("Unauthorized")),
			want: wantDiagnostic{
				summary: "Cannot read APIService: credentials rejected",
				detail: []string{"The API server https://203.0.113.10:6443 (chosen by the KUBE_HOST environment variable) rejected the credentials (401 Unauthorized) when asked to get APIService",
					"Credentials in use:\n  - bearer token from the token attribute", "expired"},
			},
		},
		{
			name: "exec plugin failed",
			req:  getAPIService,
			err:  &url.Error{Op: "Get", URL: "https://203.0.113.10:6443/apis", Err: errors.New(`getting credentials: exec: executable aws not found in $PATH`)},
			want: wantDiagnostic{
				summary: "Cannot read APIService: exec plugin failed",
				detail:  []string{"could not produce credentials", "executable aws not found", "Run the plugin's command yourself"},
			},
		},
		{
			name: "DNS failure is unreachable",
			req:  getAPIService,
			err:  &url.Error{Op: "Get", URL: "https://k8s.invalid:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "k8s.invalid", IsNotFound: true}}},
			want: wantDiagnostic{summary: "Cannot read APIService: API server unreachable", detail: []string{"no such host", "chosen by the KUBE_HOST environment variable"}},
		},
		{
			name: "dial timeout is unreachable, not a slow request",
			req:  getAPIService,
			err:  &url.Error{Op: "Get", URL: "https://203.0.113.10:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}},
			want: wantDiagnostic{summary: "Cannot read APIService: API server unreachable"},
		},
		{
			name: "already exists",
			req:  apiRequest{Summary: "Cannot create", Verb: "create", Kind: "ConfigMap", Namespace: "kube-system", Name: "x", Attribute: path.Root("ca_bundle")},
			err:  apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, "x"),
			want: wantDiagnostic{summary: "Cannot create: already exists", attribute: true, detail: []string{"ConfigMap kube-system/x already exists", "Import it"}},
		},
		{
			name: "server-side apply conflict names the other manager",
			req:  getAPIService,
			err: apierrors.NewApplyConflict([]metav1.StatusCause{{
				Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.caBundle",
				Message: `conflict with "installer" using apiregistration.k8s.io/v1: .spec.caBundle`,
			}}, "Apply failed with 1 conflict"),
			want: wantDiagnostic{
				summary: "Cannot read APIService: fields owned by another field manager", attribute: true,
				detail: []string{`  - conflict with "installer" using apiregistration.k8s.io/v1: .spec.caBundle`, "Stop the other writer"},
			},
		},
		{
			name: "optimistic-lock conflict",
			req:  apiRequest{Summary: "Cannot update", Kind: "ConfigMap", Namespace: "ns", Name: "c"},
			err:  apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "c", errors.New("the object has been modified; please apply your changes to the latest version and try again")),
			want: wantDiagnostic{summary: "Cannot update: conflict", detail: []string{"ConfigMap ns/c was changed by someone else", "Apply again"}},
		},
		{
			name: "server timeout",
			req:  getAPIService,
			err:  apierrors.NewTimeoutError("request did not complete within requested timeout", 0),
			want: wantDiagnostic{summary: "Cannot read APIService: timed out", detail: []string{"Get APIService \"v1.metrics.example.com\" on the API server https://203.0.113.10:6443", "readyz"}},
		},
		{
			name: "context deadline",
			req:  apiRequest{},
			err:  fmt.Errorf("client rate limiter Wait returned an error: %w", context.DeadlineExceeded),
			want: wantDiagnostic{summary: "Kubernetes request failed: timed out"},
		},
		{
			name: "too many requests",
			req:  getAPIService,
			err:  apierrors.NewTooManyRequests("slow down", 1),
			want: wantDiagnostic{summary: "Cannot read APIService: too many requests", attribute: true, detail: []string{"answered 429 TooManyRequests", "-parallelism"}},
		},
		{
			name: "configuration error: nothing was sent",
			req:  getAPIService,
			err:  &configError{errors.New("no Kubernetes connection configured: set host")},
			want: wantDiagnostic{summary: "Cannot connect to Kubernetes", detail: []string{"no Kubernetes connection configured", "Nothing was sent to any API server"}},
		},
		{
			name: "a plain error keeps the caller's summary and attribute",
			req:  apiRequest{Summary: "Cannot store inline CA bundle", Attribute: path.Root("ca_bundle")},
			err:  errors.New("ConfigMap kube-system/x already exists and is not managed by kmshealth"),
			want: wantDiagnostic{summary: "Cannot store inline CA bundle", attribute: true, detail: []string{"not managed by kmshealth"}},
		},
		{
			name: "hint appended",
			req:  apiRequest{Summary: "Cannot read", Hint: "The data source needs get."},
			err:  apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "c", errors.New(`User "bob" cannot get resource "configmaps" in API group "" in the namespace "ns"`)),
			want: wantDiagnostic{summary: "Cannot read: forbidden", detail: []string{"\n\nThe data source needs get."}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDiagnostic(t, diagnoseAPIError(testConnection(), tt.req, tt.err), tt.want)
		})
	}
}

// TestDiagnoseConnectionRefused: a real request to a closed loopback port,
// through a connection built from KUBE_CONFIG_PATH, is "unreachable" and
// names the address and the variable that chose it.
func TestDiagnoseConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: refused
clusters:
- name: refused
  cluster: {server: "https://%s", insecure-skip-tls-verify: true}
contexts:
- name: refused
  context: {cluster: refused, user: admin}
users:
- name: admin
  user: {token: secret-token}
`, addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := kube.FromEnv(func(k string) string { return map[string]string{"KUBE_CONFIG_PATH": kubeconfig}[k] })
	if err != nil {
		t.Fatal(err)
	}
	conn, err := kube.Config{}.Merge(env).Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	agg, err := kubernetes.NewForConfig(conn.REST)
	if err != nil {
		t.Fatal(err)
	}
	_, err = agg.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "x", metav1.GetOptions{})
	if err == nil {
		t.Fatal("get from a closed port succeeded")
	}
	err = fmt.Errorf("read ConfigMap kube-system/x: %w", err) // as the pattern packages wrap
	d := diagnoseAPIError(conn, apiRequest{Summary: "Cannot read inline CA bundle ConfigMap", Verb: "get", Kind: "ConfigMap", Namespace: "kube-system", Name: "x", Attribute: path.Root("ca_bundle")}, err)
	checkDiagnostic(t, d, wantDiagnostic{
		summary: "Cannot read inline CA bundle ConfigMap: API server unreachable",
		detail: []string{
			"Could not get ConfigMap kube-system/x: no connection to the API server https://" + addr,
			`chosen by the server of cluster "refused" of context "refused" (the current context) in kubeconfig "` + kubeconfig + `" (KUBE_CONFIG_PATH environment variable)`,
			"connect: connection refused", "dial tcp " + addr,
		},
		notInDetail: []string{"not found", "secret-token"},
	})
}

// TestDiagnoseUntrustedCertificate: a real TLS handshake with a server
// whose CA the client lacks.
func TestDiagnoseUntrustedCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{})
	if err == nil {
		t.Fatal("request to an untrusted server succeeded")
	}
	checkDiagnostic(t, diagnoseAPIError(testConnection(), apiRequest{Summary: "Cannot read"}, err), wantDiagnostic{
		summary: "Cannot read: API server certificate not trusted",
		detail:  []string{"cluster_ca_certificate", "tls_server_name", "certificate"},
	})
}

// TestDiagnoseWithoutClients: resources call the helper through their
// possibly unconfigured clients.
func TestDiagnoseWithoutClients(t *testing.T) {
	var diags diag.Diagnostics
	var c *Clients
	c.addAPIError(&diags, apiRequest{Summary: "Cannot read"}, apierrors.NewNotFound(apiservicesGR(), "v1.x"))
	if len(diags) != 1 || diags[0].Summary() != "Cannot read: not found" || !strings.Contains(diags[0].Detail(), "the Kubernetes API server") {
		t.Errorf("diagnostics = %v, want one not-found error naming no particular server", diags)
	}
}
