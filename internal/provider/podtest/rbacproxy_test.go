package podtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// upstreamPort is where the workload behind the proxy listens, on its
// pod's loopback only (testenv.HTTPUpstreamImage's default).
const upstreamPort = 8080

// upstreamDeployment is a Deployment of one plain HTTP server on
// 127.0.0.1:upstreamPort, running as ServiceAccount sa: the workload a
// user puts behind the proxy. Its own probe tells kubelet when it listens.
func upstreamDeployment(ns, name, sa string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            sa,
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{
						Name: "upstream", Image: testenv.HTTPUpstreamImage, ImagePullPolicy: corev1.PullNever,
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/httpupstream", "-probe"}}},
							PeriodSeconds: 1,
						},
					}},
				},
			},
		},
	}
}

// TestAccPod_rbacProxy: kmshealth_rbac_proxy_sidecar injects kube-rbac-proxy
// rbacproxy.DefaultVersion (v0.22.1) — the binary tools/install.sh
// kube-rbac-proxy builds, packaged by the test bed under the resource's
// default image name — as a native sidecar in front
// of a workload listening on 127.0.0.1 only. Called at the pod's IP from
// outside the pod: a caller whose RBAC allows the configured resource
// attributes gets 200 and the upstream's answer, one allowed something
// else 403, no token 401, the ignored path passes without a token, and the
// upstream's port refuses connections. The sidecar runs non-root, without
// capabilities or privilege escalation. Destroy rolls the Deployment back
// to pods of the user's container alone, as it was.
func TestAccPod_rbacProxy(t *testing.T) {
	t.Parallel()
	node := mustNode(t)
	ctx := context.Background()
	cs := env.Clientset()
	ns, name := "pod-rbac-proxy", "web"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{name, "reader", "stranger"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The reader may get services/proxy "web" in ns, exactly the configured
	// attributes; the stranger may only list services there.
	grant(t, ns, "reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{name}, Verbs: []string{"get"}})
	grant(t, ns, "stranger", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list"}})
	reader, stranger := testenv.ServiceAccountToken(t, cs, ns, "reader"), testenv.ServiceAccountToken(t, cs, ns, "stranger")
	dep, err := cs.AppsV1().Deployments(ns).Create(ctx, upstreamDeployment(ns, name, name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	userContainers := dep.Spec.Template.Spec.Containers // as the API server defaulted them
	selector := map[string]string{"app": name}

	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_rbac_proxy_sidecar" "this" {
  target {
    kind      = "Deployment"
    namespace = %[1]q
    name      = %[2]q
  }
  upstream_port    = %[3]d
  ignore_paths     = ["/healthz-public"]
  wait_for_rollout = true
  authorization {
    resource_attributes {
      namespace   = %[1]q
      resource    = "services"
      subresource = "proxy"
      name        = %[2]q
    }
  }
  timeouts {
    create = "3m"
  }
}
`, ns, name, upstreamPort)
	const addr = "kmshealth_rbac_proxy_sidecar.this"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkSidecarRemoved(ns, name, selector, userContainers),
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(addr, "image", rbacproxy.DefaultImage),
				resource.TestCheckResourceAttr(addr, "service_account_name", name),
				func(*terraform.State) error {
					pod, err := waitOnePod(ctx, ns, selector, "with the rbac proxy sidecar running", sidecarRunning)
					if err != nil {
						return fmt.Errorf("%w; kubelet: %s", err, node.NodeLog("kubelet"))
					}
					if err := checkUserContainers(ns, name, userContainers); err != nil {
						return err
					}
					// RBAC in effect before the first request: the proxy
					// caches its decisions, so a request racing RBAC would
					// keep the wrong answer.
					for _, a := range []struct{ sa, verb, namespace, group, resource, subresource, name string }{
						{name, "create", "", "authentication.k8s.io", "tokenreviews", "", ""},
						{name, "create", "", "authorization.k8s.io", "subjectaccessreviews", "", ""},
						{"reader", "get", ns, "", "services", "proxy", name},
					} {
						if err := waitAllowed(ctx, ns, a.sa, authorizationv1.ResourceAttributes{
							Verb: a.verb, Namespace: a.namespace, Group: a.group, Resource: a.resource, Subresource: a.subresource, Name: a.name,
						}); err != nil {
							return err
						}
					}
					if err := callThroughProxy(ctx, t, pod.Status.PodIP, reader, stranger); err != nil {
						return fmt.Errorf("%w\npod logs:\n%s", err, node.PodLogs(ns, pod.Name))
					}
					return nil
				},
				checkHardened(node, ns, selector, rbacproxy.ContainerName, "65532", 1),
			),
		}},
	})
}

// grant lets ServiceAccount ns/sa do what rule says, by a Role and a
// RoleBinding of its name.
func grant(t *testing.T, ns, sa string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	rbac := env.Clientset().RbacV1()
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed polls (a SubjectAccessReview cannot be watched) until the
// API server's authorizer allows ServiceAccount ns/sa the attributes, for
// at most 30 seconds: RBAC takes effect a moment after it is written.
func waitAllowed(ctx context.Context, ns, sa string, attrs authorizationv1.ResourceAttributes) error {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := env.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		last = r.Status.Reason
		return r.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("ServiceAccount %s/%s never allowed %+v (last reason %q): %w", ns, sa, attrs, last, err)
	}
	return nil
}

// sidecarRunning: the pod has kmshealth's sidecar as a native sidecar (an
// init container with restartPolicy Always) of the default image, running
// and ready.
func sidecarRunning(p *corev1.Pod) bool {
	native := false
	for _, c := range p.Spec.InitContainers {
		if c.Name == rbacproxy.ContainerName && c.Image == rbacproxy.DefaultImage &&
			c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			native = true
		}
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == rbacproxy.ContainerName {
			return native && s.State.Running != nil && s.Ready
		}
	}
	return false
}

// checkUserContainers: the Deployment's own containers are exactly as
// the user created them.
func checkUserContainers(ns, name string, want []corev1.Container) error {
	dep, err := env.Clientset().AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got := dep.Spec.Template.Spec.Containers; !apiequality.Semantic.DeepEqual(got, want) {
		return fmt.Errorf("the containers of Deployment %s/%s changed:\n got  %+v\n want %+v", ns, name, got, want)
	}
	return nil
}

// callThroughProxy calls the proxy at the pod's IP as a caller outside the
// pod would, and dials the upstream's port there directly.
func callThroughProxy(ctx context.Context, t *testing.T, podIP, reader, stranger string) error {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the proxy's self-signed certificate; the test is about who gets through
	}}
	base := "https://" + net.JoinHostPort(podIP, strconv.Itoa(int(rbacproxy.DefaultListenPort)))
	var errs []error
	for _, c := range []struct {
		what, method, path, token string
		want                      int
		body                      string // the upstream's answer, when it is reached
	}{
		{"a caller allowed get on services/proxy web", http.MethodGet, "/metrics", reader, http.StatusOK, "upstream saw GET /metrics"},
		{"that caller with a verb RBAC does not allow (POST is create)", http.MethodPost, "/metrics", reader, http.StatusForbidden, ""},
		{"a caller allowed only get and list on services", http.MethodGet, "/metrics", stranger, http.StatusForbidden, ""},
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized, ""},
		{"no token on the ignored path", http.MethodGet, "/healthz-public", "", http.StatusOK, "upstream saw GET /healthz-public"},
	} {
		req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, nil)
		if err != nil {
			return err
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.what, err))
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		switch {
		case resp.StatusCode != c.want:
			errs = append(errs, fmt.Errorf("%s: %s %s got %d %q, want %d", c.what, c.method, c.path, resp.StatusCode, body, c.want))
		case c.body != "" && string(body) != c.body:
			errs = append(errs, fmt.Errorf("%s: %s %s answered %q, want the upstream's %q", c.what, c.method, c.path, body, c.body))
		default:
			t.Logf("%s: %s %s → %d", c.what, c.method, c.path, resp.StatusCode)
		}
	}
	// The upstream served the requests above, on the pod's loopback only.
	upstream := net.JoinHostPort(podIP, strconv.Itoa(upstreamPort))
	if conn, err := net.DialTimeout("tcp", upstream, 3*time.Second); err == nil {
		_ = conn.Close()
		errs = append(errs, fmt.Errorf("connected to the upstream at %s from outside the pod, bypassing the proxy", upstream))
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		errs = append(errs, fmt.Errorf("dial the upstream at %s: %w, want connection refused", upstream, err))
	} else {
		t.Logf("the upstream at %s from outside the pod: %v", upstream, err)
	}
	return errors.Join(errs...)
}

// checkSidecarRemoved: after destroy, the Deployment's template is the
// user's again (no init containers, volumes or annotation of kmshealth,
// the same containers), and it has rolled: one Ready pod without the
// sidecar, whose proxy port refuses connections.
func checkSidecarRemoved(ns, name string, selector map[string]string, userContainers []corev1.Container) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		dep, err := env.Clientset().AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		spec := dep.Spec.Template.Spec
		switch {
		case len(spec.InitContainers) > 0:
			return fmt.Errorf("Deployment %s/%s keeps init containers after destroy: %+v", ns, name, spec.InitContainers)
		case len(spec.Volumes) > 0:
			return fmt.Errorf("Deployment %s/%s keeps volumes after destroy: %+v", ns, name, spec.Volumes)
		case dep.Spec.Template.Annotations[rbacproxy.ConfigHashAnnotation] != "":
			return fmt.Errorf("Deployment %s/%s keeps the annotation %s after destroy", ns, name, rbacproxy.ConfigHashAnnotation)
		}
		if err := checkUserContainers(ns, name, userContainers); err != nil {
			return err
		}
		pod, err := waitOnePod(ctx, ns, selector, "without the rbac proxy sidecar", func(p *corev1.Pod) bool {
			return len(p.Spec.InitContainers) == 0 && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
		})
		if err != nil {
			return err
		}
		proxy := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(rbacproxy.DefaultListenPort)))
		if conn, err := net.DialTimeout("tcp", proxy, 3*time.Second); err == nil {
			_ = conn.Close()
			return fmt.Errorf("pod %s still serves the proxy port %s after destroy", pod.Name, proxy)
		}
		return nil
	}
}
