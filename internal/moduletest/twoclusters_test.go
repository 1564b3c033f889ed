package moduletest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// TestAccModule_twoClusters applies a platform repo's root module
// (testdata/two-clusters) that calls modules/cluster-bootstrap once per
// cluster through two provider aliases pointing at two real API servers,
// with a map of APIServices each: the plan right after apply is empty, an
// out-of-band change on either cluster shows in the next plan (on that
// cluster's module only) and the apply restores it, the per-cluster KMS
// health gates the caller's key rotation, and destroy leaves nothing of ours
// behind on either cluster.
func TestAccModule_twoClusters(t *testing.T) {
	acceptance(t)
	const ns, web = "platform", "frontend"
	apis := []string{"v1.packages.example.kmshealth.io", "v1.metrics.example.kmshealth.io"}
	clusters := []*cluster{{name: "east", env: east}, {name: "west", env: west}}
	for _, c := range clusters {
		c.prepare(t, ns, web, apis)
	}

	providerDir := buildProvider(t)
	work := t.TempDir()
	copyTree(t, moduleDir(), filepath.Join(work, "modules", "cluster-bootstrap"))
	copyTree(t, filepath.Join("testdata", "two-clusters"), filepath.Join(work, "caller"))
	vars := map[string]any{"namespace": ns, "web_deployment": web}
	for _, c := range clusters {
		vars[c.name] = map[string]any{"kubeconfig": c.env.Kubeconfig, "apiservices": c.cas}
	}
	writeJSON(t, filepath.Join(work, "caller", "test.auto.tfvars.json"), vars)
	tf := newCLI(t, accCLIPath(t), filepath.Join(work, "caller"), providerDir)

	// The module is a local path: get records it, nothing is downloaded.
	tf.must(0, "get", "-no-color")
	tf.must(0, "apply", "-auto-approve", "-input=false", "-no-color")
	outs := map[string]*bootstrapOutputs{}
	tf.outputs(map[string]any{"east": ptr(outs, "east"), "west": ptr(outs, "west")})
	for _, c := range clusters {
		c.checkApplied(t, outs[c.name], ns, web, apis)
	}
	if outs["east"].CABundles[apis[0]].Fingerprint == outs["west"].CABundles[apis[0]].Fingerprint {
		t.Errorf("east and west report the same caBundle for %s: each alias should reach its own cluster", apis[0])
	}
	tf.must(0, "plan", "-detailed-exitcode", "-input=false", "-no-color")

	// Out of band: an old installer overwrites a caBundle on east; someone
	// edits the TLS profile and drops a rollout target's hash on west.
	eastAPIs := clusters[0].aggregator(t).ApiregistrationV1().APIServices()
	svc, err := eastAPIs.Get(t.Context(), apis[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.CABundle = testpki.MustCertPEM("a stale CA from an old installer", testpki.Options{})
	if _, err := eastAPIs.Update(t.Context(), svc, metav1.UpdateOptions{FieldManager: "legacy-installer"}); err != nil {
		t.Fatal(err)
	}
	westCore := west.Clientset()
	if _, err := westCore.CoreV1().ConfigMaps(ns).Patch(t.Context(), "tls-profile", types.MergePatchType,
		[]byte(`{"data":{"profile.json":"{\"type\":\"Old\"}"}}`), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	out := tf.must(2, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	for _, want := range []string{
		fmt.Sprintf(`# module.east.kmshealth_apiservice_cabundle.this["%s"] will be updated in-place`, apis[0]),
		`# module.west[0].kmshealth_tls_profile_configmap.this["web"] will be updated in-place`,
		"Plan: 0 to add, 2 to change, 0 to destroy.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan after out-of-band changes does not say %q", want)
		}
	}
	tf.must(0, "apply", "-auto-approve", "-input=false", "-no-color")
	clusters[0].checkApplied(t, outs["east"], ns, web, apis)
	clusters[1].checkApplied(t, outs["west"], ns, web, apis)
	tf.must(0, "plan", "-detailed-exitcode", "-input=false", "-no-color")

	// KMS health, per cluster: a real reporter process per cluster's
	// control-plane node, probing a real KMS v2 plugin; west's plugin has
	// lost its backend.
	bin := filepath.Join(providerDir, "terraform-provider-kmshealth")
	clusters[0].startNode(t, bin, "east-cp-1", "kek-east-1", "ok")
	clusters[1].startNode(t, bin, "west-cp-1", "kek-west-1", "kms backend unreachable")
	out = tf.must(0, "apply", "-auto-approve", "-input=false", "-no-color")
	tf.outputs(map[string]any{"east": ptr(outs, "east"), "west": ptr(outs, "west")})
	if e := outs["east"]; !e.RotationReady || len(e.KMSProblems) != 0 || e.KMSNodes["east-cp-1"].Status != "healthy" ||
		len(e.KMSNodes["east-cp-1"].Plugins) != 1 || e.KMSNodes["east-cp-1"].Plugins[0].KekID != "kek-east-1" {
		t.Errorf("east: want rotation_ready with east-cp-1 healthy on kek-east-1, got %+v", e)
	}
	if w := outs["west"]; w.RotationReady || w.KMSNodes["west-cp-1"].Status != "unhealthy" ||
		!slices.ContainsFunc(w.KMSProblems, func(p string) bool { return strings.Contains(p, "west-cp-1") }) {
		t.Errorf("west: want not rotation_ready, west-cp-1 unhealthy and named in kms_problems, got %+v", w)
	}
	// The README's check block: a warning for west only.
	if !wrapped("west: a key rotation would be blocked").MatchString(out) || wrapped("east: a key rotation would be blocked").MatchString(out) {
		t.Errorf("apply should warn through west's check block only")
	}
	// Reports keep arriving every 5s; the outputs leave probe times out, so
	// an unchanged cluster still plans nothing.
	tf.must(0, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	// The caller's key rotation, gated on each cluster's rotation_ready.
	out = tf.must(2, "plan", "-detailed-exitcode", "-input=false", "-no-color", "-var", "rotate_east_kek_to=kek-east-2")
	if !strings.Contains(out, "# terraform_data.rotate_east_kek[0] will be created") {
		t.Errorf("east's rotation should pass its gate")
	}
	out = tf.must(1, "plan", "-detailed-exitcode", "-input=false", "-no-color", "-var", "rotate_west_kek_to=kek-west-2")
	if !wrapped(`west: KMS plugins are not ready for key rotation: .*west-cp-1`).MatchString(out) {
		t.Errorf("west's rotation should stop at its gate, naming the node")
	}

	tf.must(0, "destroy", "-auto-approve", "-input=false", "-no-color")
	if _, state, _ := tf.exec(t.Context(), "state", "list"); strings.TrimSpace(state) != "" {
		t.Errorf("state after destroy: %s", state)
	}
	for _, c := range clusters {
		c.checkClean(t, ns, web, apis)
	}
}

// bootstrapOutputs is what the module outputs, as a caller reads them.
type bootstrapOutputs struct {
	RotationReady bool     `json:"rotation_ready"`
	KMSHealthy    bool     `json:"kms_healthy"`
	KMSProblems   []string `json:"kms_problems"`
	KMSNodes      map[string]struct {
		Status  string `json:"status"`
		Stale   bool   `json:"stale"`
		Problem string `json:"problem"`
		Plugins []struct {
			KeyID  string `json:"key_id"`
			KekID  string `json:"kek_id"`
			Status string `json:"status"`
		} `json:"plugins"`
	} `json:"kms_nodes"`
	CABundles map[string]struct {
		Fingerprint      string `json:"fingerprint_sha256"`
		NotAfter         string `json:"not_after"`
		CertificateCount int    `json:"certificate_count"`
		Source           string `json:"source"`
	} `json:"ca_bundles"`
	TLSProfiles map[string]struct {
		Hash          string `json:"hash"`
		ConfigMap     string `json:"configmap"`
		MinTLSVersion string `json:"min_tls_version"`
	} `json:"tls_profiles"`
	RBACProxySidecars map[string]struct {
		ServiceAccount string `json:"service_account"`
		ConfigHash     string `json:"config_hash"`
		ListenPort     int    `json:"listen_port"`
	} `json:"rbac_proxy_sidecars"`
	ReconcilerMetricsService string `json:"reconciler_metrics_service"`
	KMSTarget                string `json:"kms_target"`
}

// ptr returns a fresh value for key in m, for cli.outputs to fill.
func ptr(m map[string]*bootstrapOutputs, key string) *bootstrapOutputs {
	m[key] = &bootstrapOutputs{}
	return m[key]
}

// cluster is one of the caller's clusters and what it already runs.
type cluster struct {
	name string
	env  *testenv.Env
	cas  map[string]string // APIService name → the CA PEM of its server
}

// aggregator is a client of e's APIServices.
func (c *cluster) aggregator(t *testing.T) aggregator.Interface {
	t.Helper()
	a, err := aggregator.NewForConfig(c.env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// prepare creates what the cluster has before the platform team applies
// the module: the namespace, a web Deployment that mounts the TLS profile,
// and the aggregated APIServices (pointing at Services that need not exist:
// no kubelet runs here, only the objects matter), each with its own CA.
func (c *cluster) prepare(t *testing.T, ns, web string, apis []string) {
	t.Helper()
	ctx := t.Context()
	core := c.env.Clientset()
	if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	labels := map[string]string{"app": web}
	if _, err := core.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: web},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "tls-profile", MountPath: "/etc/tls-profile", ReadOnly: true}}}},
					Volumes: []corev1.Volume{{Name: "tls-profile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "tls-profile"}}}}},
				},
			},
		},
	}, metav1.CreateOptions{FieldManager: "web-team"}); err != nil {
		t.Fatal(err)
	}
	c.cas = map[string]string{}
	apiservices := c.aggregator(t).ApiregistrationV1().APIServices()
	port := int32(443)
	for _, name := range apis {
		version, group, _ := strings.Cut(name, ".")
		if _, err := apiservices.Create(ctx, &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiregv1.APIServiceSpec{
				Group: group, Version: version, GroupPriorityMinimum: 1000, VersionPriority: 15,
				Service: &apiregv1.ServiceReference{Namespace: "default", Name: strings.Split(group, ".")[0] + "-api", Port: &port},
			},
		}, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			err := apiservices.Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("%s: delete APIService %s: %v", c.name, name, err)
			}
		})
		c.cas[name] = string(testpki.MustCertPEM(fmt.Sprintf("%s %s CA", c.name, group), testpki.Options{}))
	}
}

// checkApplied checks the live cluster against what the module says it
// made: each caBundle is this cluster's CA with the fingerprint the output
// gives, kept in kmshealth's ConfigMap; the TLS profile's hash and the
// kube-rbac-proxy sidecar are on the web Deployment; the reconciler and the
// reporter are installed.
func (c *cluster) checkApplied(t *testing.T, out *bootstrapOutputs, ns, web string, apis []string) {
	t.Helper()
	ctx := t.Context()
	if len(out.CABundles) != len(apis) {
		t.Errorf("%s: ca_bundles has %d entries, want %d: %+v", c.name, len(out.CABundles), len(apis), out.CABundles)
	}
	for _, name := range apis {
		svc, err := c.aggregator(t).ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := out.CABundles[name]
		if string(svc.Spec.CABundle) != c.cas[name] {
			t.Errorf("%s: APIService %s holds another caBundle than this cluster's CA", c.name, name)
		}
		if fp := cabundle.Fingerprint(svc.Spec.CABundle); got.Fingerprint != fp {
			t.Errorf("%s: ca_bundles[%q].fingerprint_sha256 = %q, live %q", c.name, name, got.Fingerprint, fp)
		}
		if want := "ConfigMap/kube-system/kmshealth-cabundle-" + name + "/ca.crt"; got.Source != want || svc.Annotations[cabundle.SourceAnnotation] != want {
			t.Errorf("%s: %s: source output %q, annotation %q, want %q", c.name, name, got.Source, svc.Annotations[cabundle.SourceAnnotation], want)
		}
		if notAfter, err := time.Parse(time.RFC3339, got.NotAfter); err != nil || !notAfter.After(time.Now()) {
			t.Errorf("%s: ca_bundles[%q].not_after = %q, want a future RFC 3339 time", c.name, name, got.NotAfter)
		}
	}
	core := c.env.Clientset()
	profile := out.TLSProfiles["web"]
	d, err := core.AppsV1().Deployments(ns).Get(ctx, web, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := d.Spec.Template.Annotations[tlsprofile.HashAnnotation]; len(profile.Hash) != 64 || h != profile.Hash {
		t.Errorf("%s: Deployment %s/%s pod template hash %q, tls_profiles.web.hash %q", c.name, ns, web, h, profile.Hash)
	}
	proxy := out.RBACProxySidecars["Deployment/"+ns+"/"+web]
	if h := d.Spec.Template.Annotations[rbacproxy.ConfigHashAnnotation]; len(proxy.ConfigHash) != 64 || h != proxy.ConfigHash || proxy.ListenPort != 8443 {
		t.Errorf("%s: Deployment %s/%s pod template rbac proxy config hash %q, rbac_proxy_sidecars entry %+v", c.name, ns, web, h, proxy)
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.InitContainers, func(c corev1.Container) bool {
		return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}) {
		t.Errorf("%s: Deployment %s/%s has no native sidecar (an init container with restartPolicy Always)", c.name, ns, web)
	}
	if profile.ConfigMap != ns+"/tls-profile" || profile.MinTLSVersion != "VersionTLS12" {
		t.Errorf("%s: tls_profiles.web = %+v, want the Intermediate profile in %s/tls-profile", c.name, profile, ns)
	}
	if out.ReconcilerMetricsService != "kmshealth-reconciler-metrics."+ns+".svc" {
		t.Errorf("%s: reconciler_metrics_service = %q", c.name, out.ReconcilerMetricsService)
	}
	if _, err := core.AppsV1().Deployments(ns).Get(ctx, "kmshealth-reconciler", metav1.GetOptions{}); err != nil {
		t.Errorf("%s: the reconciler's Deployment: %v", c.name, err)
	}
	if _, err := core.AppsV1().DaemonSets("kube-system").Get(ctx, "kmshealth-reporter", metav1.GetOptions{}); err != nil {
		t.Errorf("%s: the reporter's DaemonSet: %v", c.name, err)
	}
	if out.KMSTarget != kmshealth.DefaultTarget().String() {
		t.Errorf("%s: kms_target = %q", c.name, out.KMSTarget)
	}
}

// startNode plays one control-plane node of the cluster: a KMS v2 plugin
// answering healthz on its socket and the reporter (the provider binary in
// report mode) probing it, and waits for its first report.
func (c *cluster) startNode(t *testing.T, bin, node, kek, healthz string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "kmsh-node-") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	plugin, err := kmstest.Start(filepath.Join(dir, "kms-1.sock"), kek)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plugin.Stop)
	plugin.SetHealthz(healthz)
	log := &devenv.SyncBuffer{}
	r, err := devenv.StartReportInDir(t.Context(), bin, log, dir, "--kubeconfig="+c.env.Kubeconfig, "--node-name="+node,
		"--interval="+kmshealth.MinInterval.String(), "--read-timeout=2s", "--write-timeout=3s")
	if err != nil {
		t.Fatalf("%s: start the reporter of %s: %v\n%s", c.name, node, err, log)
	}
	t.Cleanup(r.Stop)
	want := metav1.ConditionTrue
	if healthz != "ok" {
		want = metav1.ConditionFalse
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(c.env.RESTConfig())
	if err := kmshealth.WaitForCondition(ctx, dyn, kmshealth.DefaultTarget(), kmshealth.ReporterConditionType(node), want); err != nil {
		t.Fatalf("%s: no %s report from %s: %v\nreporter log:\n%s", c.name, want, node, err, log)
	}
}

// checkClean checks that destroy left nothing of ours on the cluster: no
// object labelled as kmshealth's, no CRD, every caBundle and its annotation
// released (the installer's APIService itself kept), the web Deployment
// back as its team wrote it (no hash annotation, no sidecar), the TLS
// profile and the inline bundles' ConfigMaps gone.
func (c *cluster) checkClean(t *testing.T, ns, web string, apis []string) {
	t.Helper()
	ctx := t.Context()
	var left []string
	add := func(what string, err error) {
		if !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("%s (err=%v)", what, err))
		}
	}
	for _, name := range apis {
		svc, err := c.aggregator(t).ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: the installer's APIService %s: %v", c.name, name, err)
		}
		if len(svc.Spec.CABundle) > 0 || svc.Annotations[cabundle.SourceAnnotation] != "" {
			left = append(left, "caBundle or annotation of APIService "+name)
		}
		for _, mf := range svc.ManagedFields {
			if mf.Manager == cabundle.DefaultFieldManager {
				left = append(left, "field manager kmshealth on APIService "+name)
			}
		}
		add("ConfigMap kube-system/kmshealth-cabundle-"+name, errOf(c.env.Clientset().CoreV1().ConfigMaps("kube-system").Get(ctx, "kmshealth-cabundle-"+name, metav1.GetOptions{})))
	}
	core := c.env.Clientset()
	add("ConfigMap "+ns+"/tls-profile", errOf(core.CoreV1().ConfigMaps(ns).Get(ctx, "tls-profile", metav1.GetOptions{})))
	d, err := core.AppsV1().Deployments(ns).Get(ctx, web, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the web Deployment: %v", c.name, err)
	}
	for _, a := range []string{tlsprofile.HashAnnotation, rbacproxy.ConfigHashAnnotation} {
		if v, ok := d.Spec.Template.Annotations[a]; ok {
			left = append(left, fmt.Sprintf("annotation %s=%s on Deployment %s", a, v, web))
		}
	}
	if n := len(d.Spec.Template.Spec.InitContainers); n > 0 {
		left = append(left, fmt.Sprintf("%d init container(s) (a sidecar) in Deployment %s", n, web))
	}
	dyn := dynamic.NewForConfigOrDie(c.env.RESTConfig())
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	add("CRD kmshealths.kmshealth.io", errOf(dyn.Resource(crds).Get(ctx, "kmshealths.kmshealth.io", metav1.GetOptions{})))
	ours := metav1.ListOptions{LabelSelector: cabundle.ManagedByLabel + "=kmshealth"}
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "serviceaccounts"}, {Version: "v1", Resource: "services"},
		{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "daemonsets"},
		{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	} {
		list, err := dyn.Resource(gvr).List(ctx, ours)
		if err != nil {
			t.Fatalf("%s: list %s: %v", c.name, gvr.Resource, err)
		}
		for _, o := range list.Items {
			left = append(left, fmt.Sprintf("%s %s/%s", gvr.Resource, o.GetNamespace(), o.GetName()))
		}
	}
	if len(left) > 0 {
		t.Errorf("%s: left behind by destroy: %s", c.name, strings.Join(left, ", "))
	}
}

// errOf keeps the error of a (value, error) call.
func errOf[T any](_ T, err error) error { return err }

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
