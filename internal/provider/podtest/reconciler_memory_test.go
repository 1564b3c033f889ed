package podtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// documentedMaxKept is what the default memory_limit holds with 2×
// headroom: APIServices, each with its own source.
const documentedMaxKept = reconcilerinstall.MaxDocumentedKept

// TestAccPod_reconcilerDocumentedMaximum: the reconciler pods, at the
// default memory_limit, keep the documented maximum of APIServices (each
// with its own source ConfigMap) without a restart: every caBundle is
// written, and each container's memory stays under the limit.
func TestAccPod_reconcilerDocumentedMaximum(t *testing.T) {
	t.Parallel()
	node := mustNode(t)
	ctx := context.Background()
	ns, srcNS := "pod-reconciler-max", "pod-reconciler-max-src"
	core := env.Clientset().CoreV1()
	for _, n := range []string{ns, srcNS} {
		if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := testpki.CertPEM("ca", testpki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]string, documentedMaxKept)
	for i := range groups {
		if _, err := core.ConfigMaps(srcNS).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ca-%d", i)},
			Data:       map[string]string{"ca.crt": string(ca)},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		groups[i] = fmt.Sprintf("m%d.podmax.example.com", i)
	}
	names := createAPIServices(t, "documented-maximum", groups)
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_reconciler" "this" {
  namespace  = %q
  image      = %q
  ca_bundles = { for i in range(%d) : "v1.m${i}.podmax.example.com" => "ConfigMap/%s/ca-${i}/ca.crt" }
  timeouts {
    create = "5m"
  }
}
`, ns, node.Image, documentedMaxKept, srcNS)
	selector := map[string]string{install.NameLabel: reconcilerinstall.NameValue}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("kmshealth_reconciler.this", "memory_limit", reconcilerinstall.DefaultMemoryLimit),
				checkPodsReady(ns, selector, 2),
				checkAllBundles(t, names, ca),
				checkUnderLimit(t, node, ns, selector),
			),
		}},
	})
}

// checkAllBundles watches the APIServices until every one of names holds
// want: the leader's first pass over the documented maximum is done.
func checkAllBundles(t *testing.T, names []string, want []byte) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		c := aggregator.NewForConfigOrDie(env.RESTConfig()).ApiregistrationV1().APIServices()
		kept := make(map[string]bool, len(names))
		for _, n := range names {
			kept[n] = true
		}
		matched := map[string]bool{}
		note := func(o any, deleted bool) bool {
			s, ok := o.(*apiregv1.APIService)
			if ok && kept[s.Name] {
				if !deleted && bytes.Equal(bytes.TrimSpace(s.Spec.CABundle), bytes.TrimSpace(want)) {
					matched[s.Name] = true
				} else {
					delete(matched, s.Name)
				}
			}
			return len(matched) == len(names)
		}
		lw := &cache.ListWatch{
			ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) { return c.List(ctx, o) },
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, o) },
		}
		_, err := watchtools.UntilWithSync(ctx, lw, &apiregv1.APIService{}, func(s cache.Store) (bool, error) {
			all := false
			for _, o := range s.List() {
				all = note(o, false)
			}
			return all, nil
		}, func(e watch.Event) (bool, error) {
			return note(e.Object, e.Type == watch.Deleted), nil
		})
		if err != nil {
			return fmt.Errorf("not every one of %d APIServices got its caBundle within 5 minutes: %w", len(names), err)
		}
		t.Logf("%d APIServices kept by the reconciler pod within %s", len(names), time.Since(start).Round(time.Second))
		return nil
	}
}

// checkUnderLimit: no reconciler container has restarted (an OOM kill
// restarts it), and each one's memory, as the node's kernel sees it, is
// under the default limit; the figures are logged for the sizing table.
func checkUnderLimit(t *testing.T, node *testenv.Node, namespace string, selector map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		limit := apiresource.MustParse(reconcilerinstall.DefaultMemoryLimit)
		pods, err := runningPods(ctx, namespace, selector)
		if err != nil {
			return err
		}
		for i := range pods {
			for _, cs := range pods[i].Status.ContainerStatuses {
				if cs.RestartCount > 0 {
					return fmt.Errorf("reconciler pod %s: container %s restarted %d times (last: %+v)", pods[i].Name, cs.Name, cs.RestartCount, cs.LastTerminationState.Terminated)
				}
			}
			p, err := node.ContainerProcess(ctx, &pods[i], reconcilerinstall.ContainerName)
			if err != nil {
				return err
			}
			rss, err := devenv.RSS(p.PID)
			if err != nil {
				return err
			}
			t.Logf("reconciler pod %s keeping %d APIServices: %s; container working set %.1f MiB (limit %s)",
				pods[i].Name, documentedMaxKept, rss, float64(p.WorkingSet)/(1<<20), reconcilerinstall.DefaultMemoryLimit)
			if p.WorkingSet >= uint64(limit.Value()) || p.VmRSS >= uint64(limit.Value()) {
				return fmt.Errorf("reconciler pod %s: working set %d, VmRSS %d bytes: not under the default limit %s", pods[i].Name, p.WorkingSet, p.VmRSS, reconcilerinstall.DefaultMemoryLimit)
			}
		}
		return nil
	}
}
