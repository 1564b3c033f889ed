// Package podtest applies kmshealth_reconciler, kmshealth_reporter,
// kmshealth_tls_profile_configmap and kmshealth_rbac_proxy_sidecar with
// Terraform (or OpenTofu) onto the test bed's real node and proves them the
// way they run in production: as pods of real images, with in-cluster
// configuration, projected tokens, the hostPath socket mount and the
// securityContext they declare, as the kernel sees it.
package podtest

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/provider"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

var env *testenv.Env

// TestMain runs the package in the node's namespaces (root, Linux) when
// acceptance tests are asked for; without TF_ACC there is nothing to run.
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") == "" {
		os.Exit(m.Run())
	}
	testenv.MainWithNode(m, func(e *testenv.Env) { env = e })
}

var protoV6 = map[string]func() (tfprotov6.ProviderServer, error){
	"kmshealth": providerserver.NewProtocol6WithError(provider.New("test")()),
}

func providerBlock() string {
	return fmt.Sprintf("provider \"kmshealth\" {\n  config_path = %q\n}\n", env.Kubeconfig)
}

// mustNode starts the node (once per package) or fails the test.
func mustNode(t *testing.T) *testenv.Node {
	t.Helper()
	if env == nil {
		t.Fatal("no test bed: run with TF_ACC=1 (scripts/test-acc.sh), as root on Linux")
	}
	n, err := env.Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runningPods lists the Running pods matching selector in namespace.
func runningPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	list, err := env.Clientset().CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// checkHardened reads, from the kernel, what the pods' container processes
// run as: the given uid, no capabilities at all (effective and bounding),
// no privilege escalation, a seccomp filter (RuntimeDefault), and a
// read-only root file system.
func checkHardened(node *testenv.Node, namespace string, selector map[string]string, container, uid string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		pods, err := runningPods(ctx, namespace, selector)
		if err != nil {
			return err
		}
		if len(pods) != want {
			return fmt.Errorf("%d running pods in %s, want %d", len(pods), namespace, want)
		}
		for i := range pods {
			p, err := node.ContainerProcess(ctx, &pods[i], container)
			if err != nil {
				return err
			}
			const none = "0000000000000000"
			switch {
			case p.UID != uid:
				return fmt.Errorf("pod %s runs as uid %s, want %s", pods[i].Name, p.UID, uid)
			case p.CapEff != none || p.CapBnd != none:
				return fmt.Errorf("pod %s has capabilities: effective %s, bounding %s", pods[i].Name, p.CapEff, p.CapBnd)
			case !p.NoNewPrivs:
				return fmt.Errorf("pod %s may gain privileges (NoNewPrivs 0)", pods[i].Name)
			case p.Seccomp != 2:
				return fmt.Errorf("pod %s has seccomp mode %d, want 2 (filter: RuntimeDefault)", pods[i].Name, p.Seccomp)
			case !p.RootRO:
				return fmt.Errorf("pod %s has a writable root file system", pods[i].Name)
			}
		}
		return nil
	}
}

// createAPIService creates an aggregated APIService v1.<group> (its Service
// need not exist: only the object matters) and deletes it at the end.
func createAPIService(t *testing.T, group string) string {
	t.Helper()
	return createAPIServices(t, "", []string{group})[0]
}

// createAPIServices creates an aggregated APIService v1.<group> for each
// of groups, labelled set=<set> when set is not empty, and deletes them at
// the end: a labelled set with one DeleteCollection, so that the documented
// maximum's thousand are one request, not a thousand.
func createAPIServices(t *testing.T, set string, groups []string) []string {
	t.Helper()
	c := aggregator.NewForConfigOrDie(env.RESTConfig()).ApiregistrationV1().APIServices()
	port := int32(443)
	var labels map[string]string
	if set != "" {
		labels = map[string]string{apiServiceSetLabel: set}
		// Registered before the first create, so that a create failing
		// half-way still deletes the ones before it.
		t.Cleanup(func() {
			sel := metav1.ListOptions{LabelSelector: apiServiceSetLabel + "=" + set}
			if err := c.DeleteCollection(context.Background(), metav1.DeleteOptions{}, sel); err != nil {
				t.Errorf("delete the APIServices labelled %s: %v", sel.LabelSelector, err)
			}
		})
	}
	names := make([]string, len(groups))
	for i, group := range groups {
		svc := &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: "v1." + group, Labels: labels},
			Spec: apiregv1.APIServiceSpec{
				Group: group, Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
				Service: &apiregv1.ServiceReference{Namespace: "default", Name: "api", Port: &port},
			},
		}
		if _, err := c.Create(context.Background(), svc, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
			t.Fatalf("create APIService: %v", err)
		}
		names[i] = svc.Name
		if set == "" {
			t.Cleanup(func() {
				if err := c.Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete APIService %s: %v", svc.Name, err)
				}
			})
		}
	}
	return names
}

// apiServiceSetLabel labels the APIServices createAPIServices creates as
// one set.
const apiServiceSetLabel = "podtest.kmshealth.test/set"

// checkDriftRestored has someone else overwrite the APIService's caBundle
// and watches until the reconciler pod has put the managed one back.
func checkDriftRestored(t *testing.T, api, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := aggregator.NewForConfigOrDie(env.RESTConfig()).ApiregistrationV1().APIServices()
		cur, err := c.Get(ctx, api, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(cur.Spec.CABundle)) != strings.TrimSpace(want) {
			return fmt.Errorf("caBundle of %s is not the managed one before the drift", api)
		}
		w, err := c.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + api, ResourceVersion: cur.ResourceVersion})
		if err != nil {
			return err
		}
		defer w.Stop()
		drift, err := testpki.CertPEM("drift", testpki.Options{})
		if err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"spec":{"caBundle":%q}}`, base64.StdEncoding.EncodeToString(drift))
		start := time.Now()
		if _, err := c.Patch(ctx, api, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
			return fmt.Errorf("drift the caBundle: %w", err)
		}
		drifted := false
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified {
				continue
			}
			got := string(ev.Object.(*apiregv1.APIService).Spec.CABundle)
			switch {
			case strings.Contains(got, strings.TrimSpace(string(drift))):
				drifted = true
			case drifted && strings.TrimSpace(got) == strings.TrimSpace(want):
				t.Logf("caBundle drift on %s restored by the reconciler pod in %s", api, time.Since(start).Round(time.Millisecond))
				return nil
			}
		}
		return fmt.Errorf("caBundle drift on %s not restored within a minute (drift seen: %v)", api, drifted)
	}
}

// TestAccPod_reconciler: kmshealth_reconciler from the project's image runs
// as two pods on the node with in-cluster configuration, elects a leader,
// restores a caBundle drift, and runs as declared. An image that cannot be
// pulled fails the apply with the pod's own reason, long before the
// timeout.
func TestAccPod_reconciler(t *testing.T) {
	t.Parallel()
	node := mustNode(t)
	ctx := context.Background()
	ns, srcNS := "pod-reconciler", "pod-reconciler-src"
	core := env.Clientset().CoreV1()
	// Namespaces of the test's own: the test's APIService is unavailable (no
	// Service behind it), which would hold a deleted namespace Terminating
	// (TestAccReconciler_namespaceHeld covers that destroy).
	for _, n := range []string{ns, srcNS} {
		if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := testpki.CertPEM("ca", testpki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets(srcNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "api-ca"},
		Data:       map[string][]byte{"ca.crt": ca},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api := createAPIService(t, "podreconciler.example.com")
	config := func(image, timeout string) string {
		return providerBlock() + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "this" {
  apiservice_name = %q
  source {
    kind      = "Secret"
    namespace = %q
    name      = "api-ca"
    key       = "ca.crt"
  }
}

resource "kmshealth_reconciler" "this" {
  namespace        = %q
  image            = %q
  ca_bundles       = { (kmshealth_apiservice_cabundle.this.apiservice_name) = kmshealth_apiservice_cabundle.this.ca_bundle_source }
  timeouts {
    create = %q
    update = %q
  }
}
`, api, srcNS, ns, image, timeout, timeout)
	}
	selector := map[string]string{install.NameLabel: reconcilerinstall.NameValue}
	var failedAfter time.Duration
	var updateStart time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: config(node.Image, "3m"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("kmshealth_reconciler.this", "wait_for_rollout", "true"),
					checkPodsReady(ns, selector, 2),
					checkInCluster(ns, selector),
					checkLeader(ns, reconcilerinstall.LeaseName, selector),
					checkHardened(node, ns, selector, reconcilerinstall.ContainerName, strconv.Itoa(reconcilerinstall.RunAsUser), 2),
					checkDriftRestored(t, api, string(ca)),
				),
			},
			{
				// A tag that exists nowhere: the new pods cannot pull it.
				PreConfig:   func() { updateStart = time.Now() },
				Config:      config(strings.Replace(node.Image, ":0.0.0-node", ":no-such-tag", 1), "10m"),
				ExpectError: regexp.MustCompile(`ErrImagePull|ImagePullBackOff`),
				Check: func(*terraform.State) error {
					failedAfter = time.Since(updateStart)
					return nil
				},
			},
		},
	})
	if !updateStart.IsZero() {
		failedAfter = time.Since(updateStart)
		t.Logf("the apply with an image that cannot be pulled failed after %s (update timeout 10m)", failedAfter.Round(time.Second))
		if failedAfter > 2*time.Minute {
			t.Errorf("the apply with an image that cannot be pulled took %s to fail: it should fail on the pod's reason, not wait", failedAfter)
		}
	}
}

func checkPodsReady(namespace string, selector map[string]string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := runningPods(context.Background(), namespace, selector)
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready != want {
			return fmt.Errorf("%d pods Ready in %s, want %d", ready, namespace, want)
		}
		return nil
	}
}

// checkInCluster: the pods get no kubeconfig; they run on the projected
// ServiceAccount token and the `kubernetes` Service.
func checkInCluster(namespace string, selector map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := runningPods(context.Background(), namespace, selector)
		if err != nil {
			return err
		}
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				if slices.ContainsFunc(append(c.Args, c.Command...), func(a string) bool { return strings.Contains(a, "kubeconfig") }) {
					return fmt.Errorf("pod %s is given a kubeconfig: %q", p.Name, c.Args)
				}
			}
		}
		return nil
	}
}

// checkLeader: the leader election Lease is held by one of the pods.
func checkLeader(namespace, lease string, selector map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		// Ready pods need not have won the election yet (on a busy machine
		// it can take a few seconds more): watch the Lease until one of the
		// pods holds it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pods, err := runningPods(ctx, namespace, selector)
		if err != nil {
			return err
		}
		leases := env.Clientset().CoordinationV1().Leases(namespace)
		lw := kube.ListWatch(leases.List, leases.Watch, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", lease).String()
		})
		holder, seen := "", false
		_, err = watchtools.UntilWithSync(ctx, lw, &coordinationv1.Lease{}, nil, func(ev watch.Event) (bool, error) {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || ev.Type == watch.Deleted {
				return false, nil
			}
			seen, holder = true, ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return holder != "" && slices.ContainsFunc(pods, func(p corev1.Pod) bool { return strings.HasPrefix(holder, p.Name) }), nil
		})
		switch {
		case err == nil:
			return nil
		case !seen:
			return fmt.Errorf("leader election Lease %s/%s: none within a minute of the pods being Ready: %w", namespace, lease, err)
		default:
			return fmt.Errorf("Lease %s/%s held by %q, none of the reconciler pods: %w", namespace, lease, holder, err)
		}
	}
}

// TestAccPod_reporter: the reporter DaemonSet's pod on the node probes a
// real KMS v2 plugin on the host at /var/run/kmsplugin/kms-1.sock through
// its hostPath mount, and writes its node's condition with its projected
// token under the node name from the downward API; the data source reads it
// back as healthy.
func TestAccPod_reporter(t *testing.T) {
	// Serial: it serves a KMS plugin at the node's /var/run/kmsplugin/kms-1.sock
	// and installs the cluster-scoped KMSHealth CRD, as TestAccRelease_rehearsal does.
	node := mustNode(t)
	ctx := context.Background()
	if err := os.MkdirAll("/var/run/kmsplugin", 0o755); err != nil {
		t.Fatal(err)
	}
	plugin, err := kmstest.Start(filepath.Join("/var/run/kmsplugin", "kms-1.sock"), "pod-kek-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plugin.Stop)
	ns := "pod-reporter"
	if _, err := env.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_reporter" "this" {
  namespace      = %q
  image          = %q
  probe_interval = "5s"
}

data "kmshealth_kms_plugin_health" "this" {
  depends_on      = [kmshealth_reporter.this]
  expected_nodes  = [%q]
  max_staleness   = "20s"
  wait_timeout    = "2m"
  require_healthy = true
}
`, ns, node.Image, node.Name)
	selector := map[string]string{install.NameLabel: reporterinstall.NameValue}
	const data = "data.kmshealth_kms_plugin_health.this"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(data, "healthy", "true"),
				resource.TestCheckResourceAttr(data, "nodes.#", "1"),
				resource.TestCheckResourceAttr(data, "nodes.0.name", node.Name),
				resource.TestCheckResourceAttr(data, "nodes.0.plugins.0.key_id", "1"),
				resource.TestCheckResourceAttr(data, "nodes.0.plugins.0.kek_id", "pod-kek-1"),
				resource.TestCheckResourceAttr(data, "nodes.0.plugins.0.status", "healthy"),
				checkPodsReady(ns, selector, 1),
				checkHardened(node, ns, selector, reporterinstall.ContainerName, "0", 1),
				checkReporterMemory(t, node, ns, selector),
			),
		}},
	})
}

// consumerDeployment is a Deployment of the TLS server that mounts the
// profile ConfigMap and reads it with no API call (no ServiceAccount token
// even).
func consumerDeployment(ns, name, configMap string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	no := false
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  &no,
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{
						Name: "server", Image: testenv.TLSServerImage, ImagePullPolicy: corev1.PullNever,
						// Serve only the profile this pod was rolled for (see tlsserver).
						Env: []corev1.EnvVar{{Name: "TLS_PROFILE_HASH", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
							FieldPath: "metadata.annotations['" + tlsprofile.HashAnnotation + "']"}}}},
						VolumeMounts:   []corev1.VolumeMount{{Name: "tls-profile", MountPath: "/etc/tls-profile", ReadOnly: true}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8443)}}, PeriodSeconds: 1},
					}},
					Volumes: []corev1.Volume{{Name: "tls-profile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
					}}}},
				},
			},
		},
	}
}

// waitServing watches the consumer's pods until exactly one, not being
// deleted, is Ready with hash on its template annotation, and returns it.
func waitServing(ctx context.Context, ns string, selector map[string]string, hash string) (*corev1.Pod, error) {
	return waitOnePod(ctx, ns, selector, "serving profile "+hash, func(p *corev1.Pod) bool {
		return p.Annotations[tlsprofile.HashAnnotation] == hash
	})
}

// waitOnePod watches the pods matching selector in ns, for at most two
// minutes, until there is exactly one (the rollout's old pods are gone),
// not being deleted, Ready and accepted by ok, and returns it; what says
// what was waited for.
func waitOnePod(ctx context.Context, ns string, selector map[string]string, what string, ok func(*corev1.Pod) bool) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pods := env.Clientset().CoreV1().Pods(ns)
	sel := labels.SelectorFromSet(selector).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.LabelSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	var found *corev1.Pod
	judge := func(store cache.Store) bool {
		var ready []*corev1.Pod
		all := store.List()
		for _, obj := range all {
			p := obj.(*corev1.Pod)
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil && ok(p) {
					ready = append(ready, p)
				}
			}
		}
		if len(ready) == 1 && len(all) == 1 {
			found = ready[0]
			return true
		}
		return false
	}
	var store cache.Store
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, func(s cache.Store) (bool, error) {
		store = s
		return judge(s), nil
	}, func(watch.Event) (bool, error) { return judge(store), nil })
	if err != nil {
		return nil, fmt.Errorf("no single Ready pod %s in %s: %w", what, ns, err)
	}
	return found, nil
}

// fetch connects to the pod's TLS server with at most maxVersion and
// returns what it answers: the hash of the profile it serves.
func fetch(pod *corev1.Pod, maxVersion uint16) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", net.JoinHostPort(pod.Status.PodIP, "8443"),
		&tls.Config{InsecureSkipVerify: true, MaxVersion: maxVersion}) //nolint:gosec // a throwaway self-signed certificate; the test checks versions, not identity
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	_, body, _ := strings.Cut(string(b), "\r\n\r\n")
	return body, nil
}

// TestAccPod_tlsProfile: a workload pod reads profile.json from the mounted
// ConfigMap, with no API call, and serves TLS by it (TLS 1.2 refused under
// Modern); with the API server down, its container restarts and serves
// again from the volume kubelet keeps; a profile change rolls the
// Deployment to pods carrying the new hash that accept TLS 1.2.
func TestAccPod_tlsProfile(t *testing.T) {
	// Serial: it restarts the package's one API server (the container must
	// come back while it is down), which breaks every other test's watches.
	node := mustNode(t)
	ctx := context.Background()
	ns := "pod-tls-profile"
	if _, err := env.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clientset().AppsV1().Deployments(ns).Create(ctx, consumerDeployment(ns, "consumer", "tls-profile"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	selector := map[string]string{"app": "consumer"}
	config := func(typ string) string {
		return providerBlock() + fmt.Sprintf(`
resource "kmshealth_tls_profile_configmap" "this" {
  namespace = %q
  name      = "tls-profile"
  profile {
    type = %q
  }
  rollout_targets = [{ kind = "Deployment", namespace = %q, name = "consumer" }]
}
`, ns, typ, ns)
	}
	const addr = "kmshealth_tls_profile_configmap.this"
	hashOf := func(s *terraform.State) string { return s.RootModule().Resources[addr].Primary.Attributes["hash"] }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config: config("Modern"),
				Check: func(s *terraform.State) error {
					hash := hashOf(s)
					pod, err := waitServing(ctx, ns, selector, hash)
					if err != nil {
						return fmt.Errorf("%w; kubelet: %s", err, node.NodeLog("kubelet"))
					}
					if _, err := fetch(pod, tls.VersionTLS12); err == nil {
						return errors.New("the Modern profile's server accepted a TLS 1.2 client")
					}
					if got, err := fetch(pod, tls.VersionTLS13); err != nil {
						return fmt.Errorf("TLS 1.3 client: %w", err)
					} else if got != hash {
						return fmt.Errorf("the server serves profile %q, want %s", got, hash)
					}
					// The API server down: the container is killed and
					// kubelet starts it again from the volume it keeps.
					var restarted error
					start := time.Now()
					err = env.RestartAPIServer(ctx, func() {
						restarted = restartFromCache(ctx, node, pod, hash)
						t.Logf("container killed with the API server down served profile %s again after %s", hash[:12], time.Since(start).Round(100*time.Millisecond))
					})
					if err != nil {
						return fmt.Errorf("restart the API server: %w", err)
					}
					if restarted != nil {
						return restarted
					}
					return waitRestarted(ctx, pod)
				},
			},
			{
				Config: config("Intermediate"),
				Check: func(s *terraform.State) error {
					hash := hashOf(s)
					pod, err := waitServing(ctx, ns, selector, hash)
					if err != nil {
						return err
					}
					if got, err := fetch(pod, tls.VersionTLS12); err != nil {
						return fmt.Errorf("after the rollout to Intermediate, a TLS 1.2 client: %w", err)
					} else if got != hash {
						return fmt.Errorf("after the rollout, the server serves profile %q, want %s", got, hash)
					}
					return nil
				},
			},
		},
	})
}

// restartFromCache kills the pod's container while the API server is down
// and waits (polling the port: there is no API to watch) until a new
// container process serves the same profile.
func restartFromCache(ctx context.Context, node *testenv.Node, pod *corev1.Pod, hash string) error {
	before, err := node.ContainerProcess(ctx, pod, "server")
	if err != nil {
		return err
	}
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill the server container: %w", err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if got, err := fetch(pod, tls.VersionTLS13); err == nil && got == hash {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("the server container did not come back with the API server down; kubelet: %s", node.NodeLog("kubelet"))
}

// waitRestarted watches the pod until kubelet reports its container
// restarted: the serving seen while the API server was down came from a new
// container, not the old one.
func waitRestarted(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lw := cache.NewListWatchFromClient(env.Clientset().CoreV1().RESTClient(), "pods", pod.Namespace, fields.OneTermEqualSelector("metadata.name", pod.Name))
	restarted := func(obj any) bool {
		p, ok := obj.(*corev1.Pod)
		return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, func(s cache.Store) (bool, error) {
		return slices.ContainsFunc(s.List(), restarted), nil
	}, func(ev watch.Event) (bool, error) { return restarted(ev.Object), nil })
	if err != nil {
		return fmt.Errorf("pod %s/%s never reported a container restart: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
