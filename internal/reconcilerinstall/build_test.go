package reconcilerinstall

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/incluster"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
)

func testConfig() Config {
	return Config{
		Namespace: "kmshealth-system",
		Name:      DefaultName,
		Image:     install.DefaultImage("v1.2.3"),
		Replicas:  DefaultReplicas,
		CABundles: map[string]cabundle.Source{
			"v1beta1.metrics.k8s.io": {Kind: cabundle.KindSecret, Namespace: "kube-system", Name: "metrics-tls", Key: "ca.crt"},
			"v1.x":                   {Kind: cabundle.KindConfigMap, Namespace: "kube-system", Name: "kmshealth-cabundle-v1.x", Key: "ca.crt"},
			"v2beta1.metrics.k8s.io": {Kind: cabundle.KindSecret, Namespace: "kube-system", Name: "metrics-tls", Key: "tls.crt"}, // same object, other key
			"v1.apps.example.com":    {Kind: cabundle.KindSecret, Namespace: "apps", Name: "api-ca", Key: "ca.crt"},
		},
		Resources: DefaultResources(),
	}
}

// roundTrip turns an apply configuration into the typed object the API
// server would store, to assert on plain fields.
func roundTrip[T any](t *testing.T, ac any) *T {
	t.Helper()
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArgsParseWithTheReconcilersOwnFlags runs the Deployment's arguments
// through the reconcile mode's flag set and Validate, so the two cannot
// drift apart, and checks the Lease the Role grants is the one it uses.
func TestArgsParseWithTheReconcilersOwnFlags(t *testing.T) {
	c := Config{Name: DefaultName}
	args := Args(c)
	if args[0] != "reconcile" {
		t.Fatalf("first argument %q, want the reconcile mode", args[0])
	}
	var o reconciler.Options
	expanded := make([]string, 0, len(args))
	for _, a := range args { // kubelet expands $(POD_NAMESPACE)
		expanded = append(expanded, strings.ReplaceAll(a, "$(POD_NAMESPACE)", "kmshealth-system"))
	}
	if err := incluster.ParseArgs("reconcile", expanded, &o); err != nil {
		t.Fatalf("reconcile rejects %q: %v", expanded, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("reconcile's Validate rejects %q: %v", expanded, err)
	}
	if o.Namespace != "kmshealth-system" || !o.LeaderElect || o.Metrics.BindAddress != ":8443" || o.HealthProbeBindAddress != ":8081" || o.Kubeconfig != "" {
		t.Errorf("parsed options %+v", o)
	}
	if o.LeaseName != LeaseName {
		t.Errorf("reconcile's Lease is %q, the leader-election Role grants %q", o.LeaseName, LeaseName)
	}
	if granted := BuildLeaderRole(c).Rules[1].ResourceNames; !slices.Equal(granted, []string{o.LeaseName}) {
		t.Errorf("reconcile's Lease is %q, the leader-election Role grants %q", o.LeaseName, granted)
	}
	if o.RecordConfigMap != c.RecordName() {
		t.Errorf("reconcile reads the record %q, the installation writes %q", o.RecordConfigMap, c.RecordName())
	}
	if o.FieldManager != install.FieldManager {
		t.Errorf("reconcile's field manager %q, installation's %q", o.FieldManager, install.FieldManager)
	}
}

func TestBuildDeployment(t *testing.T) {
	c := testConfig()
	d := roundTrip[appsv1.Deployment](t, BuildDeployment(c))
	if d.Name != DefaultName || d.Namespace != "kmshealth-system" || *d.Spec.Replicas != 2 {
		t.Errorf("name %s/%s replicas %d", d.Namespace, d.Name, *d.Spec.Replicas)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not select the pod template (labels %v)", k, v, d.Spec.Template.Labels)
		}
	}
	pod := d.Spec.Template.Spec
	// No automounted token: a projected one that expires.
	if pod.ServiceAccountName != DefaultName || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("serviceAccountName %q automount %v", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Projected == nil || *pod.Volumes[0].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3600 ||
		len(pod.Containers[0].VolumeMounts) != 1 || pod.Containers[0].VolumeMounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
		t.Errorf("token volume %+v, mounts %+v", pod.Volumes, pod.Containers[0].VolumeMounts)
	}
	if psc := pod.SecurityContext; psc == nil || !*psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	terms := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" ||
		terms[0].PodAffinityTerm.LabelSelector.MatchLabels[install.InstanceLabel] != DefaultName {
		t.Errorf("anti-affinity %+v", terms)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers %+v", pod.Containers)
	}
	ct := pod.Containers[0]
	if ct.Name != "reconciler" || ct.Image != "ghcr.io/kmshealth/terraform-provider-kmshealth:v1.2.3" {
		t.Errorf("container %s image %s", ct.Name, ct.Image)
	}
	if !slices.Equal(ct.Args, []string{"reconcile", "--namespace=$(POD_NAMESPACE)", "--leader-elect=true", "--leader-elect-lease-name=kmshealth-reconciler", "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081",
		"--record-configmap=kmshealth-reconciler-record", "--kms-target=kmshealth.io/v1alpha1/kmshealths/cluster", "--kms-max-staleness=2m0s", "--field-manager=kmshealth"}) {
		t.Errorf("args %q", ct.Args)
	}
	if len(ct.Env) != 1 || ct.Env[0].Name != "POD_NAMESPACE" || ct.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("env %+v", ct.Env)
	}
	ports := map[string]int32{}
	for _, p := range ct.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 8443 || ports["health"] != 8081 || len(ports) != 2 {
		t.Errorf("ports %v", ports)
	}
	for probe, path := range map[*corev1.Probe]string{ct.LivenessProbe: "/healthz", ct.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.StrVal != "health" {
			t.Errorf("probe for %s: %+v", path, probe)
		}
	}
	sc := ct.SecurityContext
	if !*sc.RunAsNonRoot || *sc.RunAsUser != 65532 || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || sc.Privileged != nil {
		t.Errorf("container securityContext %+v", sc)
	}
	if got := ct.Resources.Requests.Cpu().String(); got != "10m" {
		t.Errorf("cpu request %s", got)
	}
	if got := ct.Resources.Requests.Memory().String(); got != "32Mi" {
		t.Errorf("memory request %s", got)
	}
	if got := ct.Resources.Limits.Memory().String(); got != DefaultMemoryLimit {
		t.Errorf("memory limit %s", got)
	}
	if _, ok := ct.Resources.Limits[corev1.ResourceCPU]; ok {
		t.Error("a CPU limit is set; only memory is limited")
	}
}

func TestBuildResourcesOptional(t *testing.T) {
	c := testConfig()
	c.CPURequest, c.MemoryRequest, c.MemoryLimit = "", "", "0.5Gi"
	ct := roundTrip[appsv1.Deployment](t, BuildDeployment(c)).Spec.Template.Spec.Containers[0]
	if len(ct.Resources.Requests) != 0 || ct.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("resources %+v", ct.Resources)
	}
}

func TestBuildRBAC(t *testing.T) {
	c := testConfig()
	o, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	cr := roundTrip[rbacv1.ClusterRole](t, o.ClusterRole)
	if cr.Name != "kmshealth-reconciler:kmshealth-system:kmshealth-reconciler" {
		t.Errorf("ClusterRole name %q", cr.Name)
	}
	for _, r := range cr.Rules {
		for _, res := range r.Resources {
			if res == "secrets" || res == "configmaps" || res == "*" || slices.Contains(r.Verbs, "*") {
				t.Errorf("ClusterRole grants %v on %v cluster-wide", r.Verbs, r.Resources)
			}
		}
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{"kmshealths.kmshealth.io"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"kmshealth.io"}, Resources: []string{"kmshealths"}, ResourceNames: []string{"cluster"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"kmshealth.io"}, Resources: []string{"kmshealths/status"}, ResourceNames: []string{"cluster"}, Verbs: []string{"patch"}},
		// One watch of every APIService (few, not secret); get and patch
		// of the kept ones only.
		{APIGroups: []string{"apiregistration.k8s.io"}, Resources: []string{"apiservices"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"apiregistration.k8s.io"}, Resources: []string{"apiservices"},
			ResourceNames: []string{"v1.apps.example.com", "v1.x", "v1beta1.metrics.k8s.io", "v2beta1.metrics.k8s.io"}, Verbs: []string{"get", "patch"}},
	}
	if !install.SameJSON(cr.Rules, want) {
		t.Errorf("ClusterRole rules %+v", cr.Rules)
	}
	// Events only where Events about cluster-scoped APIServices must live.
	er := roundTrip[rbacv1.Role](t, o.EventsRole)
	if er.Namespace != "default" || !install.SameJSON(er.Rules, []rbacv1.PolicyRule{{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}}) {
		t.Errorf("events Role %s/%s %+v", er.Namespace, er.Name, er.Rules)
	}
	crb := roundTrip[rbacv1.ClusterRoleBinding](t, o.ClusterRoleBinding)
	if crb.RoleRef.Name != cr.Name || len(crb.Subjects) != 1 || crb.Subjects[0].Namespace != "kmshealth-system" || crb.Subjects[0].Name != DefaultName {
		t.Errorf("ClusterRoleBinding %+v", crb)
	}

	lr := roundTrip[rbacv1.Role](t, o.LeaderRole)
	if lr.Namespace != "kmshealth-system" || len(lr.Rules) != 3 ||
		!slices.Equal(lr.Rules[0].Verbs, []string{"create"}) || len(lr.Rules[0].ResourceNames) != 0 ||
		!slices.Equal(lr.Rules[1].ResourceNames, []string{"kmshealth-reconciler"}) || !slices.Equal(lr.Rules[1].Verbs, []string{"get", "update"}) ||
		!slices.Equal(lr.Rules[2].Resources, []string{"configmaps"}) || !slices.Equal(lr.Rules[2].ResourceNames, []string{"kmshealth-reconciler-record"}) ||
		!slices.Equal(lr.Rules[2].Verbs, []string{"get", "list", "watch"}) {
		t.Errorf("leader-election Role %+v", lr.Rules)
	}

	if len(o.Roles) != 2 || len(o.RoleBindings) != 2 {
		t.Fatalf("%d Roles, %d bindings; want one sources Role per namespace (apps, kube-system)", len(o.Roles), len(o.RoleBindings))
	}
	apps := roundTrip[rbacv1.Role](t, o.Roles[0])
	ks := roundTrip[rbacv1.Role](t, o.Roles[1])
	if apps.Namespace != "apps" || ks.Namespace != "kube-system" || apps.Name != "kmshealth-reconciler-kmshealth-reconciler-sources" {
		t.Errorf("source Roles %s/%s, %s/%s", apps.Namespace, apps.Name, ks.Namespace, ks.Name)
	}
	wantKS := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"kmshealth-cabundle-v1.x"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"metrics-tls"}, Verbs: []string{"get", "list", "watch"}},
	}
	if !install.SameJSON(ks.Rules, wantKS) {
		t.Errorf("kube-system Role rules %+v", ks.Rules)
	}
	rec := roundTrip[corev1.ConfigMap](t, o.Record)
	if rec.Name != "kmshealth-reconciler-record" || rec.Namespace != "kmshealth-system" ||
		rec.Data["cabundle.v2beta1.metrics.k8s.io"] != "Secret/kube-system/metrics-tls/tls.crt" || len(rec.Data) != 4 {
		t.Errorf("record %s/%s %v", rec.Namespace, rec.Name, rec.Data)
	}
	rb := roundTrip[rbacv1.RoleBinding](t, o.RoleBindings[1])
	if rb.Namespace != "kube-system" || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != ks.Name || rb.Subjects[0].Namespace != "kmshealth-system" {
		t.Errorf("source RoleBinding %+v", rb)
	}
}

func TestBuildPodDisruptionBudgetOnlyWithSeveralReplicas(t *testing.T) {
	c := testConfig()
	o, _ := Build(c)
	pdb := roundTrip[policyv1.PodDisruptionBudget](t, o.PodDisruptionBudget)
	if pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels[install.InstanceLabel] != DefaultName {
		t.Errorf("PodDisruptionBudget %+v", pdb.Spec)
	}
	c.Replicas = 1
	if o, _ := Build(c); o.PodDisruptionBudget != nil {
		t.Error("PodDisruptionBudget with one replica would block every drain")
	}
}

func TestBuildServiceAndNamespace(t *testing.T) {
	c := testConfig()
	o, _ := Build(c)
	if o.Namespace != nil {
		t.Error("Namespace built without CreateNamespace")
	}
	svc := roundTrip[corev1.Service](t, o.MetricsService)
	if svc.Name != "kmshealth-reconciler-metrics" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 ||
		svc.Spec.Ports[0].TargetPort.StrVal != "metrics" || svc.Spec.Selector[install.InstanceLabel] != DefaultName {
		t.Errorf("Service %+v", svc.Spec)
	}
	c.CreateNamespace = true
	o, _ = Build(c)
	ns := roundTrip[corev1.Namespace](t, o.Namespace)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" || ns.Labels[install.InstanceLabel] != DefaultName || ns.Labels[NamespaceLabel] != "kmshealth-system" {
		t.Errorf("Namespace labels %v", ns.Labels)
	}
}

func TestEveryObjectIsLabelled(t *testing.T) {
	c := testConfig()
	c.CreateNamespace = true
	o, _ := Build(c)
	objs := []any{o.Namespace, o.ServiceAccount, o.ClusterRole, o.ClusterRoleBinding, o.LeaderRole, o.LeaderRoleBinding,
		o.Deployment, o.PodDisruptionBudget, o.MetricsService, o.Roles[0], o.RoleBindings[0], o.Record}
	for _, ac := range objs {
		m := roundTrip[metav1.PartialObjectMetadata](t, ac)
		if !owner(c.Namespace, c.Name).Labelled(m) {
			t.Errorf("%s %s lacks the installation's labels: %v", m.Kind, m.Name, m.Labels)
		}
		if owner(c.Namespace, "other").Owns(m) || owner("other-ns", c.Name).Owns(m) {
			t.Errorf("%s %s would count as another installation's", m.Kind, m.Name)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string // substring of the error; "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"no caBundles", func(c *Config) { c.CABundles = nil }, ""},
		{"bad APIService name", func(c *Config) {
			c.CABundles["Not_A_Name"] = cabundle.Source{Kind: "Secret", Namespace: "a", Name: "b", Key: "c"}
		}, `APIService name "Not_A_Name"`},
		{"bad namespace", func(c *Config) { c.Namespace = "Kube_System" }, `namespace "Kube_System"`},
		{"name starts with digit", func(c *Config) { c.Name = "1reconciler" }, `name "1reconciler"`},
		{"name with dot", func(c *Config) { c.Name = "a.b" }, `name "a.b"`},
		{"name too long for the Service", func(c *Config) { c.Name = strings.Repeat("a", 56) }, "no more than 55 characters"},
		{"name of 55", func(c *Config) { c.Name = strings.Repeat("a", 55) }, ""},
		{"no replicas", func(c *Config) { c.Replicas = 0 }, "replicas 0: must be at least 1"},
		{"empty image", func(c *Config) { c.Image = " " }, "image: must not be empty"},
		{"image with space", func(c *Config) { c.Image = "a b" }, "contains whitespace"},
		{"bad source", func(c *Config) {
			c.CABundles["v1.x"] = cabundle.Source{Kind: "Pod", Namespace: "a", Name: "b", Key: "c"}
		}, `kind "Pod"`},
		{"bad quantity", func(c *Config) { c.CPURequest = "ten" }, `cpu_request: "ten" is not a quantity`},
		{"negative quantity", func(c *Config) { c.MemoryLimit = "-1Mi" }, "must not be negative"},
		{"request above limit", func(c *Config) { c.MemoryRequest = "1Gi" }, "memory_request 1Gi is above memory_limit " + DefaultMemoryLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			tc.modify(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestParseID checks what is the reconciler's own; install.ParseID is
// tested in its package.
func TestParseID(t *testing.T) {
	for _, tc := range []struct{ id, ns, name, err string }{
		{"kmshealth-system/kmshealth-reconciler", "kmshealth-system", "kmshealth-reconciler", ""},
		{"kmshealth-reconciler", "", "", "e.g. kmshealth-system/kmshealth-reconciler"},
		{"ns/9x", "", "", "name:"}, // a DNS-1123 label, but not DNS-1035
	} {
		ns, name, err := ParseID(tc.id)
		if tc.err == "" && (err != nil || ns != tc.ns || name != tc.name) {
			t.Errorf("ParseID(%q) = %q, %q, %v", tc.id, ns, name, err)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseID(%q) error %v, want %q", tc.id, err, tc.err)
		}
	}
}

// liveFrom builds a Live as Observe would see a fresh installation of c.
func liveFrom(t *testing.T, c Config) *Live {
	t.Helper()
	o, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	d := Declare(Config{Namespace: c.Namespace, Name: c.Name})
	return &Live{Live: install.LiveOf(d, roundTrip[unstructured.Unstructured](t, o.Record), roundTrip[unstructured.Unstructured](t, o.Deployment)),
		decl: d, namespace: c.Namespace, name: c.Name}
}

func TestLiveConfig(t *testing.T) {
	c := testConfig()
	c.MemoryLimit = "0.5Gi"
	c.KMSTarget = kmshealth.Target{Group: "operator.openshift.io", Version: "v1", Resource: "kubeapiservers", Name: "cluster"}
	c.KMSMaxStaleness = 4 * time.Minute
	got := liveFrom(t, c).Config()
	want := c
	want.MemoryLimit = "512Mi"      // canonical form
	want.FieldManager = "kmshealth" // the default, spelt out in the args
	if !install.SameJSON(got, want) {
		t.Errorf("Config() = %+v\nwant %+v", got, want)
	}
	// The defaults are spelled out in the Deployment, so they read back.
	got = liveFrom(t, testConfig()).Config()
	if got.KMSTarget != kmshealth.DefaultTarget() || got.KMSMaxStaleness != DefaultKMSMaxStaleness {
		t.Errorf("defaults read back as %s, %s", got.KMSTarget, got.KMSMaxStaleness)
	}
}

func TestClusterRoleFollowsKMSTarget(t *testing.T) {
	c := testConfig()
	c.KMSTarget = kmshealth.Target{Group: "operator.openshift.io", Version: "v1", Resource: "kubeapiservers", Name: "cluster"}
	cr := roundTrip[rbacv1.ClusterRole](t, BuildClusterRole(c))
	var status, crd bool
	for _, r := range cr.Rules {
		if slices.Contains(r.Resources, "kubeapiservers/status") && slices.Equal(r.ResourceNames, []string{"cluster"}) && slices.Equal(r.Verbs, []string{"patch"}) {
			status = true
		}
		if slices.Contains(r.Resources, "customresourcedefinitions") || slices.Contains(r.Resources, "kmshealths") {
			crd = true
		}
	}
	if !status || crd {
		t.Errorf("rules %+v: want patch on kubeapiservers/status cluster and nothing about the KMSHealth CRD", cr.Rules)
	}
}

// Two reconcilers of different names in one namespace must not share a
// leadership: each runs on its own Lease, granted only that one.
func TestLeasePerInstallation(t *testing.T) {
	a, b := testConfig(), testConfig()
	b.Name = "platform-reconciler"
	leaseOf := func(c Config) string {
		t.Helper()
		var o reconciler.Options
		if err := incluster.ParseArgs("reconcile", Args(c), &o); err != nil {
			t.Fatalf("reconcile rejects %q: %v", Args(c), err)
		}
		if granted := BuildLeaderRole(c).Rules[1].ResourceNames; !slices.Equal(granted, []string{o.LeaseName}) {
			t.Errorf("%s runs on Lease %q, its Role grants %q", c.Name, o.LeaseName, granted)
		}
		return o.LeaseName
	}
	if la, lb := leaseOf(a), leaseOf(b); la == lb {
		t.Errorf("reconcilers %q and %q in namespace %s share the Lease %q", a.Name, b.Name, a.Namespace, la)
	}
	if la := leaseOf(a); la != LeaseName {
		t.Errorf("the default installation moved from Lease %q to %q: an upgrade would elect a second leader", LeaseName, la)
	}
}
