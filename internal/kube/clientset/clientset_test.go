package clientset_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

// The full clientsets, which the provider passes, are each one of these.
// Only here, in a test: a conversion in production code would link every
// group's typed client into the in-cluster build again.
var (
	_ clientset.Core       = (*kubernetes.Clientset)(nil)
	_ clientset.Aggregator = (*aggregator.Clientset)(nil)
	_ clientset.Extensions = (*apiextensionsclient.Clientset)(nil)
)

// env is the package's one control plane: real etcd and kube-apiserver.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, func(e *testenv.Env) { env = e })
}

// TestClientsReachTheirGroups: every group the narrow clientsets offer
// answers a real request (a wrong path or group version would be a 404).
func TestClientsReachTheirGroups(t *testing.T) {
	cfg := env.RESTConfig()
	core, err := clientset.NewCore(cfg)
	if err != nil {
		t.Fatalf("NewCore: %v", err)
	}
	agg, err := clientset.NewAggregator(cfg)
	if err != nil {
		t.Fatalf("NewAggregator: %v", err)
	}
	ext, err := clientset.NewExtensions(cfg)
	if err != nil {
		t.Fatalf("NewExtensions: %v", err)
	}
	list := metav1.ListOptions{Limit: 1}
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"core/v1 namespaces", func(ctx context.Context) error {
			_, err := core.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			return err
		}},
		{"apps/v1 deployments", func(ctx context.Context) error {
			_, err := core.AppsV1().Deployments("default").List(ctx, list)
			return err
		}},
		{"admissionregistration.k8s.io/v1 validatingwebhookconfigurations", func(ctx context.Context) error {
			_, err := core.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, list)
			return err
		}},
		{"discovery", func(context.Context) error {
			_, err := core.Discovery().ServerVersion()
			return err
		}},
		{"apiregistration.k8s.io/v1 apiservices", func(ctx context.Context) error {
			_, err := agg.ApiregistrationV1().APIServices().Get(ctx, "v1.", metav1.GetOptions{})
			return err
		}},
		{"apiextensions.k8s.io/v1 customresourcedefinitions", func(ctx context.Context) error {
			_, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, list)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := tt.call(ctx); err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		})
	}
}

// TestClientsRefuseQPSWithoutBurst: as the generated clientsets do, a rate
// limit without a burst is an error that names both, not a silent default.
func TestClientsRefuseQPSWithoutBurst(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: 5}
	tests := []struct {
		name string
		make func(*rest.Config) error
	}{
		{"NewCore", func(c *rest.Config) error { _, err := clientset.NewCore(c); return err }},
		{"NewAggregator", func(c *rest.Config) error { _, err := clientset.NewAggregator(c); return err }},
		{"NewExtensions", func(c *rest.Config) error { _, err := clientset.NewExtensions(c); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.make(cfg)
			if err == nil || !strings.Contains(err.Error(), "Burst") || !strings.Contains(err.Error(), "QPS") {
				t.Errorf("%s with QPS 5 and Burst 0: got %v, want an error naming Burst and QPS", tt.name, err)
			}
		})
	}
}
