// Command demo is `make demo`: it starts the local control plane (etcd,
// kube-apiserver, KMS v2 plugin), builds the provider, applies
// examples/cluster-bootstrap (a root module calling
// modules/cluster-bootstrap) with Terraform (or OpenTofu: DEMO_CLI=tofu),
// corrupts the caBundle out of band, shows the next plan catching it,
// restores it, then runs the same binary in reconcile mode and shows it
// restoring corruptions within milliseconds; kube-rbac-proxy, injected as a
// sidecar into a sample api Deployment, runs as a local process exactly as
// applied and answers 200/403/401 (and 200 on an ignored path), and the
// reconciler puts the sidecar back after a `kubectl replace`; then three simulated
// control-plane nodes report KMS v2 plugin health, the data source gates a
// key rotation, a plugin turns unhealthy and the gated plan stops; finally
// it destroys and tears down.
// DEMO_KEEP=1 keeps the control plane running at the end until Ctrl-C, for
// playing with its kubeconfig.
//
// No root needed: as root on Linux each reporter keeps the production
// socket path in its own mount namespace; otherwise (a normal user, macOS,
// a container without CAP_SYS_ADMIN, or DEMO_NO_NAMESPACES=1 to try this
// path as root) each reporter probes its own node's socket directory with
// --socket-dir. The demo prints which one it uses and why.
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

const apiserviceName = "v1alpha1.packages.demo.kmshealth.io"

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", args...)
}

func run(ctx context.Context) error {
	cliName := os.Getenv("DEMO_CLI")
	if cliName == "" {
		cliName = "terraform"
	}
	step("Starting etcd, kube-apiserver and the KMS v2 test plugin (first run builds them: several minutes)")
	env, err := testenv.Start(ctx)
	if err != nil {
		return err
	}
	defer env.Stop()
	fmt.Printf("API server %s, Secrets and ConfigMaps encrypted through KMS v2 plugin %s\nkubeconfig: %s\n", env.Host, env.KMS.Endpoint(), env.Kubeconfig)

	agg, err := aggregator.NewForConfig(env.RESTConfig())
	if err != nil {
		return err
	}
	apiservices := agg.ApiregistrationV1().APIServices()
	step("Creating the aggregated APIService %s, as its installer would", apiserviceName)
	port := int32(443)
	if _, err := apiservices.Create(ctx, &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: apiserviceName},
		Spec: apiregv1.APIServiceSpec{
			Group: "packages.demo.kmshealth.io", Version: "v1alpha1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregv1.ServiceReference{Namespace: "default", Name: "packages-api", Port: &port},
		},
	}, metav1.CreateOptions{FieldManager: "installer"}); err != nil {
		return err
	}

	work, err := os.MkdirTemp("", "kmshealth-demo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	step("Building the provider and pointing %s at it (dev_overrides)", cliName)
	if _, err := devenv.BuildProvider(ctx, filepath.Join(work, "bin"), "demo"); err != nil {
		return err
	}
	// The example calls the module by a relative path
	// (../../modules/cluster-bootstrap): copy both, keeping that layout.
	for _, dir := range []string{filepath.Join("examples", "cluster-bootstrap"), filepath.Join("modules", "cluster-bootstrap")} {
		if err := copyModule(filepath.Join(devenv.Root(), dir), filepath.Join(work, "tree", dir)); err != nil {
			return err
		}
	}
	cli, err := devenv.NewCLI(cliName, filepath.Join(work, "tree", "examples", "cluster-bootstrap"), filepath.Join(work, "bin"))
	if err != nil {
		return err
	}
	cli.Stdout = os.Stdout
	ca, rogue := demoCA("demo packaging CA"), demoCA("a stale CA from an old installer")
	step("Creating the reconciler's namespace, a web Deployment that consumes the TLS profile and an api Deployment to protect, as the platform's own code would")
	if err := demoWorkloads(ctx, env); err != nil {
		return err
	}
	ports, err := pickAPIPorts()
	if err != nil {
		return err
	}
	defer func() { _ = ports.upstream.Close() }()
	if err := createDemoAPI(ctx, env.Clientset(), ports.upstreamPort); err != nil {
		return err
	}
	fmt.Printf("Deployment %s/%s serves its API on 127.0.0.1:%d (ports are free ones of this machine: the proxy runs here as a process)\n", demoAPINamespace, demoAPIDeployment, ports.upstreamPort)
	// No kubelet runs here (the reconciler and the reporters run as
	// processes below), so no pod would ever roll out: do not wait for one.
	// The demo's aggregated API has no server behind it, and an unavailable
	// aggregated API keeps every deleted namespace Terminating (as in any
	// cluster): the reconciler goes into a namespace the demo made, so
	// destroy does not wait on one.
	vars, _ := json.Marshal(map[string]any{
		"kubeconfig_path": env.Kubeconfig, "apiservice_name": apiserviceName, "ca_bundle": ca, "wait_for_rollout": false,
		"create_reconciler_namespace": false,
		"tls_profile":                 map[string]any{"namespace": demoWebNamespace, "rollout_targets": []map[string]string{{"kind": "Deployment", "namespace": demoWebNamespace, "name": demoWebDeployment}}},
		"protected_api": map[string]any{"namespace": demoAPINamespace, "name": demoAPIDeployment,
			"upstream_port": ports.upstreamPort, "listen_port": ports.listen, "health_port": ports.health},
	})
	if err := os.WriteFile(filepath.Join(cli.Dir, "demo.auto.tfvars.json"), vars, 0o600); err != nil {
		return err
	}

	step("%s get: installs the local module examples/cluster-bootstrap calls (the provider comes from dev_overrides, nothing is downloaded)", cliName)
	if err := runCLI(ctx, cli, 0, "get", "-no-color"); err != nil {
		return err
	}

	step("%s apply examples/cluster-bootstrap", cliName)
	if err := runCLI(ctx, cli, 0, "apply", "-auto-approve", "-input=false", "-compact-warnings"); err != nil {
		return err
	}
	if err := show(ctx, agg); err != nil {
		return err
	}
	if err := showInstall(ctx, env); err != nil {
		return err
	}

	step("A plan right after apply is empty")
	if err := runCLI(ctx, cli, 0, "plan", "-input=false", "-compact-warnings", "-detailed-exitcode"); err != nil {
		return err
	}

	if err := rbacProxyMatrix(ctx, env, ports); err != nil {
		return err
	}

	step("Out of band: an old installer pod overwrites spec.caBundle with a stale CA")
	svc, err := apiservices.Get(ctx, apiserviceName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	svc.Spec.CABundle = []byte(rogue)
	if _, err := apiservices.Update(ctx, svc, metav1.UpdateOptions{FieldManager: "legacy-installer"}); err != nil {
		return err
	}
	if err := show(ctx, agg); err != nil {
		return err
	}

	step("%s plan catches the drift", cliName)
	if err := runCLI(ctx, cli, 2, "plan", "-input=false", "-compact-warnings", "-detailed-exitcode"); err != nil {
		return err
	}

	step("%s apply restores the bundle from its authoritative ConfigMap", cliName)
	if err := runCLI(ctx, cli, 0, "apply", "-auto-approve", "-input=false", "-compact-warnings"); err != nil {
		return err
	}
	if err := show(ctx, agg); err != nil {
		return err
	}

	step("Running the same binary in reconcile mode (watch-driven, leader election on a Lease)")
	rec, err := startReconciler(ctx, filepath.Join(work, "bin", "terraform-provider-kmshealth"), env)
	if err != nil {
		return err
	}
	for i := range 3 {
		fmt.Printf("corruption %d: ", i+1)
		took, err := corruptAndWait(ctx, agg, ca, rogue)
		if err != nil {
			rec.Stop()
			return err
		}
		fmt.Printf("restored by the reconciler after %s\n", took.Round(100*time.Microsecond))
	}
	if err := show(ctx, agg); err != nil {
		rec.Stop()
		return err
	}
	if err := rbacProxyRestore(ctx, env, ports.upstreamPort); err != nil {
		rec.Stop()
		return err
	}
	err = kmsHealth(ctx, cli, env, filepath.Join(work, "bin", "terraform-provider-kmshealth"))
	rec.Stop()
	if err != nil {
		return err
	}

	if err := tlsProfileChange(ctx, cli, env); err != nil {
		return err
	}

	step("%s destroy releases the caBundle and annotation, deletes the inline ConfigMap and the TLS profile ConfigMap (releasing the web Deployment's hash annotation), removes the api's kube-rbac-proxy sidecar (its ConfigMap and binding too), uninstalls the reconciler and the reporter (CRD and conditions included)", cliName)
	if err := runCLI(ctx, cli, 0, "destroy", "-auto-approve", "-input=false", "-compact-warnings"); err != nil {
		return err
	}
	if err := show(ctx, agg); err != nil {
		return err
	}
	if _, err := devenv.AppliedRBACProxy(ctx, env.Clientset(), demoAPITarget); err == nil {
		return fmt.Errorf("%s still has the kube-rbac-proxy sidecar after destroy", demoAPITarget)
	}
	fmt.Printf("Deployment %s/%s: no kube-rbac-proxy sidecar left\n", demoAPINamespace, demoAPIDeployment)

	if os.Getenv("DEMO_KEEP") != "" {
		step("Control plane left running: export KUBECONFIG=%s (Ctrl-C to stop)", env.Kubeconfig)
		<-ctx.Done()
	}
	step("Demo complete; tearing down")
	return nil
}

// show prints what the API server holds for the demo APIService.
func show(ctx context.Context, agg aggregator.Interface) error {
	svc, err := agg.ApiregistrationV1().APIServices().Get(ctx, apiserviceName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	owners := ""
	for _, mf := range svc.ManagedFields {
		owners += fmt.Sprintf(" %s(%s)", mf.Manager, mf.Operation)
	}
	fp := "(none)"
	if len(svc.Spec.CABundle) > 0 {
		fp = cabundle.Fingerprint(svc.Spec.CABundle)[:16] + "…"
	}
	subject := "(none)"
	if b, _ := pem.Decode(svc.Spec.CABundle); b != nil {
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			subject = c.Subject.CommonName
		}
	}
	fmt.Printf("live APIService %s: caBundle sha256=%s CN=%q\n  annotation %s=%q\n  field managers:%s\n",
		svc.Name, fp, subject, cabundle.SourceAnnotation, svc.Annotations[cabundle.SourceAnnotation], owners)
	return nil
}

// reportInterval is the demo reporters' --interval (the shortest allowed).
const reportInterval = kmshealth.MinInterval

// kmsHealth starts three control-plane "nodes" (a Node object, a KMS v2
// plugin and a reporter process each, see startReporter), shows the health
// the data source reads and a key rotation passing its gate, then turns one
// plugin unhealthy and shows the gated plan stop.
func kmsHealth(ctx context.Context, cli *devenv.CLI, env *testenv.Env, bin string) error {
	step("Three control-plane nodes start reporting KMS v2 plugin health (report mode, one process per node, every %s)", reportInterval)
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		return err
	}
	namespaces, why := devenv.MountNamespaces(ctx)
	if os.Getenv("DEMO_NO_NAMESPACES") != "" {
		namespaces, why = false, "DEMO_NO_NAMESPACES is set"
	}
	if namespaces {
		fmt.Printf("reporters keep the production socket path unix://%s/kms-1.sock: root on Linux, so each runs in its own mount namespace with its node's socket directory bind-mounted there\n", kmshealth.SocketDir)
	} else {
		fmt.Printf("reporters use their own socket directories %s (--socket-dir): %s, so no mount namespaces (the production path %s needs root on Linux)\n",
			filepath.Join(env.Dir, "demo-cp-{1,2,3}"), why, kmshealth.SocketDir)
	}
	var plugins []*kmstest.Plugin
	var reporters []*devenv.Process
	defer func() {
		for _, r := range reporters {
			r.Stop()
		}
		for _, p := range plugins {
			p.Stop()
		}
	}()
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("demo-cp-%d", i)
		if _, err := env.Clientset().CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""},
		}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		dir := filepath.Join(env.Dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		p, err := kmstest.Start(filepath.Join(dir, "kms-1.sock"), "kek-2026-11")
		if err != nil {
			return err
		}
		plugins = append(plugins, p)
		logf, err := os.Create(filepath.Join(env.Dir, "reporter-"+name+".log"))
		if err != nil {
			return err
		}
		r, err := startReporter(ctx, namespaces, bin, logf, dir, "--kubeconfig="+env.Kubeconfig, "--node-name="+name,
			"--interval="+reportInterval.String(), "--read-timeout=2s", "--write-timeout=3s")
		if err != nil {
			return fmt.Errorf("%w; see %s", err, logf.Name())
		}
		reporters = append(reporters, r)
		fmt.Printf("node %s: plugin %s, reporter log %s\n", name, p.Endpoint(), logf.Name())
	}
	if err := waitDegraded(ctx, dyn, metav1.ConditionFalse); err != nil {
		return err
	}
	if err := showKMSHealth(ctx, dyn); err != nil {
		return err
	}
	step("%s apply -var rotate_kek_to=kek-2026-12: the data source gate lets the rotation through", cli.Name)
	if err := runCLI(ctx, cli, 0, "apply", "-auto-approve", "-input=false", "-compact-warnings", "-var", "rotate_kek_to=kek-2026-12"); err != nil {
		return err
	}
	step("Out of band: the KMS plugin on demo-cp-2 loses its backend")
	plugins[1].SetHealthz("kms backend unreachable")
	start := time.Now()
	if err := waitDegraded(ctx, dyn, metav1.ConditionTrue); err != nil {
		return err
	}
	fmt.Printf("reported and rolled up after %s\n", time.Since(start).Round(time.Millisecond))
	if err := showKMSHealth(ctx, dyn); err != nil {
		return err
	}
	step("%s plan -var rotate_kek_to=kek-2027-01 stops at the gate, naming the node and plugin", cli.Name)
	if err := runCLI(ctx, cli, 1, "plan", "-input=false", "-compact-warnings", "-var", "rotate_kek_to=kek-2027-01"); err != nil {
		return err
	}
	plugins[1].SetHealthz("ok")
	return waitDegraded(ctx, dyn, metav1.ConditionFalse)
}

// startReporter runs one node's reporter. With namespaces it keeps the
// production socket path (its own mount namespace, dir bind-mounted over
// /var/run/kmsplugin, --kms-socket); without, it probes dir itself
// (--socket-dir). Both probe the same plugin and write the same condition.
func startReporter(ctx context.Context, namespaces bool, bin string, out io.Writer, dir string, args ...string) (*devenv.Process, error) {
	if namespaces {
		return devenv.StartReport(ctx, bin, out, dir, append(args, "--kms-socket=unix://"+kmshealth.SocketDir+"/kms-1.sock")...)
	}
	return devenv.StartReportInDir(ctx, bin, out, dir, args...)
}

// waitDegraded watches the KMSHealth object until KMSPluginsDegraded has
// status want.
func waitDegraded(ctx context.Context, dyn dynamic.Interface, want metav1.ConditionStatus) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return kmshealth.WaitForCondition(ctx, dyn, kmshealth.DefaultTarget(), kmshealth.DegradedCondition, want)
}

// showKMSHealth prints the conditions on the KMSHealth object, as
// `kubectl get kmshealths cluster -o yaml` would show them.
func showKMSHealth(ctx context.Context, dyn dynamic.Interface) error {
	obj, err := kmshealth.GetTarget(ctx, dyn, kmshealth.DefaultTarget())
	if err != nil {
		return err
	}
	fmt.Printf("kmshealths/%s status.conditions:\n", obj.GetName())
	for _, c := range kmshealth.Conditions(obj) {
		fmt.Printf("  %-28s %-7s %-10s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return nil
}

// runCLI runs the CLI and checks its exit code (plan -detailed-exitcode
// exits 2 when there are changes).
func runCLI(ctx context.Context, cli *devenv.CLI, want int, args ...string) error {
	code, err := cli.Run(ctx, args...)
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("%s %v: exit code %d, want %d", cli.Name, args, code, want)
	}
	return nil
}

func copyModule(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(from, "*.tf"))
	if err != nil || len(files) == 0 {
		return errors.Join(fmt.Errorf("no .tf files in %s", from), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// demoCA returns a fresh self-signed CA certificate in PEM.
func demoCA(cn string) string { return string(testpki.MustCertPEM(cn, testpki.Options{})) }

// startReconciler runs `terraform-provider-kmshealth reconcile` against the
// demo control plane, reading the record kmshealth_reconciler wrote (the
// pods of the installation cannot run here: there is no node), and waits
// until it leads.
func startReconciler(ctx context.Context, bin string, env *testenv.Env) (*devenv.Process, error) {
	logf, err := os.Create(filepath.Join(env.Dir, "reconciler.log"))
	if err != nil {
		return nil, err
	}
	// What to keep (caBundles, TLS profiles, sidecars) is in the record.
	p, err := devenv.StartReconcile(ctx, bin, logf, env.Token, "--kubeconfig="+env.Kubeconfig,
		"--namespace="+reconcilerNamespace, "--record-configmap="+reconcilerinstall.DefaultName+"-record",
		"--kms-max-staleness="+(kmshealth.StalenessFactor*reportInterval).String())
	if err != nil {
		return nil, fmt.Errorf("%w; see %s", err, logf.Name())
	}
	fmt.Printf("reconciler ready: metrics on %s, log %s\n", p.MetricsURL, logf.Name())
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leases := dynamic.NewForConfigOrDie(env.RESTConfig()).Resource(coordinationv1.SchemeGroupVersion.WithResource("leases")).Namespace(reconcilerNamespace)
	err = kube.WaitFor(wctx, leases, reconcilerinstall.LeaseName, func(u *unstructured.Unstructured) (bool, error) {
		holder, _, _ := unstructured.NestedString(u.Object, "spec", "holderIdentity")
		return holder != "", nil
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("the reconciler did not take the Lease: %w; see %s", err, logf.Name())
	}
	return p, nil
}

// reconcilerNamespace is examples/cluster-bootstrap's default (the module's too).
const reconcilerNamespace = "kmshealth-system"

// corruptAndWait overwrites the caBundle as a stale installer would and
// watches until the reconciler has put good back.
func corruptAndWait(ctx context.Context, agg aggregator.Interface, good, rogue string) (time.Duration, error) {
	apis := agg.ApiregistrationV1().APIServices()
	svc, err := apis.Get(ctx, apiserviceName, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	svc.Spec.CABundle = []byte(rogue)
	corrupted, err := apis.Update(ctx, svc, metav1.UpdateOptions{FieldManager: "legacy-installer"})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w, err := apis.Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + apiserviceName, ResourceVersion: corrupted.ResourceVersion})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if s, ok := ev.Object.(*apiregv1.APIService); ok && string(s.Spec.CABundle) == good {
			return time.Since(start), nil
		}
	}
	return 0, errors.New("caBundle not restored within 10s")
}

// showInstall lists what kmshealth_reconciler created (there is no kubelet
// here, so its pods never run; the reconciler runs below as a local process).
func showInstall(ctx context.Context, env *testenv.Env) error {
	core := env.Clientset()
	const ns = "kmshealth-system"
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kmshealth"}
	deps, err := core.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	fmt.Printf("kmshealth_reconciler installed in namespace %s:\n", ns)
	for _, d := range deps.Items {
		c := d.Spec.Template.Spec.Containers[0]
		fmt.Printf("  Deployment %s: %d replicas of %s %v, runAsNonRoot=%v readOnlyRootFilesystem=%v\n", d.Name, *d.Spec.Replicas, c.Image, c.Args,
			*d.Spec.Template.Spec.SecurityContext.RunAsNonRoot, *c.SecurityContext.ReadOnlyRootFilesystem)
	}
	roles, err := core.RbacV1().Roles("").List(ctx, sel)
	if err != nil {
		return err
	}
	for _, r := range roles.Items {
		for _, rule := range r.Rules {
			fmt.Printf("  Role %s/%s: %v %v names=%v\n", r.Namespace, r.Name, rule.Verbs, rule.Resources, rule.ResourceNames)
		}
	}
	return nil
}

const (
	demoWebNamespace  = "web"
	demoWebDeployment = "frontend"
)

// demoWorkloads creates what the platform's own code would have before
// kmshealth is applied: the reconciler's namespace, and a web Deployment
// that mounts the TLS profile ConfigMap.
func demoWorkloads(ctx context.Context, env *testenv.Env) error {
	core := env.Clientset()
	for _, ns := range []string{"kmshealth-system", demoWebNamespace} {
		if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	labels := map[string]string{"app": demoWebDeployment}
	_, err := core.AppsV1().Deployments(demoWebNamespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoWebDeployment},
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
	}, metav1.CreateOptions{FieldManager: "web-team"})
	return err
}

// showWebProfile prints the web Deployment's pod-template hash and the
// minimum version its mounted profile.json says.
func showWebProfile(ctx context.Context, env *testenv.Env) error {
	core := env.Clientset()
	d, err := core.AppsV1().Deployments(demoWebNamespace).Get(ctx, demoWebDeployment, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm, err := core.CoreV1().ConfigMaps(demoWebNamespace).Get(ctx, "tls-profile", metav1.GetOptions{})
	if err != nil {
		return err
	}
	doc, err := tlsprofile.ParseDocument([]byte(cm.Data[tlsprofile.DocumentKey]))
	if err != nil {
		return err
	}
	fmt.Printf("Deployment %s/%s pod template %s = %.16s…; its profile.json: %s, minTLSVersion %s, %d Go cipher suites\n",
		demoWebNamespace, demoWebDeployment, tlsprofile.HashAnnotation, d.Spec.Template.Annotations[tlsprofile.HashAnnotation], doc.Type, doc.MinTLSVersion, len(doc.CipherSuites))
	return nil
}

// tlsProfileChange shows a profile change rolling its consumer: a new
// hash on the pod template is what makes the Deployment controller roll.
func tlsProfileChange(ctx context.Context, cli *devenv.CLI, env *testenv.Env) error {
	step("The web Deployment consumes the TLS profile from its ConfigMap")
	if err := showWebProfile(ctx, env); err != nil {
		return err
	}
	step("%s apply -var tls_profile_type=Modern: the profile changes, and with it the hash that rolls the web pods and the api proxy's listener", cli.Name)
	if err := runCLI(ctx, cli, 0, "apply", "-auto-approve", "-input=false", "-compact-warnings", "-var", "tls_profile_type=Modern"); err != nil {
		return err
	}
	if err := showWebProfile(ctx, env); err != nil {
		return err
	}
	sidecar, err := devenv.AppliedRBACProxy(ctx, env.Clientset(), demoAPITarget)
	if err != nil {
		return err
	}
	var tlsArgs []string
	for _, a := range sidecar.Args {
		if strings.HasPrefix(a, "--tls-") {
			tlsArgs = append(tlsArgs, a)
		}
	}
	fmt.Printf("Deployment %s/%s kube-rbac-proxy sidecar: %s\n", demoAPINamespace, demoAPIDeployment, strings.Join(tlsArgs, " "))
	return nil
}
