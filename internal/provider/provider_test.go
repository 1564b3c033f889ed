package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

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

// providerBlock points the provider at the test control plane.
func providerBlock() string {
	return fmt.Sprintf("provider \"kmshealth\" {\n  config_path = %q\n}\n", env.Kubeconfig)
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
