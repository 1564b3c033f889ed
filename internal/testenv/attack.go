package testenv

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

// Attack helpers: tokens of a ServiceAccount bound to a pod on a node, as
// the kubelet requests them, and checks that the API server itself refused
// a request. They live here, beside the test control plane, so each
// installer's attack tests use the same ones.

// PodToken returns a token of ServiceAccount namespace/sa bound to a Pod
// assigned to node, as the kubelet requests for a pod's projected volume:
// the API server adds the user extra authentication.kubernetes.io/node-name.
// The Pod (which never runs: it only anchors the token) is deleted when
// the test ends; the Node must exist.
func PodToken(t testing.TB, core kubernetes.Interface, namespace, sa, node string) string {
	t.Helper()
	ctx := context.Background()
	pod, err := core.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: sa + "-", Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName: node, ServiceAccountName: sa, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "c", Image: "unused"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod for a bound token: %v", err)
	}
	t.Cleanup(func() {
		_ = core.CoreV1().Pods(namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	ttl := int64(600)
	tr, err := core.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &ttl,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s bound to pod %s: %v", namespace, sa, pod.Name, err)
	}
	return tr.Status.Token
}

// AsToken is cfg authenticating with token instead of its own credentials.
func AsToken(cfg *rest.Config, token string) *rest.Config {
	out := rest.AnonymousClientConfig(cfg)
	out.BearerToken = token
	return out
}

// Denied is what a refused request must show: Forbidden, and a message
// with every part.
func Denied(t testing.TB, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want denied", what)
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want Forbidden", what, err)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: denied with %q, want it to say %q", what, err, p)
			return
		}
	}
	t.Logf("%s: denied: %v", what, err)
}

// PolicyDenial is the start of the API server's message when an
// admission policy denies.
func PolicyDenial(policy string) string {
	return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", policy, policy)
}

// WaitForPolicy retries try until the API server denies it through
// policy: a new policy takes effect about a second after it is written,
// and the API server offers no signal of that.
func WaitForPolicy(t testing.TB, policy string, try func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = try()
		return last != nil && strings.Contains(last.Error(), PolicyDenial(policy)), nil
	})
	if err != nil {
		t.Fatalf("policy %s never took effect (last result: %v)", policy, last)
	}
}

// ServiceAccountToken returns a token of ServiceAccount namespace/sa bound
// to nothing: no pod, no node.
func ServiceAccountToken(t testing.TB, core kubernetes.Interface, namespace, sa string) string {
	t.Helper()
	tr, err := core.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", namespace, sa, err)
	}
	return tr.Status.Token
}

// MetricsAccess checks who may scrape url, a mode's /metrics: no token is
// 401, a ServiceAccount whose RBAC does not allow get on the /metrics
// non-resource URL is 403, and one that is allowed gets 200 and a body with
// series. The ServiceAccounts, ClusterRole and binding it makes (named
// after prefix) are deleted when the test ends.
func MetricsAccess(t *testing.T, core kubernetes.Interface, url, prefix, series string) {
	t.Helper()
	ctx := context.Background()
	token := func(sa string) string {
		if _, err := core.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = core.CoreV1().ServiceAccounts("default").Delete(ctx, sa, metav1.DeleteOptions{}) })
		return ServiceAccountToken(t, core, "default", sa)
	}
	denied, allowed := token(prefix+"-denied"), token(prefix+"-reader")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: prefix + "-reader"}}}
	if _, err := core.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = core.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("metrics served at %s, want HTTPS", url)
	}
	for _, tt := range []struct {
		who   string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without access", denied, http.StatusForbidden},
		{"a ServiceAccount allowed get on /metrics", allowed, http.StatusOK},
	} {
		code, body, err := devenv.Scrape(url, tt.token)
		if err != nil {
			t.Fatal(err)
		}
		if code != tt.want {
			t.Errorf("%s: %d, want %d (%.100s)", tt.who, code, tt.want, body)
		}
		if code == http.StatusOK && !strings.Contains(string(body), series) {
			t.Errorf("%s: the series %s is missing", tt.who, series)
		}
	}
}
