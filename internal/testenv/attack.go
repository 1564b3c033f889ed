package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
