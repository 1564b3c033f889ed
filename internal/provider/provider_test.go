package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
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
