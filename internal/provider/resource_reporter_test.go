package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testenv"
)

const reporterAddr = "kmshealth_reporter.test"

// reporterConfig is a kmshealth_reporter "test" with the given body.
func reporterConfig(body string) string {
	return providerBlock() + "\nresource \"kmshealth_reporter\" \"test\" {\n" + body + noWait(body) + "\n}\n"
}

// reporterWant is what the DaemonSet must hold.
type reporterWant struct {
	image         string
	args          []string
	socketDir     string // mounted directory
	runAsUser     int64
	runAsGroup    int64
	nodeSelector  map[string]string
	tolerations   []corev1.Toleration
	priorityClass string
}

func defaultReporterWant() reporterWant {
	return reporterWant{
		image: install.DefaultImage("test"),
		args: []string{"report", "--interval=30s", "--read-timeout=5s", "--write-timeout=10s", "--target=kmshealth.io/v1alpha1/kmshealths/cluster",
			"--health-probe-bind-address=:8082", "--metrics-bind-address=:8444", "--socket-dir=/var/run/kmsplugin"},
		socketDir:     "/var/run/kmsplugin",
		nodeSelector:  map[string]string{"node-role.kubernetes.io/control-plane": ""},
		tolerations:   []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: "Exists", Effect: "NoSchedule"}},
		priorityClass: "system-node-critical",
	}
}

// checkReporterObjects asserts the hardening and wiring of the live
// DaemonSet and ServiceAccount.
func checkReporterObjects(namespace, name string, want reporterWant) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		var errs []string
		fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
		sa, err := env.Clientset().CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			fail("ServiceAccount automountServiceAccountToken %v, want false", sa.AutomountServiceAccountToken)
		}
		d, err := env.Clientset().AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Labels[cabundle.ManagedByLabel] != "kmshealth" || d.Labels["app.kubernetes.io/name"] != "kmshealth-reporter" || d.Labels["app.kubernetes.io/instance"] != name {
			fail("labels %v", d.Labels)
		}
		pod := d.Spec.Template.Spec
		if pod.ServiceAccountName != name || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			fail("serviceAccountName %q, automountServiceAccountToken %v", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
		}
		if !reflect.DeepEqual(pod.NodeSelector, want.nodeSelector) && (len(pod.NodeSelector) != 0 || len(want.nodeSelector) != 0) {
			fail("nodeSelector %v, want %v", pod.NodeSelector, want.nodeSelector)
		}
		if !reflect.DeepEqual(pod.Tolerations, want.tolerations) {
			fail("tolerations %+v, want %+v", pod.Tolerations, want.tolerations)
		}
		if pod.PriorityClassName != want.priorityClass {
			fail("priorityClassName %q, want %q", pod.PriorityClassName, want.priorityClass)
		}
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			fail("host namespaces shared")
		}
		vols := map[string]corev1.VolumeSource{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v.VolumeSource
		}
		if hp := vols["kms-sockets"].HostPath; hp == nil || hp.Path != want.socketDir || hp.Type == nil || *hp.Type != corev1.HostPathDirectory {
			fail("hostPath volume %+v, want directory %s", hp, want.socketDir)
		}
		if p := vols["kube-api-access"].Projected; p == nil || len(p.Sources) != 3 || p.Sources[0].ServiceAccountToken == nil ||
			*p.Sources[0].ServiceAccountToken.ExpirationSeconds != 3600 || p.Sources[1].ConfigMap == nil || p.Sources[1].ConfigMap.Name != "kube-root-ca.crt" ||
			p.Sources[2].DownwardAPI == nil {
			fail("projected token volume %+v", p)
		}
		if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
			return fmt.Errorf("containers %+v", pod.Containers)
		}
		ct := pod.Containers[0]
		if ct.Name != "reporter" || ct.Image != want.image {
			fail("container %q image %q, want reporter %q", ct.Name, ct.Image, want.image)
		}
		if !slices.Equal(ct.Args, want.args) {
			fail("args %q, want %q", ct.Args, want.args)
		}
		if len(ct.Env) != 1 || ct.Env[0].Name != "NODE_NAME" || ct.Env[0].ValueFrom == nil || ct.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
			fail("env %+v", ct.Env)
		}
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range ct.VolumeMounts {
			mounts[m.Name] = m
		}
		if m := mounts["kms-sockets"]; m.MountPath != want.socketDir || !m.ReadOnly {
			fail("socket mount %+v: want read-only at %s", m, want.socketDir)
		}
		if m := mounts["kube-api-access"]; m.MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m.ReadOnly {
			fail("token mount %+v", m)
		}
		if p := ct.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "health" {
			fail("liveness probe %+v", p)
		}
		sc := ct.SecurityContext
		nonRoot := want.runAsUser != 0
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != want.runAsUser || sc.RunAsGroup == nil || *sc.RunAsGroup != want.runAsGroup ||
			(sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) != nonRoot ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Privileged != nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			fail("container securityContext %+v", sc)
		}
		if len(errs) > 0 {
			return fmt.Errorf("DaemonSet %s/%s:\n%s", namespace, name, strings.Join(errs, "\n"))
		}
		return nil
	}
}

// checkCRDInstalled asserts the KMSHealth CRD is established and labelled
// as this installation's, and its object exists.
func checkCRDInstalled(namespace, name, object string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		crd, err := dynamicClient().Resource(kmshealth.CRDGVR).Get(ctx, kmshealth.CRDName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !reporterinstall.OwnsShared(crd, namespace, name) {
			return fmt.Errorf("CRD labels %v: not this installation's", crd.GetLabels())
		}
		established := false
		for _, c := range kmshealth.Conditions(crd) {
			established = established || (c.Type == "Established" && c.Status == metav1.ConditionTrue)
		}
		if !established {
			return fmt.Errorf("CRD %s not established: %v", kmshealth.CRDName, crd.Object["status"])
		}
		obj, err := dynamicClient().Resource(kmshealth.DefaultTarget().GVR()).Get(ctx, object, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("KMSHealth %s: %w", object, err)
		}
		if !reporterinstall.OwnsShared(obj, namespace, name) {
			return fmt.Errorf("KMSHealth %s labels %v: not this installation's", object, obj.GetLabels())
		}
		return nil
	}
}

// checkCRDGone asserts the KMSHealth CRD does not exist.
func checkCRDGone(*terraform.State) error {
	_, err := dynamicClient().Resource(kmshealth.CRDGVR).Get(context.Background(), kmshealth.CRDName, metav1.GetOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("CRD %s still there", kmshealth.CRDName)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read CRD %s: %w", kmshealth.CRDName, err)
	}
	return nil
}

// checkReporterUninstalled is a CheckDestroy: no object of the
// installation is left, by label anywhere in the cluster or by name.
func checkReporterUninstalled(namespace, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c := env.Clientset()
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name + "," + reporterinstall.NamespaceLabel + "=" + namespace}
		var left leftBehind
		sas, err := c.CoreV1().ServiceAccounts("").List(ctx, sel)
		left.listed("ServiceAccounts", len(sas.Items), err)
		dss, err := c.AppsV1().DaemonSets("").List(ctx, sel)
		left.listed("DaemonSets", len(dss.Items), err)
		crs, err := c.RbacV1().ClusterRoles().List(ctx, sel)
		left.listed("ClusterRoles", len(crs.Items), err)
		crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, sel)
		left.listed("ClusterRoleBindings", len(crbs.Items), err)
		crds, err := dynamicClient().Resource(kmshealth.CRDGVR).List(ctx, sel)
		left.listed("CustomResourceDefinitions", len(crds.Items), err)
		cfg := reporterinstall.Config{Namespace: namespace, Name: name}
		left.named(map[string]error{
			"DaemonSet":          errOf(c.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})),
			"ServiceAccount":     errOf(c.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})),
			"ClusterRole":        errOf(c.RbacV1().ClusterRoles().Get(ctx, cfg.ClusterRoleName(), metav1.GetOptions{})),
			"ClusterRoleBinding": errOf(c.RbacV1().ClusterRoleBindings().Get(ctx, cfg.ClusterRoleName(), metav1.GetOptions{})),
		})
		return left.err(namespace, name)
	}
}

// statusPatch is a patch of the status of one object, which is what a
// reporter's server-side apply of its condition is to RBAC.
func statusPatch(t kmshealth.Target) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: "patch", Group: t.Group, Version: t.Version, Resource: t.Resource, Subresource: "status", Name: t.Name}
}

// deniedToReporter is what a reporter must never be allowed, besides
// other names of its own target (added by the caller).
func deniedToReporter(namespace string, t kmshealth.Target) []authorizationv1.ResourceAttributes {
	other := kmshealth.Target{Group: "kmshealth.io", Version: "v1alpha1", Resource: "kmshealths", Name: "cluster"}
	if t.IsDefault() {
		other = kmshealth.Target{Group: "operator.openshift.io", Version: "v1", Resource: "kubeapiservers", Name: "cluster"}
	}
	main := statusPatch(t)
	main.Subresource = ""
	update := statusPatch(t)
	update.Verb = "update"
	get := statusPatch(t)
	get.Verb, get.Subresource = "get", ""
	getStatus := statusPatch(t)
	getStatus.Verb = "get"
	list := get
	list.Verb, list.Name = "list", ""
	return []authorizationv1.ResourceAttributes{
		statusPatch(other), // the same name of another resource
		main,               // the object itself, not its status
		update,             // PUT of the status
		getStatus, get, list,
		{Verb: "delete", Group: t.Group, Resource: t.Resource, Name: t.Name},
		{Verb: "create", Group: t.Group, Resource: t.Resource},
		{Namespace: namespace, Verb: "get", Resource: "secrets"},
		{Verb: "list", Resource: "secrets"},
		{Verb: "list", Resource: "nodes"},
		{Verb: "get", Resource: "nodes", Name: "cp-1"},
		{Namespace: namespace, Verb: "create", Resource: "pods"},
		{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: kmshealth.CRDName},
	}
}

// writeAsServiceAccount writes a node's condition on target the way the
// reporter does (server-side apply of the status), authenticated as the
// installed ServiceAccount with a token bound to a pod on node, as the
// kubelet requests it (the admission policy refuses any other).
func writeAsServiceAccount(t *testing.T, namespace, name string, target kmshealth.Target, kind, node string) error {
	t.Helper()
	dyn, err := dynamic.NewForConfig(testenv.AsToken(env.RESTConfig(), nodeBoundToken(t, namespace, name, node)))
	if err != nil {
		return err
	}
	c := metav1.Condition{Type: kmshealth.ReporterConditionType(node), Status: metav1.ConditionTrue, Reason: kmshealth.ReasonAsExpected, Message: "[]", LastTransitionTime: metav1.Now()}
	return kmshealth.ApplyCondition(context.Background(), dyn, target, kind, c, kmshealth.ReporterFieldManager(node))
}

// nodeBoundToken is a token of ServiceAccount namespace/sa bound to a pod
// on node (created if missing), as the kubelet requests it for a reporter
// pod: the only kind the reporter's admission policy lets write.
func nodeBoundToken(t *testing.T, namespace, sa, node string) string {
	t.Helper()
	core := env.Clientset()
	n, err := core.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	switch {
	case err == nil:
		t.Cleanup(func() { _ = core.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}) })
	case !apierrors.IsAlreadyExists(err):
		t.Fatal(err)
	}
	return testenv.PodToken(t, core, namespace, sa, node)
}

// checkWritesOnlyItsTarget proves the RBAC by real writes: the
// ServiceAccount may write its condition on the target, and is Forbidden
// from writing it on another object of the same resource.
func checkWritesOnlyItsTarget(t *testing.T, namespace, name string, target kmshealth.Target, kind string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if err := writeAsServiceAccount(t, namespace, name, target, kind, "cp-1"); err != nil {
			return fmt.Errorf("the reporter's ServiceAccount cannot write its condition: %w", err)
		}
		other := target
		other.Name = "someone-elses"
		switch err := writeAsServiceAccount(t, namespace, name, other, kind, "cp-1"); {
		case err == nil:
			return fmt.Errorf("write to %s allowed, want Forbidden", other)
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("write to %s: %w, want Forbidden", other, err)
		}
		return nil
	}
}

// TestAccReporter_basic installs the reporter with every default and checks
// the objects, the CRD and its object, the RBAC by SubjectAccessReview and
// by real writes, the empty plan, import, and drift of the
// ClusterRoleBinding, the DaemonSet and the KMSHealth object, each
// restored by the next apply; destroy removes the CRD.
func TestAccReporter_basic(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ctx := context.Background()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := reporterinstall.DefaultName
	config := reporterConfig(fmt.Sprintf("namespace = %q", ns))
	target := kmshealth.DefaultTarget()
	other := target
	other.Name = "staging"
	denied := append(deniedToReporter(ns, target), statusPatch(other))
	allowed := []authorizationv1.ResourceAttributes{statusPatch(target)}
	daemonSets := env.Clientset().AppsV1().DaemonSets(ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkReporterUninstalled(ns, name), checkCRDGone, checkNamespaceKept(ns)),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "id", ns+"/"+name),
					resource.TestCheckResourceAttr(reporterAddr, "name", name),
					resource.TestCheckResourceAttr(reporterAddr, "image", install.DefaultImage("test")),
					resource.TestCheckNoResourceAttr(reporterAddr, "kms_sockets"),
					resource.TestCheckResourceAttr(reporterAddr, "socket_dir", "/var/run/kmsplugin"),
					resource.TestCheckResourceAttr(reporterAddr, "probe_interval", "30s"),
					resource.TestCheckResourceAttr(reporterAddr, "read_timeout", "5s"),
					resource.TestCheckResourceAttr(reporterAddr, "write_timeout", "10s"),
					resource.TestCheckResourceAttr(reporterAddr, "target", "kmshealth.io/v1alpha1/kmshealths/cluster"),
					resource.TestCheckResourceAttr(reporterAddr, "install_crd", "true"),
					resource.TestCheckResourceAttr(reporterAddr, "node_selector.%", "1"),
					resource.TestCheckResourceAttr(reporterAddr, "node_selector.node-role.kubernetes.io/control-plane", ""),
					resource.TestCheckResourceAttr(reporterAddr, "tolerations.#", "1"),
					resource.TestCheckResourceAttr(reporterAddr, "tolerations.0.key", "node-role.kubernetes.io/control-plane"),
					resource.TestCheckResourceAttr(reporterAddr, "tolerations.0.operator", "Exists"),
					resource.TestCheckResourceAttr(reporterAddr, "tolerations.0.effect", "NoSchedule"),
					resource.TestCheckNoResourceAttr(reporterAddr, "tolerations.0.value"),
					resource.TestCheckResourceAttr(reporterAddr, "run_as_user", "0"),
					resource.TestCheckResourceAttr(reporterAddr, "run_as_group", "0"),
					resource.TestCheckResourceAttr(reporterAddr, "priority_class_name", "system-node-critical"),
					resource.TestCheckResourceAttr(reporterAddr, "cpu_request", "10m"),
					resource.TestCheckResourceAttr(reporterAddr, "service_account", name),
					resource.TestCheckResourceAttr(reporterAddr, "cluster_role", "kmshealth-reporter:"+ns+":"+name),
					resource.TestCheckResourceAttr(reporterAddr, "objects_in_sync", "true"),
					checkReporterObjects(ns, name, defaultReporterWant()),
					checkCRDInstalled(ns, name, "cluster"),
					checkAccess(ns, name, allowed, denied),
					checkWritesOnlyItsTarget(t, ns, name, target, kmshealth.Kind),
				),
			},
			{ResourceName: reporterAddr, ImportState: true, ImportStateId: ns + "/" + name, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"wait_for_rollout"}},
			{ResourceName: reporterAddr, ImportState: true, ImportStateId: name, ExpectError: wrappedRE(`want <namespace>/<name>`)},
			{ResourceName: reporterAddr, ImportState: true, ImportStateId: ns + "/nothing-here", ExpectError: wrappedRE(`DaemonSet ` + ns + `/nothing-here does not exist`)},
			// The ClusterRoleBinding is deleted: the next plan shows it, the
			// apply restores it.
			outOfBand(config, func() {
				crbs := env.Clientset().RbacV1().ClusterRoleBindings()
				if err := crbs.Delete(ctx, "kmshealth-reporter:"+ns+":"+name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}),
			{Config: config, Check: resource.ComposeAggregateTestCheckFunc(checkAccess(ns, name, allowed, denied), checkWritesOnlyItsTarget(t, ns, name, target, kmshealth.Kind))},
			// kubectl edit of the DaemonSet's arguments: drift, restored.
			outOfBand(config, func() {
				d, err := daemonSets.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				args := d.Spec.Template.Spec.Containers[0].Args
				args[1] = "--interval=5m"
				if _, err := daemonSets.Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
					t.Fatal(err)
				}
			}),
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "probe_interval", "30s"),
					checkReporterObjects(ns, name, defaultReporterWant()),
				),
			},
			// The KMSHealth object is deleted: recreated.
			outOfBand(config, func() {
				if err := dynamicClient().Resource(target.GVR()).Delete(ctx, target.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}),
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "objects_in_sync", "true"),
					checkCRDInstalled(ns, name, "cluster"),
				),
			},
		},
	})
}

// createTargetCRD serves <group>/v1 <plural> (Kind kind), cluster-scoped
// with the KMSHealth status schema, as an operator's CR is; creates the
// object name; and removes both when the test ends.
func createTargetCRD(t *testing.T, group, kind, plural, name string) kmshealth.Target {
	t.Helper()
	ctx := context.Background()
	dyn := dynamicClient()
	crd := kmshealth.CRD()
	crd.SetName(plural + "." + group)
	crd.SetLabels(nil)
	set := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	set(unstructured.SetNestedField(crd.Object, group, "spec", "group"))
	set(unstructured.SetNestedStringMap(crd.Object, map[string]string{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)}, "spec", "names"))
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	versions[0].(map[string]any)["name"] = "v1"
	// An operator's conditions are any metav1.Condition, not only ours.
	item := []string{"schema", "openAPIV3Schema", "properties", "status", "properties", "conditions", "items"}
	unstructured.RemoveNestedField(versions[0].(map[string]any), append(item, "x-kubernetes-validations")...)
	unstructured.RemoveNestedField(versions[0].(map[string]any), append(item, "properties", "reason", "enum")...)
	set(unstructured.SetNestedField(versions[0].(map[string]any), `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`,
		append(item, "properties", "type", "pattern")...))
	set(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	crds := dyn.Resource(kmshealth.CRDGVR)
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := crds.Delete(wctx, crd.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete CRD %s: %v", crd.GetName(), err)
		}
		if err := kube.WaitGone(wctx, dyn.Resource(kmshealth.CRDGVR), crd.GetName()); err != nil {
			t.Error(err)
		}
	})
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := kube.WaitFor(wctx, dyn.Resource(kmshealth.CRDGVR), crd.GetName(), kmshealth.Established); err != nil {
		t.Fatal(err)
	}
	target := kmshealth.Target{Group: group, Version: "v1", Resource: plural, Name: name}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(group + "/v1")
	obj.SetKind(kind)
	obj.SetName(name)
	// Right after the CRD is established its resource may take a moment to
	// be served.
	for {
		_, err := dyn.Resource(target.GVR()).Create(wctx, obj, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || wctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return target
}

func writeCondition(t *testing.T, target kmshealth.Target, kind, typ, fieldManager string) {
	t.Helper()
	c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: kmshealth.ReasonAsExpected, Message: "[]", LastTransitionTime: metav1.Now()}
	if err := kmshealth.ApplyCondition(context.Background(), dynamicClient(), target, kind, c, fieldManager); err != nil {
		t.Fatal(err)
	}
}

func conditionTypesOf(target kmshealth.Target) ([]string, error) {
	obj, err := kmshealth.GetTarget(context.Background(), dynamicClient(), target)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range kmshealth.Conditions(obj) {
		out = append(out, c.Type)
	}
	slices.Sort(out)
	return out, nil
}

// TestAccReporter_customTarget reports to an operator-style object (no
// CRD of ours) with fixed sockets, as a non-root user, on other nodes;
// updates the sockets and timing; imports; and on destroy removes only
// kmshealth's conditions from the object, which stays.
func TestAccReporter_customTarget(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := "kms"
	group := uniqueName(t) + ".example.com"
	target := createTargetCRD(t, group, "KubeAPIServer", "kubeapiservers", "cluster")
	body := func(sockets, timing string) string {
		return reporterConfig(fmt.Sprintf(`
  namespace           = %q
  name                = %q
  target              = %q
  install_crd         = false
  kms_sockets         = [%s]
  run_as_user         = 65532
  node_selector       = { "kms" = "yes" }
  tolerations         = [{ operator = "Exists" }, { key = "dedicated", value = "kms", effect = "NoExecute", toleration_seconds = 30 }]
  priority_class_name = ""
  cpu_request         = ""
%s
`, ns, name, target.String(), sockets, timing))
	}
	first := body(`"unix:///var/run/kmsplugin/kms-2.sock", "unix:///var/run/kmsplugin/kms-1.sock"`, "")
	second := body(`"unix:///var/run/kmsplugin/kms-3.sock", "unix:///var/run/kmsplugin/kms-2.sock"`, `probe_interval = "1m"
read_timeout = "2s"`)
	seconds := int64(30)
	want := reporterWant{
		image: install.DefaultImage("test"),
		args: []string{"report", "--interval=30s", "--read-timeout=5s", "--write-timeout=10s", "--target=" + target.String(),
			"--health-probe-bind-address=:8082", "--metrics-bind-address=:8444", "--kms-socket=unix:///var/run/kmsplugin/kms-1.sock", "--kms-socket=unix:///var/run/kmsplugin/kms-2.sock"},
		socketDir: "/var/run/kmsplugin", runAsUser: 65532, runAsGroup: 65532,
		nodeSelector: map[string]string{"kms": "yes"},
		tolerations:  []corev1.Toleration{{Operator: "Exists"}, {Key: "dedicated", Value: "kms", Effect: "NoExecute", TolerationSeconds: &seconds}},
	}
	wantSecond := want
	wantSecond.args = []string{"report", "--interval=1m0s", "--read-timeout=2s", "--write-timeout=10s", "--target=" + target.String(),
		"--health-probe-bind-address=:8082", "--metrics-bind-address=:8444", "--kms-socket=unix:///var/run/kmsplugin/kms-2.sock", "--kms-socket=unix:///var/run/kmsplugin/kms-3.sock"}
	typed := body(`"unix:///var/run/kmsplugin/kms-3.sock", "unix:///var/run/kmsplugin/kms-2.sock"`, `probe_interval = "1m"
read_timeout = "2s"
report_format = "openshift-typed"`)
	wantTyped := wantSecond
	wantTyped.args = []string{"report", "--interval=1m0s", "--read-timeout=2s", "--write-timeout=10s", "--target=" + target.String(),
		"--health-probe-bind-address=:8082", "--metrics-bind-address=:8444", "--report-format=openshift-typed",
		"--kms-socket=unix:///var/run/kmsplugin/kms-2.sock", "--kms-socket=unix:///var/run/kmsplugin/kms-3.sock"}
	other := target
	other.Name = "other"
	denied := append(deniedToReporter(ns, target), statusPatch(other))

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkReporterUninstalled(ns, name),
			checkNamespaceKept(ns),
			func(*terraform.State) error { // only the operator's condition is left
				got, err := conditionTypesOf(target)
				if err != nil {
					return fmt.Errorf("the target object: %w", err)
				}
				if !slices.Equal(got, []string{"Available"}) {
					return fmt.Errorf("conditions left on %s: %v, want only the operator's", target, got)
				}
				return nil
			},
		),
		Steps: []resource.TestStep{
			{
				Config: first,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "kms_sockets.#", "2"),
					resource.TestCheckNoResourceAttr(reporterAddr, "socket_dir"),
					resource.TestCheckResourceAttr(reporterAddr, "install_crd", "false"),
					resource.TestCheckResourceAttr(reporterAddr, "run_as_group", "65532"),
					resource.TestCheckResourceAttr(reporterAddr, "tolerations.1.toleration_seconds", "30"),
					checkReporterObjects(ns, name, want),
					checkAccess(ns, name, []authorizationv1.ResourceAttributes{statusPatch(target)}, denied),
					checkWritesOnlyItsTarget(t, ns, name, target, "KubeAPIServer"),
					func(*terraform.State) error {
						crd, err := dynamicClient().Resource(kmshealth.CRDGVR).Get(context.Background(), kmshealth.CRDName, metav1.GetOptions{})
						if err == nil && reporterinstall.OwnsShared(crd, ns, name) {
							return fmt.Errorf("install_crd = false installed the KMSHealth CRD")
						}
						return nil
					},
				),
			},
			{
				// Reporters, the aggregator and the operator write conditions.
				PreConfig: func() {
					for _, node := range []string{"cp-1", "cp-2"} {
						writeCondition(t, target, "KubeAPIServer", kmshealth.ReporterConditionType(node), kmshealth.ReporterFieldManager(node))
					}
					writeCondition(t, target, "KubeAPIServer", kmshealth.DegradedCondition, kmshealth.AggregatorFieldManager)
					writeCondition(t, target, "KubeAPIServer", "Available", "operator")
				},
				Config: second,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "probe_interval", "1m"),
					checkReporterObjects(ns, name, wantSecond),
				),
			},
			// The plans after that apply: 1m is stored as 1m0s, no diff.
			{
				// OpenShift's typed format replaces the installation: the
				// DaemonSet passes it on, the admission policy follows it,
				// and import reads it back.
				Config: typed,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(reporterAddr, plancheck.ResourceActionReplace),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "report_format", "openshift-typed"),
					checkReporterObjects(ns, name, wantTyped),
					func(*terraform.State) error {
						p, err := env.Clientset().AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), "kmshealth-reporter."+ns+"."+name, metav1.GetOptions{})
						if err != nil {
							return err
						}
						for _, v := range p.Spec.Validations {
							if strings.Contains(v.Message, "may change only .status.encryptionStatus.healthReports") {
								return nil
							}
						}
						return fmt.Errorf("the admission policy %s does not guard healthReports entries: %+v", p.Name, p.Spec)
					},
				),
			},
			{
				ResourceName: reporterAddr, ImportState: true, ImportStateId: ns + "/" + name, ImportStateVerify: true,
				// The import reads Go's spelling of the duration.
				ImportStateVerifyIgnore: []string{"probe_interval", "wait_for_rollout"},
			},
		},
	})
}

// TestAccReporter_installCRDOff turns install_crd off: the CRD and its
// object are handed over (no perpetual diff), and destroy keeps them.
func TestAccReporter_installCRDOff(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := reporterinstall.DefaultName
	dyn := dynamicClient()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = dyn.Resource(kmshealth.CRDGVR).Delete(ctx, kmshealth.CRDName, metav1.DeleteOptions{})
		if err := kube.WaitGone(ctx, dyn.Resource(kmshealth.CRDGVR), kmshealth.CRDName); err != nil {
			t.Error(err)
		}
	})
	off := reporterConfig(fmt.Sprintf("namespace = %q\ninstall_crd = false", ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkReporterUninstalled(ns, name),
			func(*terraform.State) error {
				obj, err := dyn.Resource(kmshealth.DefaultTarget().GVR()).Get(context.Background(), "cluster", metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("the handed-over KMSHealth object: %w", err)
				}
				if len(kmshealth.Conditions(obj)) != 0 {
					return fmt.Errorf("conditions left: %v", kmshealth.Conditions(obj))
				}
				return nil
			},
		),
		Steps: []resource.TestStep{
			{Config: reporterConfig(fmt.Sprintf("namespace = %q", ns)), Check: checkCRDInstalled(ns, name, "cluster")},
			{
				Config: off,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "install_crd", "false"),
					func(*terraform.State) error {
						crd, err := dyn.Resource(kmshealth.CRDGVR).Get(context.Background(), kmshealth.CRDName, metav1.GetOptions{})
						if err != nil {
							return err
						}
						if reporterinstall.OwnsShared(crd, ns, name) {
							return fmt.Errorf("CRD still labelled as the installation's: %v", crd.GetLabels())
						}
						return nil
					},
					checkWritesOnlyItsTarget(t, ns, name, kmshealth.DefaultTarget(), kmshealth.Kind),
				),
			},
		},
	})
}

// TestAccReporter_refused: objects of someone else at the installation's
// names and a namespace that forbids hostPath stop the apply before any
// write; nothing is deleted.
func TestAccReporter_refused(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ctx := context.Background()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	sas := env.Clientset().CoreV1().ServiceAccounts(ns)
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: reporterinstall.DefaultName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	restricted := uniqueName(t) + "-restricted"
	if _, err := env.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: restricted, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{
			{
				Config:      reporterConfig(fmt.Sprintf("namespace = %q", ns)),
				ExpectError: wrappedRE(`ServiceAccount ` + ns + `/kmshealth-reporter exists and was not created by this installation \(it lacks the labels`),
			},
			{
				Config:      reporterConfig(fmt.Sprintf("namespace = %q", restricted)),
				ExpectError: literalRE(`namespace "`+restricted+`" enforces the "restricted" Pod Security Standard`, "e.g. kube-system"),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			checkReporterUninstalled(restricted, reporterinstall.DefaultName),
			checkCRDGone,
			func(*terraform.State) error {
				if _, err := sas.Get(ctx, reporterinstall.DefaultName, metav1.GetOptions{}); err != nil {
					return fmt.Errorf("the user's ServiceAccount: %w", err)
				}
				if _, err := env.Clientset().AppsV1().DaemonSets(ns).Get(ctx, reporterinstall.DefaultName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("a refused apply created the DaemonSet (err=%w)", err)
				}
				return nil
			},
		),
	})
}

// TestAccReporter_runsUnderItsOwnRBAC runs the real provider binary with
// the installed DaemonSet's own arguments, authenticated as the installed
// ServiceAccount, as one node: in its own mount namespace, a test KMS
// plugin's directory bind-mounted read-only over /var/run/kmsplugin, as the
// DaemonSet mounts it. Its condition must reach the target with the
// plugin's key, with no Forbidden error: the RBAC is sufficient, not only
// minimal, and a read-only mount is enough to probe. (There is no kubelet:
// the pod's process runs on the host, with a kubeconfig instead of the
// projected token, and the node name the downward API would give.)
func TestAccReporter_runsUnderItsOwnRBAC(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ctx := context.Background()
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := reporterinstall.DefaultName
	binary, err := devenv.BuildProvider(ctx, t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	sockets := t.TempDir()
	plugin, err := kmstest.Start(filepath.Join(sockets, "kms-1.sock"), "kek-own-rbac")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plugin.Stop)
	if err := os.MkdirAll(kmshealth.SocketDir, 0o755); err != nil { // the mount point
		t.Fatal(err)
	}
	const node = "cp-own-rbac"
	config := reporterConfig(fmt.Sprintf(`
  namespace      = %q
  kms_sockets    = ["unix:///var/run/kmsplugin/kms-1.sock"]
  probe_interval = "5s"
  read_timeout   = "2s"
  write_timeout  = "4s"
`, ns))

	runReporter := func(*terraform.State) error {
		d, err := env.Clientset().AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var args []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args[1:] {
			switch { // the pod's ports would clash on the host
			case strings.HasPrefix(a, "--health-probe-bind-address="):
				a = "--health-probe-bind-address=127.0.0.1:0"
			case strings.HasPrefix(a, "--metrics-bind-address="):
				a = "--metrics-bind-address=127.0.0.1:0"
			}
			args = append(args, a)
		}
		// A token bound to a pod on the node, as the kubelet mounts it.
		sa := d.Spec.Template.Spec.ServiceAccountName
		args = append(args, "--node-name="+node, "--kubeconfig="+tokenKubeconfig(t, nodeBoundToken(t, ns, sa, node)))
		script := `mount --bind "$0" /var/run/kmsplugin && mount -o remount,bind,ro /var/run/kmsplugin &&
if touch /var/run/kmsplugin/.writable 2>/dev/null; then echo "socket directory is writable" >&2; exit 97; fi
exec "$@"`
		logs := &devenv.SyncBuffer{}
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, sockets, binary, "report"}, args...)...)
		cmd.Stdout, cmd.Stderr = logs, logs
		p, err := devenv.StartCommand(cmd)
		if err != nil {
			return err
		}
		defer p.Stop()
		fail := func(format string, a ...any) error {
			return fmt.Errorf(format+"\nreporter %q log:\n%s", append(a, args, logs.String())...)
		}
		target := kmshealth.DefaultTarget()
		objects := dynamicClient().Resource(target.GVR())
		lw := listWatch(objects.List, objects.Watch, "metadata.name="+target.Name)
		var got metav1.Condition
		err = waitUntil(lw, &unstructured.Unstructured{}, 60*time.Second, func(obj *unstructured.Unstructured) bool {
			for _, c := range kmshealth.Conditions(obj) {
				if c.Type == kmshealth.ReporterConditionType(node) {
					got = c
					return true
				}
			}
			return false
		})
		if err != nil {
			return fail("no condition from node %s on %s: %v", node, target, err)
		}
		plugins, err := kmshealth.ParseMessage(got.Message)
		if err != nil {
			return fail("condition message %q: %v", got.Message, err)
		}
		if got.Status != metav1.ConditionTrue || len(plugins) != 1 || plugins[0].KeyID != "1" || plugins[0].KEKID != "kek-own-rbac" {
			return fail("condition %+v, want the healthy plugin kms-1 with key kek-own-rbac", got)
		}
		if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
			return fail("the reporter was denied something it needs")
		}
		return nil
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkReporterUninstalled(ns, name), checkCRDGone),
		Steps: []resource.TestStep{{
			Config: config,
			Check:  runReporter,
		}},
	})
}

// TestAccReporter_shortInterval: the documented minimum probe_interval
// plans and applies with the default timeouts, which follow the interval.
func TestAccReporter_shortInterval(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	name := reporterinstall.DefaultName
	want := defaultReporterWant()
	want.args = []string{"report", "--interval=5s", "--read-timeout=1.25s", "--write-timeout=2.5s", "--target=kmshealth.io/v1alpha1/kmshealths/cluster",
		"--health-probe-bind-address=:8082", "--metrics-bind-address=:8444", "--socket-dir=/var/run/kmsplugin"}
	config := reporterConfig(fmt.Sprintf("namespace = %q\nprobe_interval = \"5s\"", ns))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkReporterUninstalled(ns, name), checkCRDGone),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(reporterAddr, "read_timeout", "1.25s"),
					resource.TestCheckResourceAttr(reporterAddr, "write_timeout", "2.5s"),
					checkReporterObjects(ns, name, want),
				),
			},
		},
	})
}

// TestAccReporter_waitForRollout: by default the apply waits (by watch)
// until the DaemonSet's pods are updated and available on every node it is
// scheduled to — here a fake DaemonSet controller completes it — and a
// rollout that never completes ends at the create timeout, saying how far
// it got.
func TestAccReporter_waitForRollout(t *testing.T) {
	// Serial, as every reporter test that applies: an installation installs,
	// hands over or checks the absence of the cluster-scoped KMSHealth CRD
	// (kmshealths.kmshealth.io), which the other reporter tests and the data
	// source tests share.
	ns := uniqueName(t)
	mustCreateNamespace(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	daemonSets := env.Clientset().AppsV1().DaemonSets(ns)
	w, err := daemonSets.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=done"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { // the DaemonSet controller, for one node
		defer w.Stop()
		for ev := range w.ResultChan() {
			ds, ok := ev.Object.(*appsv1.DaemonSet)
			if !ok || ev.Type == watch.Deleted || ds.Status.ObservedGeneration == ds.Generation {
				continue
			}
			ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1,
				UpdatedNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1}
			_, _ = daemonSets.UpdateStatus(ctx, ds, metav1.UpdateOptions{})
		}
	}()
	body := func(name, create string) string { // no wait_for_rollout: its default is under test
		return providerBlock() + fmt.Sprintf("\nresource \"kmshealth_reporter\" \"test\" {\nnamespace = %q\nname = %q\ninstall_crd = false\n"+
			"target = \"kmshealth.io/v1alpha1/kmshealths/%s\"\ntimeouts {\n  create = %q\n}\n}\n", ns, name, name, create)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReporterUninstalled(ns, "done"),
		Steps: []resource.TestStep{{
			Config: body("done", "30s"),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(reporterAddr, "wait_for_rollout", "true"),
				func(*terraform.State) error {
					ds, err := daemonSets.Get(ctx, "done", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if ds.Status.NumberAvailable != 1 || ds.Status.ObservedGeneration != ds.Generation {
						return fmt.Errorf("apply returned before the rollout: %+v", ds.Status)
					}
					return nil
				},
			),
		}},
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6,
		CheckDestroy:             checkReporterUninstalled(ns, "never"),
		Steps: []resource.TestStep{{
			Config:      body("never", "3s"),
			ExpectError: wrappedRE(`DaemonSet ` + ns + `/never did not roll out in time \(observed generation 0 of 1`),
		}},
	})
}
