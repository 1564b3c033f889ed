package provider

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// apiRequest describes a request whose failure is to be reported: what was
// being done, to which object, on behalf of which attribute. Every field is
// optional; what the error carries (a StatusError's group, resource and
// name, the verb of a forbidden message) fills the gaps.
type apiRequest struct {
	Summary   string    // what failed, e.g. "Cannot read APIService"; default "Kubernetes request failed"
	Verb      string    // get, list, watch, create, update, patch, delete
	Kind      string    // e.g. "APIService", for people
	Group     string    // API group; "" for the core group
	Resource  string    // plural resource, e.g. "apiservices"
	Namespace string    // "" when cluster-scoped
	Name      string    // "" for a list or a watch
	Attribute path.Path // the attribute that named the object; empty for none
	Hint      string    // appended to the detail, e.g. the access a data source needs
}

// addAPIError adds the diagnostic of a failed Kubernetes request, or of
// clients that could not be built, by cause (see diagnoseAPIError). Every
// resource and data source reports its API errors through it.
func (c *Clients) addAPIError(diags *diag.Diagnostics, req apiRequest, err error) {
	diags.Append(diagnoseAPIError(c.connection(), req, err))
}

// configError is a failure to build the clients from the provider
// configuration: nothing was sent to any API server.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// cause is why a request failed, as far as the provider can tell.
type cause int

const (
	causeOther         cause = iota
	causeConfig              // the provider configuration cannot be used
	causeConfigUnknown       // the provider configuration is not known yet
	causeNotFound
	causeForbidden
	causeUnauthorized // the server rejected the credentials
	causeCredentials  // the credentials could not be obtained (exec plugin)
	causeUnreachable
	causeUntrusted // the server's certificate is not trusted
	causeAlreadyExists
	causeConflict
	causeTimeout
)

// classify tells why err happened.
func classify(err error) cause {
	var cfgErr *configError
	var status apierrors.APIStatus
	var urlErr *url.Error
	switch {
	case errors.As(err, &cfgErr):
		return causeConfig
	case errors.Is(err, ErrConfigUnknown):
		return causeConfigUnknown
	case errors.As(err, &status):
		switch {
		case apierrors.IsNotFound(err):
			return causeNotFound
		case apierrors.IsForbidden(err):
			return causeForbidden
		case apierrors.IsUnauthorized(err):
			return causeUnauthorized
		case apierrors.IsAlreadyExists(err):
			return causeAlreadyExists
		case apierrors.IsConflict(err):
			return causeConflict
		case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
			return causeTimeout
		}
		return causeOther
	case errors.As(err, &urlErr) && strings.HasPrefix(urlErr.Err.Error(), "getting credentials:"):
		// client-go's exec authenticator formats this error with %v.
		return causeCredentials
	case untrusted(err):
		return causeUntrusted
	case unreachable(err):
		return causeUnreachable
	case errors.Is(err, context.DeadlineExceeded):
		return causeTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return causeTimeout
	}
	return causeOther
}

func untrusted(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verification *tls.CertificateVerificationError
	return errors.As(err, &unknownAuthority) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verification)
}

// unreachable reports whether err says no connection to the server could
// be made or kept: refused, no route, no such host, a dial timeout, a
// reset, or a server that does not speak TLS.
func unreachable(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &recordErr):
		return true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// diagnoseAPIError turns err into a diagnostic that says what happened and
// what to do, by cause:
//   - not found: which object, on which API server;
//   - forbidden: the verb, resource and identity, and the RBAC rule that
//     would allow it (or, when admission control denied it, that message);
//   - unauthorized: the credentials in use and where they came from;
//   - unreachable: the server address, the underlying error and the
//     attributes or KUBE_* variables that chose that address;
//   - conflict (and already exists), timeout, and the rest.
//
// conn is nil when the clients could not be built.
func diagnoseAPIError(conn *kube.Connection, req apiRequest, err error) diag.Diagnostic {
	req = req.completedBy(err)
	summary := cmp.Or(req.Summary, "Kubernetes request failed")
	var label, detail string
	onObject := true // attach to req.Attribute: the object the attribute names is what failed
	switch classify(err) {
	case causeConfig:
		return diag.NewErrorDiagnostic("Cannot connect to Kubernetes", err.Error()+
			"\n\nNothing was sent to any API server: fix the provider configuration (the attributes or KUBE_* environment variables named above).")
	case causeConfigUnknown:
		return diag.NewErrorDiagnostic(summary+": provider configuration not known yet", err.Error()+
			". Apply the resources the provider block depends on first, or add depends_on so this is read during the apply.")
	case causeNotFound:
		label = "not found"
		detail = fmt.Sprintf("%s does not exist on %s.\n\nCreate it first, or fix the name", req.object(), server(conn))
		if len(req.Attribute.Steps()) > 0 {
			detail += " (" + req.Attribute.String() + ")"
		}
		detail += "; if it exists on another cluster, point the provider at that one.\n\nError: " + err.Error()
	case causeForbidden:
		label, detail = forbidden(conn, req, err)
	case causeUnauthorized:
		label, onObject = "credentials rejected", false
		detail = fmt.Sprintf("%s rejected the credentials (401 Unauthorized) when asked to %s %s.\n\n%s\n"+
			"A token may have expired or been revoked, a client certificate may have expired or be signed by a CA this server does not trust, "+
			"or the credentials may belong to another cluster. Renew them where they come from (named above), or point the provider at the cluster they belong to.\n\nError: %s",
			capitalize(server(conn)), cmp.Or(req.Verb, "access"), req.object(), credentials(conn), err)
	case causeCredentials:
		label, onObject = "exec plugin failed", false
		detail = fmt.Sprintf("The credential plugin could not produce credentials for %s %s.\n\n%s\n"+
			"Run the plugin's command yourself to see why; then fix its command, args or env (in the exec block or the kubeconfig user), or log in again.\n\nError: %s",
			cmp.Or(req.Verb, "the request to"), req.object(), credentials(conn), err)
	case causeUntrusted:
		label, onObject = "API server certificate not trusted", false
		detail = fmt.Sprintf("%s presented a certificate that does not verify.\n\n"+
			"Set cluster_ca_certificate (or KUBE_CLUSTER_CA_CERT_DATA, or the kubeconfig's certificate-authority-data) to the CA that signed the API server's certificate; "+
			"if the certificate names another host than the one connected to, set tls_server_name to a name it carries.%s\n\nError: %s", capitalize(server(conn)), inPodCA(conn), err)
	case causeUnreachable:
		label, onObject = "API server unreachable", false
		detail = fmt.Sprintf("Could not %s %s: no connection to %s.\n\nCause: %s\n\n%s"+
			"Check that the API server is running and reachable from where Terraform runs (address, port, VPN, firewall, DNS), "+
			"or point the provider at the right server.",
			cmp.Or(req.Verb, "reach"), req.object(), server(conn), rootCause(err), proxy(conn))
	case causeAlreadyExists:
		label = "already exists"
		detail = fmt.Sprintf("%s already exists on %s and is not managed by this resource.\n\n"+
			"Import it to manage it with Terraform (an import block or terraform import), or delete or rename the existing object.\n\nError: %s",
			req.object(), server(conn), err)
	case causeConflict:
		label, detail = conflict(req, err)
	case causeTimeout:
		label, onObject = "timed out", false
		detail = fmt.Sprintf("%s %s on %s did not complete in time.\n\n"+
			"The API server may be overloaded, or a network path may drop packets: check its health (kubectl get --raw='/readyz?verbose'). "+
			"If the operation is slow rather than stuck, allow it more time (the resource's timeouts).\n\nError: %s",
			capitalize(cmp.Or(req.Verb, "the request to")), req.object(), server(conn), err)
	default:
		detail = err.Error()
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			s := status.Status()
			label = strings.ToLower(http.StatusText(int(s.Code)))
			detail = fmt.Sprintf("%s answered %d %s to %s %s.\n\nError: %s", capitalize(server(conn)), s.Code, s.Reason, cmp.Or(req.Verb, "the request for"), req.object(), err)
			if s.Code == 429 {
				detail += "\n\nThe API server is rate limiting (API Priority and Fairness): apply again later, or with less -parallelism."
			}
		}
	}
	if label != "" {
		summary += ": " + label
	}
	if req.Hint != "" {
		detail += "\n\n" + req.Hint
	}
	if onObject && len(req.Attribute.Steps()) > 0 {
		return diag.NewAttributeErrorDiagnostic(req.Attribute, summary, detail)
	}
	return diag.NewErrorDiagnostic(summary, detail)
}

// completedBy fills what r leaves open from what err carries.
func (r apiRequest) completedBy(err error) apiRequest {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			if r.Resource == "" { // a StatusError's Details.Kind is the resource, e.g. "apiservices"
				r.Resource, r.Group = d.Kind, d.Group
			}
			r.Name = cmp.Or(r.Name, d.Name)
		}
	}
	if d, ok := parseDenial(err); ok {
		r.Verb = cmp.Or(d.verb, r.Verb) // the verb the server checked, e.g. list for a watch's initial list
		r.Namespace = cmp.Or(r.Namespace, d.namespace)
		if r.Resource == "" {
			r.Resource, r.Group = d.resource, d.group
		}
	}
	return r
}

// groupResource is e.g. "apiservices.apiregistration.k8s.io" or "configmaps".
func (r apiRequest) groupResource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// object names the object (or collection) the request was about.
func (r apiRequest) object() string {
	what := cmp.Or(r.Kind, r.groupResource(), "the object")
	switch {
	case r.Name != "" && r.Namespace != "":
		return fmt.Sprintf("%s %s/%s", what, r.Namespace, r.Name)
	case r.Name != "":
		return fmt.Sprintf("%s %q", what, r.Name)
	case r.Namespace != "":
		return fmt.Sprintf("%s in namespace %q", what, r.Namespace)
	}
	return what
}

// server names the API server and what chose it.
func server(conn *kube.Connection) string {
	if conn == nil {
		return "the Kubernetes API server"
	}
	return fmt.Sprintf("the API server %s (chosen by %s)", conn.Server, conn.ServerFrom)
}

// credentials lists the credentials in use, one per line.
func credentials(conn *kube.Connection) string {
	if conn == nil {
		return "Credentials in use: unknown."
	}
	return "Credentials in use:\n  - " + strings.Join(conn.Credentials, "\n  - ") + "\n"
}

// inPodCA is what to add about the CA when the pod's ServiceAccount
// configuration is in use.
func inPodCA(conn *kube.Connection) string {
	if conn == nil || !conn.InCluster {
		return ""
	}
	return " In a pod without host, the CA is the ServiceAccount's ca.crt: to reach another API server, set host and cluster_ca_certificate."
}

// proxy is the line about the proxy requests go through, if any.
func proxy(conn *kube.Connection) string {
	if conn == nil || conn.Proxy == "" {
		return ""
	}
	return "Requests go through the proxy " + conn.Proxy + ": it may be the part that is down.\n\n"
}

// rootCause is the innermost error worth showing: the transport error
// without the request URL around it, e.g. "dial tcp 127.0.0.1:1: connect:
// connection refused".
func rootCause(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Sprintf("%s %s: %v", urlErr.Op, urlErr.URL, urlErr.Err)
	}
	return err.Error()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// denial is what the API server's authorizer says in a forbidden message,
// e.g. `User "alice" cannot get resource "apiservices" in API group
// "apiregistration.k8s.io" at the cluster scope`.
type denial struct {
	user      string
	verb      string
	resource  string // with "/subresource" when there is one
	group     string
	namespace string // "" at the cluster scope
	path      string // a non-resource URL instead of a resource
}

// parseDenial finds the authorizer's message in err.
func parseDenial(err error) (denial, bool) {
	if !apierrors.IsForbidden(err) {
		return denial{}, false
	}
	re := regexp.MustCompile(`User ("(?:[^"\\]|\\.)*") cannot (\S+) (?:resource ("(?:[^"\\]|\\.)*") in API group ("(?:[^"\\]|\\.)*")(?: in the namespace ("(?:[^"\\]|\\.)*"))?|path ("(?:[^"\\]|\\.)*"))`)
	m := re.FindStringSubmatch(err.Error())
	if m == nil {
		return denial{}, false
	}
	unquote := func(s string) string {
		if s == "" {
			return ""
		}
		u, uerr := strconv.Unquote(s)
		if uerr != nil {
			return s
		}
		return u
	}
	return denial{user: unquote(m[1]), verb: m[2], resource: unquote(m[3]), group: unquote(m[4]), namespace: unquote(m[5]), path: unquote(m[6])}, true
}

// forbidden explains a 403: by RBAC, with the rule that would allow the
// request, or by admission control, with its message.
func forbidden(conn *kube.Connection, req apiRequest, err error) (label, detail string) {
	d, ok := parseDenial(err)
	if !ok {
		detail = fmt.Sprintf("Admission control on %s denied the request to %s %s: a ValidatingAdmissionPolicy, an admission webhook or a built-in admission plugin rejected it "+
			"(RBAC allowed it). Its message says what it requires.\n\nError: %s", server(conn), cmp.Or(req.Verb, "change"), req.object(), err)
		if strings.Contains(err.Error(), "because it is being terminated") {
			detail += "\n\nThe namespace is being deleted: wait until it is gone, then apply again."
		}
		return "denied by admission control", detail
	}
	var b strings.Builder
	if d.user == "system:anonymous" {
		fmt.Fprintf(&b, "%s treated the request as anonymous (system:anonymous): no credentials it accepts reached it.\n\n%s\n"+
			"Configure credentials (token, client_certificate and client_key, exec, or a kubeconfig user) rather than granting anonymous users access.\n\nError: %s",
			capitalize(server(conn)), credentials(conn), err)
		return "forbidden (anonymous)", b.String()
	}
	scope := "at the cluster scope"
	if d.namespace != "" {
		scope = fmt.Sprintf("in namespace %q", d.namespace)
	}
	target := req.object()
	if d.path != "" {
		target = "the path " + d.path
	}
	fmt.Fprintf(&b, "RBAC on %s does not allow user %q to %s %s (%s).\n\n%s\n", server(conn), d.user, d.verb, target, scope, credentials(conn))
	// resourceNames can narrow a list or watch only to the one object its
	// field selector names, which is the name the server reports.
	name := req.Name
	if d.verb == "list" || d.verb == "watch" {
		name = deniedName(err)
	}
	b.WriteString("RBAC that allows it (names are examples):\n\n")
	b.WriteString(rbacManifests(d, name))
	fmt.Fprintf(&b, "\nCheck with: %s\nOr use credentials that already have this access.\n\nError: %s", kubectlCanI(d, name), err)
	return "forbidden", b.String()
}

// deniedName is the object name the server checked access to, if any.
func deniedName(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		return status.Status().Details.Name
	}
	return ""
}

// rbacManifests is a Role (ClusterRole at the cluster scope) with the one
// rule the denial asks for, and its binding to the denied user, as YAML
// indented for a diagnostic.
func rbacManifests(d denial, name string) string {
	roleKind, bindingKind, metadata := "ClusterRole", "ClusterRoleBinding", "  metadata:\n    name: kmshealth-provider\n"
	if d.namespace != "" {
		roleKind, bindingKind = "Role", "RoleBinding"
		metadata = fmt.Sprintf("  metadata:\n    name: kmshealth-provider\n    namespace: %q\n", d.namespace)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  apiVersion: rbac.authorization.k8s.io/v1\n  kind: %s\n%s  rules:\n", roleKind, metadata)
	if d.path != "" {
		fmt.Fprintf(&b, "  - nonResourceURLs: [%q]\n    verbs: [%q]\n", d.path, d.verb)
	} else {
		fmt.Fprintf(&b, "  - apiGroups: [%q]\n    resources: [%q]\n    verbs: [%q]\n", d.group, d.resource, d.verb)
		if name != "" && d.verb != "create" && d.verb != "deletecollection" {
			fmt.Fprintf(&b, "    resourceNames: [%q]\n", name)
		}
	}
	fmt.Fprintf(&b, "  ---\n  apiVersion: rbac.authorization.k8s.io/v1\n  kind: %s\n%s", bindingKind, metadata)
	fmt.Fprintf(&b, "  roleRef:\n    apiGroup: rbac.authorization.k8s.io\n    kind: %s\n    name: kmshealth-provider\n  subjects:\n", roleKind)
	if ns, sa, ok := serviceAccount(d.user); ok {
		fmt.Fprintf(&b, "  - kind: ServiceAccount\n    name: %q\n    namespace: %q\n", sa, ns)
	} else {
		fmt.Fprintf(&b, "  - kind: User\n    apiGroup: rbac.authorization.k8s.io\n    name: %q\n", d.user)
	}
	return b.String()
}

// serviceAccount splits "system:serviceaccount:<namespace>:<name>".
func serviceAccount(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok
}

// kubectlCanI is the kubectl command that checks the denied access.
func kubectlCanI(d denial, name string) string {
	if d.path != "" {
		return fmt.Sprintf("kubectl auth can-i %s %s --as=%s", d.verb, d.path, d.user)
	}
	resource, subresource, _ := strings.Cut(d.resource, "/")
	what := resource
	if d.group != "" {
		what += "." + d.group
	}
	if name != "" && d.verb != "create" {
		what += "/" + name
	}
	cmd := fmt.Sprintf("kubectl auth can-i %s %s", d.verb, what)
	if subresource != "" {
		cmd += " --subresource=" + subresource
	}
	if d.namespace != "" {
		cmd += " -n " + d.namespace
	}
	return cmd + " --as=" + d.user
}

// conflict explains a 409 that is not "already exists": fields owned by
// another field manager (server-side apply), or a change in between.
func conflict(req apiRequest, err error) (label, detail string) {
	var status apierrors.APIStatus
	var causes []metav1.StatusCause
	if errors.As(err, &status) && status.Status().Details != nil {
		causes = status.Status().Details.Causes
	}
	var owned []string
	for _, c := range causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			owned = append(owned, "  - "+c.Message)
		}
	}
	if len(owned) > 0 {
		return "fields owned by another field manager", fmt.Sprintf("Server-side apply to %s conflicts with another field manager:\n%s\n\n"+
			"Stop the other writer (an installer, a GitOps tool, an operator), or take the fields over (force_conflicts where the resource offers it).\n\nError: %s",
			req.object(), strings.Join(owned, "\n"), err)
	}
	return "conflict", fmt.Sprintf("%s was changed by someone else between read and write.\n\nApply again; if it keeps happening, find the other writer.\n\nError: %s", capitalize(req.object()), err)
}
