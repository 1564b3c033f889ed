package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconcilerinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

const reconcilerAddr = "kmshealth_reconciler.test"

// reconcilerConfig is a kmshealth_reconciler "test" with the given body.
func reconcilerConfig(body string) string {
	return providerBlock() + "\nresource \"kmshealth_reconciler\" \"test\" {\n" + body + noWait(body) + "\n}\n"
}

// noWait is wait_for_rollout = false unless body says otherwise: the test
// API server runs no controllers and no kubelet, so nothing ever rolls out
// unless a test plays the controller.
func noWait(body string) string {
	if strings.Contains(body, "wait_for_rollout") {
		return ""
	}
	return "\n  wait_for_rollout = false"
}

func mustCreateNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := env.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func mustCreateSecret(t *testing.T, namespace, name string, data map[string][]byte) {
	t.Helper()
	_, err := env.Clientset().CoreV1().Secrets(namespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// checkArg asserts that the reconciler container runs with arg.
func checkArg(namespace, name, arg string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		d, err := getDeployment(namespace, name)
		if err != nil {
			return err
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, arg) {
			return fmt.Errorf("args %q: want %s", args, arg)
		}
		return nil
	}
}

// checkKMSArgs asserts the aggregator's flags in the Deployment and the
// ClusterRole's access to the KMS target's status.
func checkKMSArgs(namespace, name, target, staleness string) resource.TestCheckFunc {
	return func(st *terraform.State) error {
		d, err := getDeployment(namespace, name)
		if err != nil {
			return err
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--kms-target="+target) || !slices.Contains(args, "--kms-max-staleness="+staleness) {
			return fmt.Errorf("args %q: want --kms-target=%s and --kms-max-staleness=%s", args, target, staleness)
		}
		t, err := kmshealth.ParseTarget(target)
		if err != nil {
			return err
		}
		other := t
		other.Name += "-other"
		status := func(t kmshealth.Target) authorizationv1.ResourceAttributes {
			return authorizationv1.ResourceAttributes{Verb: "patch", Group: t.Group, Resource: t.Resource, Subresource: "status", Name: t.Name}
		}
		return checkAccess(namespace, name, []authorizationv1.ResourceAttributes{status(t)}, []authorizationv1.ResourceAttributes{status(other)})(st)
	}
}

// canI asks the API server's authorizer whether the reconciler's
// ServiceAccount may do ra.
func canI(namespace, name string, ra authorizationv1.ResourceAttributes) (bool, error) {
	sar, err := env.Clientset().AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + namespace + ":" + name,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &ra,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// checkAccess asserts the reconciler's ServiceAccount may do each of
// allowed and none of denied.
func checkAccess(namespace, name string, allowed, denied []authorizationv1.ResourceAttributes) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var errs []string
		for want, list := range map[bool][]authorizationv1.ResourceAttributes{true: allowed, false: denied} {
			for _, ra := range list {
				got, err := canI(namespace, name, ra)
				if err != nil {
					return err
				}
				if got != want {
					errs = append(errs, fmt.Sprintf("%s %s.%s %q in %q: allowed=%v, want %v", ra.Verb, ra.Resource, ra.Group, ra.Name, ra.Namespace, got, want))
				}
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("RBAC of system:serviceaccount:%s:%s:\n%s", namespace, name, strings.Join(errs, "\n"))
		}
		return nil
	}
}

// secretAccess is get, list and watch of one Secret (list and watch with
// the metadata.name field selector, which RBAC sees as the name).
func secretAccess(namespace, name string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, verb := range []string{"get", "list", "watch"} {
		out = append(out, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: "secrets", Name: name})
	}
	return out
}

func getDeployment(namespace, name string) (*appsv1.Deployment, error) {
	return env.Clientset().AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
}

// checkDeploymentSpec asserts the hardening and wiring of the live
// Deployment, PodDisruptionBudget and Service.
func checkDeploymentSpec(namespace, name, image string, replicas int32) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		d, err := getDeployment(namespace, name)
		if err != nil {
			return err
		}
		var errs []string
		fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
		if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
			fail("replicas %v, want %d", d.Spec.Replicas, replicas)
		}
		if d.Labels[cabundle.ManagedByLabel] != "kmshealth" || d.Labels["app.kubernetes.io/name"] != "kmshealth-reconciler" || d.Labels["app.kubernetes.io/instance"] != name {
			fail("labels %v", d.Labels)
		}
		pod := d.Spec.Template.Spec
		// No automounted token: a projected one that expires.
		if pod.ServiceAccountName != name || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			fail("serviceAccountName %q, automountServiceAccountToken %v, want false", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
		}
		if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool {
				return s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds != nil && *s.ServiceAccountToken.ExpirationSeconds <= install.TokenExpirationSeconds
			})
		}) {
			fail("no projected, expiring ServiceAccount token among the volumes %+v", pod.Volumes)
		}
		if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
			fail("pod anti-affinity %+v", a)
		}
		if len(pod.Containers) != 1 {
			return fmt.Errorf("containers: %+v", pod.Containers)
		}
		ct := pod.Containers[0]
		if ct.Name != "reconciler" || ct.Image != image {
			fail("container %q image %q, want reconciler %q", ct.Name, ct.Image, image)
		}
		// The two --kms-* flags that follow are checked by checkKMSArgs,
		// the --field-manager after them by checkArg.
		wantArgs := []string{"reconcile", "--namespace=$(POD_NAMESPACE)", "--leader-elect=true", "--leader-elect-lease-name=" + name, "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081",
			"--record-configmap=" + name + "-record"}
		if len(ct.Args) != len(wantArgs)+3 || !slices.Equal(ct.Args[:len(wantArgs)], wantArgs) {
			fail("args %q, want %q", ct.Args, wantArgs)
		}
		if len(ct.Env) != 1 || ct.Env[0].Name != "POD_NAMESPACE" || ct.Env[0].ValueFrom == nil || ct.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
			fail("env %+v", ct.Env)
		}
		ports := map[string]int32{}
		for _, p := range ct.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["metrics"] != 8443 || ports["health"] != 8081 {
			fail("ports %v", ports)
		}
		for _, p := range []struct {
			probe *corev1.Probe
			path  string
		}{{ct.LivenessProbe, "/healthz"}, {ct.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "health" {
				fail("probe for %s: %+v", p.path, p.probe)
			}
		}
		sc := ct.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			fail("container securityContext %+v", sc)
		}
		pdb, err := env.Clientset().PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case replicas > 1 && err != nil:
			fail("PodDisruptionBudget: %v", err)
		case replicas > 1 && (pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != name):
			fail("PodDisruptionBudget spec %+v", pdb.Spec)
		case replicas == 1 && !apierrors.IsNotFound(err):
			fail("PodDisruptionBudget with one replica (err=%v)", err)
		}
		svc, err := env.Clientset().CoreV1().Services(namespace).Get(ctx, name+"-metrics", metav1.GetOptions{})
		if err != nil {
			fail("metrics Service: %v", err)
		} else if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 || svc.Spec.Ports[0].TargetPort.String() != "metrics" ||
			svc.Spec.Selector["app.kubernetes.io/instance"] != name {
			fail("metrics Service spec %+v", svc.Spec)
		}
		if len(errs) > 0 {
			return fmt.Errorf("Deployment %s/%s and friends:\n%s", namespace, name, strings.Join(errs, "\n"))
		}
		return nil
	}
}

// checkSourcesRole asserts the sources Role in ns grants exactly names per
// resource ("secrets", "configmaps"), and checkNoSourcesRole that there is none.
func checkSourcesRole(ns, name string, want map[string][]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		role, err := env.Clientset().RbacV1().Roles(ns).Get(context.Background(), "kmshealth-reconciler-"+name+"-sources", metav1.GetOptions{})
		if err != nil {
			return err
		}
		got := map[string][]string{}
		for _, r := range role.Rules {
			if !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) || len(r.Resources) != 1 || len(r.ResourceNames) == 0 {
				return fmt.Errorf("sources Role %s rule %+v: want get/list/watch on named objects", ns, r)
			}
			got[r.Resources[0]] = r.ResourceNames
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("sources Role %s grants %v, want %v", ns, got, want)
		}
		return nil
	}
}

func checkNoSourcesRole(ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		n := "kmshealth-reconciler-" + name + "-sources"
		if _, err := env.Clientset().RbacV1().Roles(ns).Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Role %s/%s still there (err=%w)", ns, n, err)
		}
		if _, err := env.Clientset().RbacV1().RoleBindings(ns).Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("RoleBinding %s/%s still there (err=%w)", ns, n, err)
		}
		return nil
	}
}

// checkUninstalled is a CheckDestroy: no object of the installation is
// left, by label anywhere in the cluster or by name.
func checkUninstalled(namespace, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c := env.Clientset()
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name + "," + reconcilerinstall.NamespaceLabel + "=" + namespace}
		var left leftBehind
		sas, err := c.CoreV1().ServiceAccounts("").List(ctx, sel)
		left.listed("ServiceAccounts", len(sas.Items), err)
		deps, err := c.AppsV1().Deployments("").List(ctx, sel)
		left.listed("Deployments", len(deps.Items), err)
		svcs, err := c.CoreV1().Services("").List(ctx, sel)
		left.listed("Services", len(svcs.Items), err)
		pdbs, err := c.PolicyV1().PodDisruptionBudgets("").List(ctx, sel)
		left.listed("PodDisruptionBudgets", len(pdbs.Items), err)
		roles, err := c.RbacV1().Roles("").List(ctx, sel)
		left.listed("Roles", len(roles.Items), err)
		rbs, err := c.RbacV1().RoleBindings("").List(ctx, sel)
		left.listed("RoleBindings", len(rbs.Items), err)
		crs, err := c.RbacV1().ClusterRoles().List(ctx, sel)
		left.listed("ClusterRoles", len(crs.Items), err)
		crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, sel)
		left.listed("ClusterRoleBindings", len(crbs.Items), err)
		cfg := reconcilerinstall.Config{Namespace: namespace, Name: name}
		left.named(map[string]error{
			"Deployment":         errOf(c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})),
			"ServiceAccount":     errOf(c.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})),
			"ClusterRole":        errOf(c.RbacV1().ClusterRoles().Get(ctx, cfg.ClusterRoleName(), metav1.GetOptions{})),
			"ClusterRoleBinding": errOf(c.RbacV1().ClusterRoleBindings().Get(ctx, cfg.ClusterRoleName(), metav1.GetOptions{})),
			"leader Role":        errOf(c.RbacV1().Roles(namespace).Get(ctx, cfg.LeaderElectionRoleName(), metav1.GetOptions{})),
		})
		return left.err(namespace, name)
	}
}

// checkNamespaceKept asserts a namespace kmshealth did not create survives.
func checkNamespaceKept(ns string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		n, err := env.Clientset().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		if n.DeletionTimestamp != nil {
			return fmt.Errorf("namespace %s that kmshealth did not create is being deleted", ns)
		}
		return nil
	}
}

// TestAccReconciler_basic installs the reconciler for two real
// kmshealth_apiservice_cabundle resources (a Secret source and an inline
// bundle) and checks the objects, the RBAC by SubjectAccessReview, the
// empty plan, import, and drift of the Deployment, a sources Role, the
// ClusterRole and the Service, each restored by the next apply.
func TestAccReconciler_basic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := uniqueName(t)             // where the reconciler runs
	srcNS := uniqueName(t) + "-src" // where the Secret source lives
	mustCreateNamespace(t, ns)
	mustCreateNamespace(t, srcNS)
	ca := newCertPEM(t, "ca", certOpts{})
	mustCreateSecret(t, srcNS, "api-ca", map[string][]byte{"ca.crt": []byte(ca)})
	mustCreateSecret(t, srcNS, "unrelated", map[string][]byte{"password": []byte("hunter2")})
	secretAPI := createAPIService(t, uniqueName(t)+"-secret.example.com", apiServiceOpts{})
	inlineAPI := createAPIService(t, uniqueName(t)+"-inline.example.com", apiServiceOpts{})
	name := "rec"
	inlineCM := cabundle.InlineConfigMapName(inlineAPI)
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "secret" {
  apiservice_name = %q
  source {
    kind      = "Secret"
    namespace = %q
    name      = "api-ca"
    key       = "ca.crt"
  }
}

resource "kmshealth_apiservice_cabundle" "inline" {
  apiservice_name = %q
  ca_bundle       = %q
}

locals {
  cabundles = [kmshealth_apiservice_cabundle.secret, kmshealth_apiservice_cabundle.inline]
}

resource "kmshealth_reconciler" "test" {
  namespace         = %q
  name              = %q
  ca_bundles        = { for r in local.cabundles : r.apiservice_name => r.ca_bundle_source }
  wait_for_rollout  = false # no kubelet here: the test runs the reconciler as a process
}
`, secretAPI, srcNS, inlineAPI, ca, ns, name)
	image := install.DefaultImage("test")
	lease := func(verb, leaseName string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: leaseName}
	}
	apiservices := func(verb, n string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Verb: verb, Group: "apiregistration.k8s.io", Resource: "apiservices", Name: n}
	}
	allowed := append(secretAccess(srcNS, "api-ca"),
		apiservices("patch", secretAPI), apiservices("get", inlineAPI), apiservices("list", secretAPI), apiservices("watch", inlineAPI),
		// One watch of every APIService (the kind is not secret and few);
		// reading one by name or writing it stays limited to the kept.
		apiservices("list", ""), apiservices("watch", ""),
		authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "watch", Resource: "configmaps", Name: inlineCM},
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "watch", Resource: "configmaps", Name: name + "-record"},
		authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
		authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "events.k8s.io", Resource: "events"},
		authorizationv1.ResourceAttributes{Namespace: "default", Verb: "patch", Group: "events.k8s.io", Resource: "events"},
		lease("get", name), lease("update", name), lease("create", ""), // its own Lease: the installation's name
	)
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: srcNS, Verb: "get", Resource: "secrets", Name: "unrelated"},      // same namespace, not named
		{Namespace: srcNS, Verb: "list", Resource: "secrets"},                        // all of the namespace
		{Namespace: "default", Verb: "get", Resource: "secrets", Name: "api-ca"},     // the name, another namespace
		{Namespace: "kube-system", Verb: "get", Resource: "secrets", Name: inlineCM}, // a ConfigMap's name as a Secret
		{Verb: "list", Resource: "secrets"},                                          // cluster-wide
		{Verb: "watch", Resource: "configmaps"},                                      // cluster-wide
		{Namespace: srcNS, Verb: "update", Resource: "secrets", Name: "api-ca"},
		{Namespace: srcNS, Verb: "patch", Resource: "secrets", Name: "api-ca"},
		{Namespace: srcNS, Verb: "create", Resource: "secrets"},
		{Namespace: "kube-system", Verb: "delete", Resource: "configmaps", Name: inlineCM},
		{Namespace: "kube-system", Verb: "patch", Resource: "configmaps", Name: inlineCM},
		apiservices("delete", secretAPI), apiservices("create", ""),
		apiservices("get", "v1.unmanaged.example.com"), apiservices("patch", "v1."), apiservices("patch", "v1.unmanaged.example.com"),
		{Namespace: ns, Verb: "update", Resource: "configmaps", Name: name + "-record"},
		lease("update", "another-lease"), lease("delete", name),
		lease("update", "kmshealth-reconciler"), // another reconciler's in the same namespace
		{Namespace: ns, Verb: "create", Resource: "pods"},
	}
	deployments := env.Clientset().AppsV1().Deployments(ns)

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkUninstalled(ns, name),
			checkNamespaceKept(ns),
			checkNamespaceKept(srcNS),
			func(*terraform.State) error { // the user's Secret is never touched
				s, err := env.Clientset().CoreV1().Secrets(srcNS).Get(ctx, "api-ca", metav1.GetOptions{})
				if err != nil || string(s.Data["ca.crt"]) != ca {
					return fmt.Errorf("source Secret changed or gone after destroy: %w", err)
				}
				return nil
			},
		),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reconcilerAddr, "id", ns+"/"+name),
					resource.TestCheckResourceAttr(reconcilerAddr, "image", image),
					resource.TestCheckResourceAttr(reconcilerAddr, "replicas", "2"),
					resource.TestCheckResourceAttr(reconcilerAddr, "create_namespace", "false"),
					resource.TestCheckResourceAttr(reconcilerAddr, "service_account", name),
					resource.TestCheckResourceAttr(reconcilerAddr, "cluster_role", "kmshealth-reconciler:"+ns+":"+name),
					resource.TestCheckResourceAttr(reconcilerAddr, "metrics_service", name+"-metrics"),
					resource.TestCheckResourceAttr(reconcilerAddr, "objects_in_sync", "true"),
					resource.TestCheckResourceAttr(reconcilerAddr, "ca_bundles.%", "2"),
					resource.TestCheckResourceAttr(reconcilerAddr, "ca_bundles."+secretAPI, "Secret/"+srcNS+"/api-ca/ca.crt"),
					resource.TestCheckResourceAttr(reconcilerAddr, "ca_bundles."+inlineAPI, "ConfigMap/kube-system/"+inlineCM+"/ca.crt"),
					checkDeploymentSpec(ns, name, image, 2),
					checkSourcesRole(srcNS, name, map[string][]string{"secrets": {"api-ca"}}),
					checkSourcesRole("kube-system", name, map[string][]string{"configmaps": {inlineCM}}),
					checkAccess(ns, name, allowed, denied),
				),
			},
			{ResourceName: reconcilerAddr, ImportState: true, ImportStateId: ns + "/" + name, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"wait_for_rollout"}},
			{ResourceName: reconcilerAddr, ImportState: true, ImportStateId: name, ExpectError: wrappedRE(`want <namespace>/<name>`)},
			// kubectl scale: the next plan shows it, the apply restores it.
			outOfBand(config, func() {
				scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
				if _, err := deployments.UpdateScale(ctx, name, scale, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
					t.Fatal(err)
				}
			}),
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reconcilerAddr, "replicas", "2"),
					checkDeploymentSpec(ns, name, image, 2),
				),
			},
			// Someone narrows a sources Role: objects_in_sync turns false,
			// and the apply grants it again.
			outOfBand(config, func() {
				roles := env.Clientset().RbacV1().Roles(srcNS)
				role, err := roles.Get(ctx, "kmshealth-reconciler-"+name+"-sources", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				role.Rules[0].ResourceNames = []string{"something-else"}
				if _, err := roles.Update(ctx, role, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
					t.Fatal(err)
				}
			}),
			{Config: config, Check: checkSourcesRole(srcNS, name, map[string][]string{"secrets": {"api-ca"}})},
			// Someone widens the ClusterRole (all Secrets): objects_in_sync
			// turns false, and the apply narrows it again.
			outOfBand(config, func() {
				crs := env.Clientset().RbacV1().ClusterRoles()
				cr, err := crs.Get(ctx, "kmshealth-reconciler:"+ns+":"+name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}})
				if _, err := crs.Update(ctx, cr, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
					t.Fatal(err)
				}
			}),
			{Config: config, Check: checkAccess(ns, name, allowed, denied)},
			// The metrics Service is deleted: recreated.
			outOfBand(config, func() {
				if err := env.Clientset().CoreV1().Services(ns).Delete(ctx, name+"-metrics", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}),
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reconcilerAddr, "objects_in_sync", "true"),
					checkDeploymentSpec(ns, name, image, 2),
					checkAccess(ns, name, allowed, denied),
				),
			},
		},
	})
}

// TestAccReconciler_update changes the sources (a Role for a namespace no
// longer named is deleted), the replicas (the PodDisruptionBudget goes) and
// the image and resources.
func TestAccReconciler_update(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	nsA, nsB := uniqueName(t)+"-a", uniqueName(t)+"-b"
	for _, n := range []string{ns, nsA, nsB} {
		mustCreateNamespace(t, n)
	}
	name := "kmshealth-reconciler" // the default
	first := reconcilerConfig(fmt.Sprintf(`
  namespace         = %q
  ca_bundles = {
    "v1.one.example.com"   = "Secret/%s/one/ca.crt"
    "v2.one.example.com"   = "Secret/%s/one/tls.crt"
    "v1.two.example.com"   = "ConfigMap/%s/two/ca.pem"
    "v1.three.example.com" = "Secret/%s/three/ca.crt"
  }
`, ns, nsA, nsA, nsA, nsB))
	second := reconcilerConfig(fmt.Sprintf(`
  namespace         = %q
  ca_bundles        = { "v1.four.example.com" = "Secret/%s/four/ca.crt" }
  replicas          = 1
  image             = "registry.example.com/mirror/kmshealth:v9"
  cpu_request       = "0.05"
  memory_request    = "64Mi"
  memory_limit      = "0.25Gi"
  kms_target        = "operator.openshift.io/v1/kubeapiservers/cluster"
  kms_max_staleness = "4m"
  field_manager     = "platform-team"
`, ns, nsA))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkUninstalled(ns, name), checkNamespaceKept(ns), checkNoSourcesRole(nsA, name), checkNoSourcesRole(nsB, name),
		),
		Steps: []resource.TestStep{
			{
				Config: first,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reconcilerAddr, "name", name),
					resource.TestCheckResourceAttr(reconcilerAddr, "cpu_request", "10m"),
					checkSourcesRole(nsA, name, map[string][]string{"configmaps": {"two"}, "secrets": {"one"}}),
					checkSourcesRole(nsB, name, map[string][]string{"secrets": {"three"}}),
					checkAccess(ns, name, secretAccess(nsB, "three"), nil),
					checkDeploymentSpec(ns, name, install.DefaultImage("test"), 2),
					resource.TestCheckResourceAttr(reconcilerAddr, "kms_target", "kmshealth.io/v1alpha1/kmshealths/cluster"),
					resource.TestCheckResourceAttr(reconcilerAddr, "kms_max_staleness", "2m0s"),
					checkKMSArgs(ns, name, "kmshealth.io/v1alpha1/kmshealths/cluster", "2m0s"),
					resource.TestCheckResourceAttr(reconcilerAddr, "field_manager", "kmshealth"),
					checkArg(ns, name, "--field-manager=kmshealth"),
				),
			},
			{
				Config: second,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reconcilerAddr, "ca_bundles.%", "1"),
					checkSourcesRole(nsA, name, map[string][]string{"secrets": {"four"}}),
					checkNoSourcesRole(nsB, name),
					checkAccess(ns, name, secretAccess(nsA, "four"), append(secretAccess(nsB, "three"), secretAccess(nsA, "one")...)),
					checkDeploymentSpec(ns, name, "registry.example.com/mirror/kmshealth:v9", 1),
					resource.TestCheckResourceAttr(reconcilerAddr, "kms_max_staleness", "4m"),
					checkKMSArgs(ns, name, "operator.openshift.io/v1/kubeapiservers/cluster", "4m0s"),
					resource.TestCheckResourceAttr(reconcilerAddr, "field_manager", "platform-team"),
					checkArg(ns, name, "--field-manager=platform-team"),
					func(*terraform.State) error {
						d, err := getDeployment(ns, name)
						if err != nil {
							return err
						}
						r := d.Spec.Template.Spec.Containers[0].Resources
						if r.Requests.Cpu().String() != "50m" || r.Requests.Memory().String() != "64Mi" || r.Limits.Memory().String() != "256Mi" {
							return fmt.Errorf("resources %+v", r)
						}
						return nil
					},
				),
			},
			// The plans after that apply: quantities the API server
			// canonicalised (0.05 is 50m) do not show as drift.
			{
				ResourceName: reconcilerAddr, ImportState: true, ImportStateId: ns + "/" + name, ImportStateVerify: true,
				// The import reads the canonical form of the quantities.
				ImportStateVerifyIgnore: []string{"cpu_request", "memory_limit", "kms_max_staleness", "wait_for_rollout"},
			},
		},
	})
}

// TestAccReconciler_createNamespace creates the namespace, deletes it on
// destroy, and refuses to take over a namespace it did not create.
func TestAccReconciler_createNamespace(t *testing.T) {
	// Serial: it waits for a namespace to be deleted, which the namespace
	// controller cannot finish while another test's APIService (whose
	// Service does not exist) makes discovery fail.
	ns := uniqueName(t)
	existing := uniqueName(t) + "-existing"
	mustCreateNamespace(t, existing)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkUninstalled(ns, "kmshealth-reconciler"),
			checkUninstalled(existing, "kmshealth-reconciler"),
			checkNamespaceKept(existing),
			checkNamespaceGone(ns),
		),
		Steps: []resource.TestStep{
			{
				Config:      reconcilerConfig(fmt.Sprintf("namespace = %q\ncreate_namespace = true", existing)),
				ExpectError: wrappedRE(`(?s)Namespace ` + existing + ` exists and was not created by this installation .*set create_namespace = false`),
			},
			{
				Config:      reconcilerConfig(fmt.Sprintf("namespace = %q", ns)),
				ExpectError: wrappedRE(`namespace "` + ns + `" not found: create it first, or set create_namespace = true`),
			},
			{
				Config: reconcilerConfig(fmt.Sprintf("namespace = %q\ncreate_namespace = true", ns)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reconcilerAddr, "create_namespace", "true"),
					func(*terraform.State) error {
						n, err := env.Clientset().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
						if err != nil {
							return err
						}
						if n.Labels[cabundle.ManagedByLabel] != "kmshealth" || n.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
							return fmt.Errorf("namespace labels %v", n.Labels)
						}
						return nil
					},
				),
			},
			{ResourceName: reconcilerAddr, ImportState: true, ImportStateId: ns + "/kmshealth-reconciler", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"wait_for_rollout"}},
			{
				// Destroy waits until the namespace is gone (the namespace
				// controller has emptied it), so an apply right after it
				// creates the namespace afresh instead of meeting it
				// Terminating.
				Config:  providerBlock(),
				Destroy: true,
				Check:   checkNamespaceGone(ns),
			},
			{Config: reconcilerConfig(fmt.Sprintf("namespace = %q\ncreate_namespace = true", ns))},
		},
	})
}

// TestAccReconciler_namespaceHeld: when the namespace controller cannot
// empty the namespace (here an aggregated API that is unavailable, which
// blocks every namespace deletion in a real cluster too), destroy fails at
// its delete timeout saying what holds the namespace, and succeeds once the
// cause is gone.
func TestAccReconciler_namespaceHeld(t *testing.T) {
	// Serial: its unavailable APIService blocks the deletion of every
	// namespace in the cluster while it runs.
	ns := uniqueName(t)
	broken := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{}) // its Service does not exist
	config := reconcilerConfig(fmt.Sprintf("namespace = %q\ncreate_namespace = true\ntimeouts {\n  delete = \"15s\"\n}", ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkNamespaceGone(ns),
		Steps: []resource.TestStep{
			{Config: config},
			{
				Config:      config,
				Destroy:     true,
				ExpectError: wrappedRE(`(?s)Namespace ` + ns + ` was not deleted in time: it is held by condition NamespaceDeletionDiscoveryFailure: .*` + strings.TrimPrefix(broken, "v1.") + `/v1`),
			},
			{
				PreConfig: func() {
					err := aggregatorClient(t).ApiregistrationV1().APIServices().Delete(context.Background(), broken, metav1.DeleteOptions{})
					if err != nil {
						t.Fatal(err)
					}
				},
				Config:  config,
				Destroy: true,
			},
		},
	})
}

// checkNamespaceGone asserts the namespace no longer exists at all, not
// even Terminating.
func checkNamespaceGone(ns string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		n, err := env.Clientset().CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case n.DeletionTimestamp != nil:
			return fmt.Errorf("namespace %s that kmshealth created is still Terminating after destroy", ns)
		default:
			return fmt.Errorf("namespace %s that kmshealth created was not deleted", ns)
		}
	}
}

// onDeployment plays a controller of the Deployment namespace/name (there
// is none here): act sees each event of it, by watch, until it returns
// true or the test ends.
func onDeployment(t *testing.T, namespace, name string, act func(ctx context.Context, ev watch.Event, d *appsv1.Deployment) (done bool)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := env.Clientset().AppsV1().Deployments(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && act(ctx, ev, d) {
				return
			}
		}
	}()
}

// fakeRollout plays the Deployment controller: once the Deployment
// appears, its status reports every replica rolled out.
func fakeRollout(t *testing.T, namespace, name string) {
	deployments := env.Clientset().AppsV1().Deployments(namespace)
	onDeployment(t, namespace, name, func(ctx context.Context, ev watch.Event, d *appsv1.Deployment) bool {
		if ev.Type == watch.Deleted || reconcilerinstall.RolledOut(d) {
			return false
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		_, _ = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return false
	})
}

// fakeStuckPod plays the ReplicaSet controller and the kubelet: once the
// Deployment appears, a pod of it exists whose container cannot pull its
// image, as a kubelet reports it.
func fakeStuckPod(t *testing.T, namespace, name string) {
	pods := env.Clientset().CoreV1().Pods(namespace)
	onDeployment(t, namespace, name, func(ctx context.Context, ev watch.Event, d *appsv1.Deployment) bool {
		if ev.Type != watch.Added {
			return false
		}
		pod, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-7d9c-x2k4q", Labels: d.Spec.Template.Labels},
			Spec:       d.Spec.Template.Spec,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("pod of %s: %v", name, err)
			return true
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "reconciler", Image: d.Spec.Template.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
				Message: "failed to pull and unpack image: not found"}},
		}}}
		if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Errorf("pod status: %v", err)
		}
		return true
	})
}

// TestAccReconciler_waitForRollout waits (by watch) for a rollout that a
// fake controller completes, times out on one that never completes, and
// fails at once, with the pod's own reason, on one whose pod cannot pull
// its image.
func TestAccReconciler_waitForRollout(t *testing.T) {
	t.Parallel()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkUninstalled(ns, "done"),
		Steps: []resource.TestStep{{
			PreConfig: func() { fakeRollout(t, ns, "done") },
			Config: reconcilerConfig(fmt.Sprintf(`
  namespace        = %q
  name             = "done"
  wait_for_rollout = true
  timeouts {
    create = "30s"
  }
`, ns)),
			Check: func(*terraform.State) error {
				d, err := getDeployment(ns, "done")
				if err != nil {
					return err
				}
				if !reconcilerinstall.RolledOut(d) {
					return fmt.Errorf("apply returned before the rollout: %+v", d.Status)
				}
				return nil
			},
		}},
	})
	start := time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkUninstalled(ns, "never"),
		Steps: []resource.TestStep{{
			Config: reconcilerConfig(fmt.Sprintf(`
  namespace        = %q
  name             = "never"
  wait_for_rollout = true
  timeouts {
    create = "2s"
  }
`, ns)),
			ExpectError: wrappedRE(`Deployment ` + ns + `/never did not roll out in time \(observed generation 0 of 1, 0 of 2 replicas updated`),
		}},
	})
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("a 2s rollout timeout took %s", d)
	}
	start = time.Now()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkUninstalled(ns, "stuck"),
		Steps: []resource.TestStep{{
			PreConfig: func() { fakeStuckPod(t, ns, "stuck") },
			Config: reconcilerConfig(fmt.Sprintf(`
  namespace        = %q
  name             = "stuck"
  image            = "registry.example.com/does-not-exist:v0"
  wait_for_rollout = true
  timeouts {
    create = "10m"
  }
`, ns)),
			ExpectError: wrappedRE(`Deployment ` + ns + `/stuck cannot roll out: pod stuck-7d9c-x2k4q is ErrImagePull: container reconciler, image registry.example.com/does-not-exist:v0: failed to pull and unpack image: not found. Check the image name and tag`),
		}},
	})
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("a pod that cannot pull its image ended a 10m wait only after %s", d)
	}
}

// TestAccReconciler_foreignObject refuses to take over an object of the
// same name that kmshealth did not create, writes nothing, and leaves it.
func TestAccReconciler_foreignObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	sas := env.Clientset().CoreV1().ServiceAccounts(ns)
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kmshealth-reconciler"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config:      reconcilerConfig(fmt.Sprintf("namespace = %q", ns)),
			ExpectError: wrappedRE(`ServiceAccount ` + ns + `/kmshealth-reconciler exists and was not created by this installation \(it lacks the labels`),
		}},
		CheckDestroy: func(*terraform.State) error {
			if _, err := sas.Get(ctx, "kmshealth-reconciler", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("the user's ServiceAccount: %w", err)
			}
			if _, err := getDeployment(ns, "kmshealth-reconciler"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("a refused apply created the Deployment (err=%w)", err)
			}
			return nil
		},
	})
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount with a fresh bound token, so a process gets exactly the
// permissions the installation granted.
func serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	tr, err := env.Clientset().CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tokenKubeconfig(t, tr.Status.Token)
}

// tokenKubeconfig writes a kubeconfig for the test API server that
// authenticates with token, and returns its path.
func tokenKubeconfig(t *testing.T, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Host, CertificateAuthorityData: env.CAPEM}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitUntil watches objects of lw until cond holds or limit passes.
func waitUntil[T runtime.Object](lw cache.ListerWatcher, obj T, limit time.Duration, cond func(T) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_, err := watchtools.UntilWithSync(ctx, lw, obj, nil, func(ev watch.Event) (bool, error) {
		o, ok := ev.Object.(T)
		return ok && ev.Type != watch.Deleted && cond(o), nil
	})
	return err
}

func listWatch[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error), w func(context.Context, metav1.ListOptions) (watch.Interface, error), fieldSelector string) *cache.ListWatch {
	return kube.ListWatch(list, w, func(o *metav1.ListOptions) { o.FieldSelector = fieldSelector })
}

// TestAccReconciler_runsUnderItsOwnRBAC runs the real provider binary with
// the installed Deployment's own arguments, authenticated as the installed
// ServiceAccount: it must win the Lease, restore an overwritten caBundle
// from its Secret source and record an Event, with no Forbidden error, so
// the RBAC is proven sufficient, not only minimal. (There is no kubelet:
// the pod's process runs on the host, with a kubeconfig instead of the
// in-cluster configuration.)
func TestAccReconciler_runsUnderItsOwnRBAC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, srcNS := uniqueName(t), uniqueName(t)+"-src"
	mustCreateNamespace(t, ns)
	mustCreateNamespace(t, srcNS)
	ca := newCertPEM(t, "ca", certOpts{})
	mustCreateSecret(t, srcNS, "api-ca", map[string][]byte{"ca.crt": []byte(ca)})
	api := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	binary, err := devenv.BuildProvider(ctx, t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_apiservice_cabundle" "api" {
  apiservice_name = %q
  source {
    kind      = "Secret"
    namespace = %q
    name      = "api-ca"
    key       = "ca.crt"
  }
}

resource "kmshealth_reconciler" "test" {
  namespace         = %q
  replicas          = 1
  ca_bundles        = { (kmshealth_apiservice_cabundle.api.apiservice_name) = kmshealth_apiservice_cabundle.api.ca_bundle_source }
  wait_for_rollout  = false # no kubelet here: the test runs the reconciler as a process
}
`, api, srcNS, ns)

	runReconciler := func(*terraform.State) error {
		r, err := startInstalledReconciler(t, binary, ns)
		if err != nil {
			return err
		}
		defer r.stop()
		fail := r.fail

		// An installer overwrites the bundle: the reconciler restores it.
		apis := aggregatorClient(t).ApiregistrationV1().APIServices()
		svc, err := apis.Get(ctx, api, metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Spec.CABundle = []byte(newCertPEM(t, "impostor", certOpts{}))
		if _, err := apis.Update(ctx, svc, metav1.UpdateOptions{FieldManager: "installer"}); err != nil {
			return err
		}
		apiWatch := listWatch(apis.List, apis.Watch, "metadata.name="+api)
		if err := waitUntil(apiWatch, &apiregv1.APIService{}, 30*time.Second, func(s *apiregv1.APIService) bool {
			return string(s.Spec.CABundle) == ca
		}); err != nil {
			return fail("caBundle of %s not restored: %v", api, err)
		}
		events := env.Clientset().CoreV1().Events(metav1.NamespaceDefault)
		eventWatch := listWatch(events.List, events.Watch, "involvedObject.name="+api)
		if err := waitUntil(eventWatch, &corev1.Event{}, 30*time.Second, func(e *corev1.Event) bool {
			return e.ReportingController == "kmshealth-reconciler" || e.Source.Component == "kmshealth-reconciler"
		}); err != nil {
			return fail("no Event recorded for %s: %v", api, err)
		}
		return r.checkNotDenied(ns, srcNS, api)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkUninstalled(ns, "kmshealth-reconciler"),
		Steps: []resource.TestStep{{
			Config: config,
			Check:  runReconciler,
		}},
	})
}

// installedReconciler is the real provider binary in reconcile mode with the
// installed Deployment's own arguments, authenticated as the installed
// ServiceAccount, holding the Lease.
type installedReconciler struct {
	args []string
	logs *devenv.SyncBuffer
	stop func()
}

// startInstalledReconciler starts the reconciler that kmshealth_reconciler
// installed in ns (as a process: there is no kubelet), and waits until it
// leads.
func startInstalledReconciler(t *testing.T, binary, ns string) (*installedReconciler, error) {
	d, err := getDeployment(ns, "kmshealth-reconciler")
	if err != nil {
		return nil, err
	}
	ct := d.Spec.Template.Spec.Containers[0]
	r := &installedReconciler{logs: &devenv.SyncBuffer{}}
	for _, a := range ct.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="), strings.HasPrefix(a, "--health-probe-bind-address="):
			// The pod's ports would clash with other processes on the host.
			name, _, _ := strings.Cut(a, "=")
			r.args = append(r.args, name+"=127.0.0.1:0")
		default:
			r.args = append(r.args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", ns)) // as the kubelet expands it
		}
	}
	r.args = append(r.args, "--kubeconfig="+serviceAccountKubeconfig(t, ns, d.Spec.Template.Spec.ServiceAccountName))
	cmd := exec.Command(binary, r.args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+ns)
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	p, err := devenv.StartCommand(cmd)
	if err != nil {
		return nil, err
	}
	r.stop = p.Stop
	leases := env.Clientset().CoordinationV1().Leases(ns)
	leaseWatch := listWatch(leases.List, leases.Watch, "metadata.name="+reconcilerinstall.LeaseName)
	if err := waitUntil(leaseWatch, &coordinationv1.Lease{}, 30*time.Second, func(l *coordinationv1.Lease) bool {
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	}); err != nil {
		p.Stop()
		return nil, r.fail("no leader elected on Lease %s/%s: %v", ns, reconcilerinstall.LeaseName, err)
	}
	return r, nil
}

// fail is an error with the reconciler's arguments and log.
func (r *installedReconciler) fail(format string, a ...any) error {
	return fmt.Errorf(format+"\nreconciler %q log:\n%s", append(a, r.args, r.logs.String())...)
}

// checkNotDenied fails when the log shows a Forbidden error about any of
// the names: the RBAC is then not sufficient for what the reconciler keeps.
func (r *installedReconciler) checkNotDenied(names ...string) error {
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if !strings.Contains(strings.ToLower(line), "forbidden") {
			continue
		}
		for _, n := range names {
			if strings.Contains(line, n) {
				return r.fail("the reconciler was denied something it needs: %s", line)
			}
		}
	}
	return nil
}

// TestAccReconciler_keepsTLSProfiles: a reconciler given tls_profiles,
// running under exactly the RBAC and admission policies it installs,
// follows a change of the cluster's TLS profile into the profile
// ConfigMap and the rollout target's hash, and restores a removed hash;
// import reads tls_profiles back from the record.
func TestAccReconciler_keepsTLSProfiles(t *testing.T) {
	// Serial: it installs OpenShift's cluster-scoped APIServer API, which
	// turns is_openshift true for every other profile while it exists
	// (TestAccTLSProfile_static saw it flip between its plan and apply).
	ctx := context.Background()
	ns, appNS := uniqueName(t), uniqueName(t)+"-app"
	mustCreateNamespace(t, ns)
	mustCreateNamespace(t, appNS)
	mustCreateDeployment(t, appNS, "web")
	installAPIServerAPI(t, map[string]any{"tlsSecurityProfile": map[string]any{"type": "Intermediate"}})
	binary, err := devenv.BuildProvider(ctx, t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_tls_profile_configmap" "web" {
  namespace       = %[1]q
  name            = "web-tls"
  source          = "cluster"
  rollout_targets = [{ kind = "Deployment", namespace = %[1]q, name = "web" }]
}

resource "kmshealth_reconciler" "test" {
  namespace        = %[2]q
  replicas         = 1
  tls_profiles     = [for p in [kmshealth_tls_profile_configmap.web] : { namespace = p.namespace, name = p.name, rollout_targets = p.rollout_targets }]
  wait_for_rollout = false # no kubelet here: the test runs the reconciler as a process
}
`, appNS, ns)
	deployments := env.Clientset().AppsV1().Deployments(appNS)
	hashOf := func(d *appsv1.Deployment) string { return d.Spec.Template.Annotations[tlsprofile.HashAnnotation] }
	follow := func(*terraform.State) error {
		r, err := startInstalledReconciler(t, binary, ns)
		if err != nil {
			return err
		}
		defer r.stop()
		modern := mustResolve(t, tlsprofile.Spec{Type: tlsprofile.ProfileModern, Source: tlsprofile.SourceCluster})
		start := time.Now()
		setClusterProfile(t, map[string]any{"type": "Modern", "modern": map[string]any{}})
		cms := env.Clientset().CoreV1().ConfigMaps(appNS)
		if err := waitUntil(listWatch(cms.List, cms.Watch, "metadata.name=web-tls"), &corev1.ConfigMap{}, 30*time.Second, func(cm *corev1.ConfigMap) bool {
			return cm.Data[tlsprofile.DocumentKey] == string(modern.JSON)
		}); err != nil {
			return r.fail("profile.json did not follow the cluster profile to Modern: %v", err)
		}
		dw := listWatch(deployments.List, deployments.Watch, "metadata.name=web")
		if err := waitUntil(dw, &appsv1.Deployment{}, 30*time.Second, func(d *appsv1.Deployment) bool { return hashOf(d) == modern.Hash }); err != nil {
			return r.fail("the rollout target's hash did not follow the cluster profile: %v", err)
		}
		t.Logf("cluster profile change reached the ConfigMap and the target in %s", time.Since(start).Round(time.Millisecond))

		// A Helm upgrade drops the annotation: the reconciler puts it back.
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		delete(d.Spec.Template.Annotations, tlsprofile.HashAnnotation)
		if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: "helm"}); err != nil {
			return err
		}
		if err := waitUntil(dw, &appsv1.Deployment{}, 30*time.Second, func(d *appsv1.Deployment) bool { return hashOf(d) == modern.Hash }); err != nil {
			return r.fail("a removed hash annotation was not restored: %v", err)
		}
		return r.checkNotDenied(ns, appNS, "web")
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkUninstalled(ns, "kmshealth-reconciler"),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("kmshealth_reconciler.test", "tls_profiles.0.name", "web-tls"),
					resource.TestCheckResourceAttr("kmshealth_reconciler.test", "tls_profiles.0.rollout_targets.0.name", "web"),
					follow,
				),
				// The cluster's profile changed: the profile resource shows it.
				ExpectNonEmptyPlan: true,
			},
			// Applying it changes only the profile resource's state (the
			// reconciler already wrote the cluster's profile); then the plan
			// is empty.
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kmshealth_reconciler.test", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("kmshealth_tls_profile_configmap.web", plancheck.ResourceActionUpdate),
				}},
				Check: resource.TestCheckResourceAttr("kmshealth_tls_profile_configmap.web", "min_tls_version", "VersionTLS13"),
			},
			{
				ResourceName: "kmshealth_reconciler.test", ImportState: true, ImportStateId: ns + "/kmshealth-reconciler",
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "wait_for_rollout"},
			},
		},
	})
}

// TestAccReconciler_keepsRBACProxySidecars: a reconciler given
// rbac_proxy_sidecars, running under exactly the RBAC and admission policy
// it installs (which pins the sidecar's image and arguments), puts the
// sidecar back after a kubectl replace of the workload without it; import
// reads rbac_proxy_sidecars back from the record.
func TestAccReconciler_keepsRBACProxySidecars(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, appNS := uniqueName(t), uniqueName(t)+"-app"
	mustCreateNamespace(t, ns)
	mustCreateNamespace(t, appNS)
	mustCreateDeployment(t, appNS, "api")
	binary, err := devenv.BuildProvider(ctx, t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	config := providerBlock() + fmt.Sprintf(`
resource "kmshealth_rbac_proxy_sidecar" "api" {
  target {
    kind      = "Deployment"
    namespace = %[1]q
    name      = "api"
  }
  upstream_port = 8080
  authorization {
    resource_attributes {
      namespace   = %[1]q
      resource    = "services"
      subresource = "proxy"
      name        = "api"
    }
  }
}

resource "kmshealth_reconciler" "test" {
  namespace           = %[2]q
  replicas            = 1
  rbac_proxy_sidecars = [for s in [kmshealth_rbac_proxy_sidecar.api] : { target = s.target, image = s.image, args = s.args, pinned_sidecar = s.pinned_sidecar }]
  wait_for_rollout    = false # no kubelet here: the test runs the reconciler as a process
}
`, appNS, ns)
	deployments := env.Clientset().AppsV1().Deployments(appNS)
	hasSidecar := func(d *appsv1.Deployment) bool {
		for _, c := range d.Spec.Template.Spec.InitContainers {
			if c.Name == rbacproxy.ContainerName {
				return true
			}
		}
		return false
	}
	putBack := func(*terraform.State) error {
		r, err := startInstalledReconciler(t, binary, ns)
		if err != nil {
			return err
		}
		defer r.stop()
		// kubectl replace with the manifest the user keeps: no sidecar.
		d, err := deployments.Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Volumes, d.Spec.Template.Annotations = nil, nil, nil
		start := time.Now()
		if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-replace"}); err != nil {
			return err
		}
		if err := waitUntil(listWatch(deployments.List, deployments.Watch, "metadata.name=api"), &appsv1.Deployment{}, 30*time.Second, hasSidecar); err != nil {
			return r.fail("the sidecar was not put back: %v", err)
		}
		t.Logf("sidecar put back %s after the replace", time.Since(start).Round(time.Millisecond))
		return r.checkNotDenied(ns, appNS, "api")
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkUninstalled(ns, "kmshealth-reconciler"),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("kmshealth_reconciler.test", "rbac_proxy_sidecars.0.target.name", "api"),
					resource.TestCheckResourceAttrPair("kmshealth_reconciler.test", "rbac_proxy_sidecars.0.args.#", "kmshealth_rbac_proxy_sidecar.api", "args.#"),
					resource.TestCheckResourceAttrPair("kmshealth_reconciler.test", "rbac_proxy_sidecars.0.pinned_sidecar", "kmshealth_rbac_proxy_sidecar.api", "pinned_sidecar"),
					putBack,
				),
			},
			{
				ResourceName: "kmshealth_reconciler.test", ImportState: true, ImportStateId: ns + "/kmshealth-reconciler",
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "wait_for_rollout"},
			},
		},
	})
}

// mustResolve resolves spec with no opinion on adherence.
func mustResolve(t *testing.T, spec tlsprofile.Spec) tlsprofile.Resolved {
	t.Helper()
	r, _, err := tlsprofile.Resolve(spec, tlsprofile.AdherenceNoOpinion)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAccReconciler_unreachable: an install against a server that refuses
// connections says so, with the server and the setting that chose it, as
// every resource does; nothing is recorded in the state.
func TestAccReconciler_unreachable(t *testing.T) {
	t.Parallel()
	kubeconfig, provider, addr := refusedKubeconfig(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: provider + `
resource "kmshealth_reconciler" "test" {
  namespace = "kmshealth-system"
  image     = "registry.example.com/kmshealth:v1"
}
`,
			ExpectError: literalRE("API server unreachable", "no connection to the API server https://"+addr,
				`in kubeconfig "`+kubeconfig+`" (config_path attribute)`, "connect: connection refused"),
		}},
	})
}
