package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// The sample workload examples/cluster-bootstrap protects (protected_api):
// Deployment apps/api, whose pods run as ServiceAccount apps/api and serve
// their HTTP API on 127.0.0.1 only.
const (
	demoAPINamespace  = "apps"
	demoAPIDeployment = "api"
	demoAPIIgnored    = "/healthz" // the example's default ignore_paths
)

var demoAPITarget = rbacproxy.Target{Kind: rbacproxy.KindDeployment, Namespace: demoAPINamespace, Name: demoAPIDeployment}

// apiPorts are the protected API's ports: the proxy runs here as a local
// process, so each is a free loopback port of this machine rather than the
// example's defaults (8080, 8443, 8444). The upstream's listener is held
// from the start, so nothing can take its port before the upstream serves.
type apiPorts struct {
	upstream             net.Listener
	upstreamPort, listen int
	health               int
}

func pickAPIPorts() (*apiPorts, error) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ports, err := devenv.FreePorts(2)
	if err != nil {
		_ = up.Close()
		return nil, err
	}
	return &apiPorts{upstream: up, upstreamPort: up.Addr().(*net.TCPAddr).Port, listen: ports[0], health: ports[1]}, nil
}

// apiDeployment is the api Deployment as its team's manifest has it: what
// the demo creates, and what a `kubectl replace` of that manifest puts back.
func apiDeployment(upstreamPort int) *appsv1.Deployment {
	labels := map[string]string{"app": demoAPIDeployment}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoAPIDeployment, Namespace: demoAPINamespace},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: demoAPIDeployment,
					Containers: []corev1.Container{{Name: "api", Image: "registry.example.com/api:1",
						Args: []string{fmt.Sprintf("--listen=127.0.0.1:%d", upstreamPort)}}},
				},
			},
		},
	}
}

// createDemoAPI creates namespace apps, the api ServiceAccount and the
// api Deployment, as the api team's installer would.
func createDemoAPI(ctx context.Context, core kubernetes.Interface, upstreamPort int) error {
	if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoAPINamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := core.CoreV1().ServiceAccounts(demoAPINamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: demoAPIDeployment}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := core.AppsV1().Deployments(demoAPINamespace).Create(ctx, apiDeployment(upstreamPort), metav1.CreateOptions{FieldManager: "api-team"})
	return err
}

// rbacProxyMatrix prints the sidecar kmshealth_rbac_proxy_sidecar injected
// into the api Deployment, runs it as a local kube-rbac-proxy process
// (exactly its args and config file; devenv.StartRBACProxy) in front of a
// tiny upstream on its upstream port, and asks it as three callers: the
// answers must be 200 (with the upstream's body), 403, 401, and 200 on the
// ignored path without a token.
func rbacProxyMatrix(ctx context.Context, env *testenv.Env, ports *apiPorts) error {
	core := env.Clientset()
	step("kmshealth_rbac_proxy_sidecar injected kube-rbac-proxy into Deployment %s/%s", demoAPINamespace, demoAPIDeployment)
	sidecar, err := devenv.AppliedRBACProxy(ctx, core, demoAPITarget)
	if err != nil {
		return err
	}
	binding, err := core.RbacV1().ClusterRoleBindings().Get(ctx, rbacproxy.ClusterRoleBindingName(demoAPITarget), metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("initContainer %s (restartPolicy Always: a native sidecar)\n  image %s\n  args:\n", rbacproxy.ContainerName, sidecar.Image)
	for _, a := range sidecar.Args {
		fmt.Printf("    %s\n", a)
	}
	fmt.Printf("ConfigMap %s/%s %s:\n", demoAPINamespace, rbacproxy.ObjectName(demoAPITarget), rbacproxy.ConfigFileKey)
	for _, l := range strings.Split(strings.TrimSpace(sidecar.Config), "\n") {
		fmt.Printf("  %s\n", l)
	}
	fmt.Printf("ClusterRoleBinding %s: ServiceAccount %s/%s -> %s (TokenReviews and SubjectAccessReviews)\n",
		binding.Name, demoAPINamespace, sidecar.ServiceAccount, binding.RoleRef.Name)

	step("Callers of the api: ServiceAccount orders-reader, whose Role allows get on services/proxy %q in %s, and stranger, allowed nothing", demoAPIDeployment, demoAPINamespace)
	reader, err := callerToken(ctx, core, "orders-reader", true)
	if err != nil {
		return err
	}
	stranger, err := callerToken(ctx, core, "stranger", false)
	if err != nil {
		return err
	}
	// RBAC takes effect a moment after it is written, and the proxy caches
	// its decisions: wait until the API server's authorizer agrees first.
	for _, c := range []struct {
		sa    string
		attrs authorizationv1.ResourceAttributes
	}{
		{"orders-reader", authorizationv1.ResourceAttributes{Namespace: demoAPINamespace, Verb: "get", Resource: "services", Subresource: "proxy", Name: demoAPIDeployment}},
		{sidecar.ServiceAccount, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}},
		{sidecar.ServiceAccount, authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}},
	} {
		if err := waitAllowed(ctx, core, c.sa, c.attrs); err != nil {
			return err
		}
	}

	step("The real kube-rbac-proxy runs as the sidecar would: its args and config file as applied (only file paths and the listen host 127.0.0.1 substituted), as ServiceAccount %s/%s, in front of the api's upstream on 127.0.0.1:%d", demoAPINamespace, sidecar.ServiceAccount, ports.upstreamPort)
	up := serveUpstream(ports.upstream)
	defer func() { _ = up.srv.Close() }()
	fmt.Println("kube-rbac-proxy from tools/install.sh kube-rbac-proxy (built from the Go module proxy on first use, cached after)")
	bin, err := devenv.Tool("kube-rbac-proxy")
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(env.Dir, "kube-rbac-proxy.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	dir, err := os.MkdirTemp(env.Dir, "rbac-proxy-")
	if err != nil {
		return err
	}
	token, err := saToken(ctx, core, sidecar.ServiceAccount)
	if err != nil {
		return err
	}
	proxy, err := devenv.StartRBACProxy(ctx, devenv.RBACProxyOptions{
		Bin: bin, Sidecar: sidecar, Dir: dir, Out: logf,
		Server: env.Host, CAPEM: env.CAPEM, Token: token,
	})
	if err != nil {
		return err
	}
	defer proxy.Stop()
	fmt.Printf("%s %s\n  listening on %s, log %s\n", bin, strings.Join(proxy.Args, " "), proxy.URL, logf.Name())

	step("Who gets through (every answer is checked)")
	const path = "/v1/orders"
	var errs []error
	for _, c := range []struct {
		who, path, token string
		want             int
	}{
		{"orders-reader (Role: get services/proxy api)", path, reader, http.StatusOK},
		{"stranger (no Role)", path, stranger, http.StatusForbidden},
		{"no token", path, "", http.StatusUnauthorized},
		{"no token, ignored path", demoAPIIgnored, "", http.StatusOK},
	} {
		code, body, err := proxy.Do(ctx, http.MethodGet, c.path, c.token)
		if err != nil {
			return fmt.Errorf("%s: GET %s: %w", c.who, c.path, err)
		}
		mark := "ok"
		if code != c.want {
			mark = fmt.Sprintf("WRONG, want %d", c.want)
			errs = append(errs, fmt.Errorf("%s: GET %s answered %d %q, want %d", c.who, c.path, code, strings.TrimSpace(string(body)), c.want))
		}
		fmt.Printf("  %-46s GET %-10s -> %d %-12s %q  [%s]\n", c.who, c.path, code, http.StatusText(code), strings.TrimSpace(string(body)), mark)
	}
	seen, want := up.requests(), []string{"GET " + path, "GET " + demoAPIIgnored}
	fmt.Printf("the upstream saw only: %s\n", strings.Join(seen, ", "))
	if !slices.Equal(seen, want) {
		errs = append(errs, fmt.Errorf("the upstream saw %q, want only the allowed requests %q", seen, want))
	}
	if len(errs) > 0 {
		return fmt.Errorf("kube-rbac-proxy as applied answered wrong: %w\nits log:\n%s", errors.Join(errs...), proxy.Output.String())
	}
	return nil
}

// rbacProxyRestore replaces the api Deployment with its team's manifest,
// as `kubectl replace` does (an Update: the sidecar, its volume and its
// annotation are gone), and watches the running reconciler put the sidecar
// back, exactly as applied.
func rbacProxyRestore(ctx context.Context, env *testenv.Env, upstreamPort int) error {
	core := env.Clientset()
	deployments := core.AppsV1().Deployments(demoAPINamespace)
	step("Out of band: the api team's installer runs `kubectl replace` with its own manifest, which has no sidecar")
	applied, err := devenv.AppliedRBACProxy(ctx, core, demoAPITarget)
	if err != nil {
		return err
	}
	live, err := deployments.Get(ctx, demoAPIDeployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	replacement := apiDeployment(upstreamPort)
	replacement.ResourceVersion = live.ResourceVersion
	replaced, err := deployments.Update(ctx, replacement, metav1.UpdateOptions{FieldManager: "kubectl-replace"})
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Printf("Deployment %s/%s replaced: %d initContainers\n", demoAPINamespace, demoAPIDeployment, len(replaced.Spec.Template.Spec.InitContainers))
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w, err := deployments.Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + demoAPIDeployment, ResourceVersion: replaced.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	var restored *appsv1.Deployment
	for ev := range w.ResultChan() {
		if d, ok := ev.Object.(*appsv1.Deployment); ok && slices.ContainsFunc(d.Spec.Template.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == rbacproxy.ContainerName }) {
			restored = d
			break
		}
	}
	if restored == nil {
		return errors.New("the reconciler did not put the kube-rbac-proxy sidecar back within 10s; see its log")
	}
	took := time.Since(start)
	again, err := devenv.AppliedRBACProxy(ctx, core, demoAPITarget)
	if err != nil {
		return err
	}
	if again.Image != applied.Image || !slices.Equal(again.Args, applied.Args) {
		return fmt.Errorf("the reconciler put back %s %q, want %s %q as applied", again.Image, again.Args, applied.Image, applied.Args)
	}
	fmt.Printf("sidecar put back by the reconciler after %s: same image and %d args as applied\n", took.Round(100*time.Microsecond), len(again.Args))
	ev, err := waitEvent(ctx, core, reconciler.ReasonRBACProxyRestored)
	if err != nil {
		return err
	}
	fmt.Printf("Event %s %s on Deployment %s/%s: %s\n", ev.Type, ev.Reason, demoAPINamespace, demoAPIDeployment, ev.Message)
	return nil
}

// waitEvent waits for an Event with reason about the api Deployment: the
// reconciler's recorder sends it after the write.
func waitEvent(ctx context.Context, core kubernetes.Interface, reason string) (*corev1.Event, error) {
	sel := fields.Set{"involvedObject.name": demoAPIDeployment, "reason": reason}.AsSelector().String()
	var found *corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := core.CoreV1().Events(demoAPINamespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		if len(l.Items) > 0 {
			found = &l.Items[0]
		}
		return found != nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no %s Event on Deployment %s/%s within 10s: %w", reason, demoAPINamespace, demoAPIDeployment, err)
	}
	return found, nil
}

// callerToken creates ServiceAccount apps/<name>, with a Role and binding
// allowing get on services/proxy "api" when allowed, and returns a token
// of it.
func callerToken(ctx context.Context, core kubernetes.Interface, name string, allowed bool) (string, error) {
	if _, err := core.CoreV1().ServiceAccounts(demoAPINamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if allowed {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{demoAPIDeployment}, Verbs: []string{"get"},
		}}}
		if _, err := core.RbacV1().Roles(demoAPINamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return "", err
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: demoAPINamespace, Name: name}}}
		if _, err := core.RbacV1().RoleBindings(demoAPINamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	return saToken(ctx, core, name)
}

// saToken is a token of ServiceAccount apps/<name> (TokenRequest).
func saToken(ctx context.Context, core kubernetes.Interface, name string) (string, error) {
	tr, err := core.CoreV1().ServiceAccounts(demoAPINamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for ServiceAccount %s/%s: %w", demoAPINamespace, name, err)
	}
	return tr.Status.Token, nil
}

// waitAllowed waits until the authorizer allows ServiceAccount apps/<sa>
// attrs: RBAC takes effect a moment after it is written, with no signal.
func waitAllowed(ctx context.Context, core kubernetes.Interface, sa string, attrs authorizationv1.ResourceAttributes) error {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + demoAPINamespace + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + demoAPINamespace, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := core.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	})
	if err != nil {
		return fmt.Errorf("ServiceAccount %s/%s never allowed %s %s/%s: %w", demoAPINamespace, sa, attrs.Verb, attrs.Resource, attrs.Subresource, err)
	}
	return nil
}

// upstream is the api's HTTP server on loopback, recording what reached it.
type upstream struct {
	srv  *http.Server
	mu   sync.Mutex
	seen []string
}

func serveUpstream(l net.Listener) *upstream {
	u := &upstream{}
	u.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path)
		u.mu.Unlock()
		if r.URL.Path == demoAPIIgnored {
			_, _ = fmt.Fprintln(w, "ok")
			return
		}
		_, _ = fmt.Fprintf(w, "api: 3 open orders (you asked %s %s)\n", r.Method, r.URL.Path)
	})}
	go func() { _ = u.srv.Serve(l) }()
	return u
}

func (u *upstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}
