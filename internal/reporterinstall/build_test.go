package reporterinstall

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/image"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

func testConfig() Config { return DefaultConfig("kube-system", "v1.2.3") }

// socketsConfig reports to another object, with fixed sockets, as a
// non-root user, without the CRD.
func socketsConfig() Config {
	c := testConfig()
	c.Name = "kms"
	c.SocketDir = ""
	c.Sockets = []string{"unix:///var/run/kmsplugin/kms-10.sock", "unix:///var/run/kmsplugin/kms-2.sock"}
	c.Interval, c.ReadTimeout, c.WriteTimeout = time.Minute, 2*time.Second, 20*time.Second
	c.Target = kmshealth.Target{Group: "operator.openshift.io", Version: "v1", Resource: "kubeapiservers", Name: "cluster"}
	c.InstallCRD = false
	c.RunAsUser, c.RunAsGroup = 65532, 1001
	c.NodeSelector = map[string]string{"node-role.kubernetes.io/master": "", "kms": "yes"}
	seconds := int64(30)
	c.Tolerations = []corev1.Toleration{
		{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "kms", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds},
	}
	c.PriorityClassName = ""
	c.CPURequest, c.MemoryRequest, c.MemoryLimit = "", "", ""
	return c
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

// TestArgsParseWithTheReportersOwnFlags runs the DaemonSet's arguments
// through the report mode's flag set and Validate, so the two cannot drift
// apart.
func TestArgsParseWithTheReportersOwnFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "cp-1") // as the downward API sets it
	typed := socketsConfig()
	typed.ReportFormat = kmshealth.FormatOpenShiftTyped
	for name, c := range map[string]Config{"defaults": testConfig(), "sockets": socketsConfig(), "typed": typed} {
		t.Run(name, func(t *testing.T) {
			o, err := ParseArgs(c.Args())
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(); err != nil {
				t.Fatalf("report's Validate rejects %q: %v", c.Args(), err)
			}
			if o.NodeName != "cp-1" || o.Kubeconfig != "" || o.HealthProbeBindAddress != ":8082" {
				t.Errorf("node %q kubeconfig %q health %q", o.NodeName, o.Kubeconfig, o.HealthProbeBindAddress)
			}
			if o.Interval != c.Interval || o.ReadTimeout != c.ReadTimeout || o.WriteTimeout != c.WriteTimeout || o.Target != c.Target.String() {
				t.Errorf("parsed %+v from %q", o, c.Args())
			}
			if o.SocketDir != c.SocketDir {
				t.Errorf("socket dir %q, want %q", o.SocketDir, c.SocketDir)
			}
			if want := cmp.Or(c.ReportFormat, kmshealth.FormatConditions); o.ReportFormat != string(want) {
				t.Errorf("report format %q, want %q", o.ReportFormat, want)
			}
		})
	}
	// Sockets are passed in keyID order, whatever the order given.
	args := socketsConfig().Args()
	want := []string{"--kms-socket=unix:///var/run/kmsplugin/kms-2.sock", "--kms-socket=unix:///var/run/kmsplugin/kms-10.sock"}
	if !slices.Equal(args[len(args)-2:], want) {
		t.Errorf("args %q, want them to end with %q", args, want)
	}
	if got := testConfig().Args(); !slices.Equal(got, []string{"report", "--interval=30s", "--read-timeout=5s", "--write-timeout=10s",
		"--target=kmshealth.io/v1alpha1/kmshealths/cluster", "--health-probe-bind-address=:8082", "--metrics-bind-address=:8444", "--socket-dir=/var/run/kmsplugin"}) {
		t.Errorf("default args %q", got)
	}
}

// TestCheckReportFormat: the typed format needs a target whose schema has
// status.encryptionStatus; the KMSHealth CRD's has not.
func TestCheckReportFormat(t *testing.T) {
	openshift := socketsConfig().Target
	for _, tc := range []struct {
		format kmshealth.ReportFormat
		target kmshealth.Target
		want   string // part of the error; "" for none
	}{
		{"", kmshealth.DefaultTarget(), ""},
		{kmshealth.FormatConditions, kmshealth.DefaultTarget(), ""},
		{kmshealth.FormatConditions, openshift, ""},
		{kmshealth.FormatOpenShiftTyped, openshift, ""},
		{kmshealth.FormatOpenShiftTyped, kmshealth.Target{Group: kmshealth.Group, Version: kmshealth.Version, Resource: kmshealth.Resource, Name: "other"}, "set target to the OpenShift operator object"},
		{"typed", openshift, `"typed"`},
	} {
		err := CheckReportFormat(tc.format, tc.target)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s on %s: %v", tc.format, tc.target, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s on %s: error %v, want one containing %q", tc.format, tc.target, err, tc.want)
		}
	}
}

func TestBuildDaemonSet(t *testing.T) {
	d := roundTrip[appsv1.DaemonSet](t, BuildDaemonSet(testConfig()))
	if d.Name != DefaultName || d.Namespace != "kube-system" {
		t.Errorf("name %s/%s", d.Namespace, d.Name)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not select the pod template (labels %v)", k, v, d.Spec.Template.Labels)
		}
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != DefaultName || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("serviceAccountName %q automount %v: want the token mounted only by the projected volume", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if !reflect.DeepEqual(pod.NodeSelector, map[string]string{"node-role.kubernetes.io/control-plane": ""}) {
		t.Errorf("nodeSelector %v", pod.NodeSelector)
	}
	if !reflect.DeepEqual(pod.Tolerations, []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: "Exists", Effect: "NoSchedule"}}) {
		t.Errorf("tolerations %+v", pod.Tolerations)
	}
	if pod.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot != nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want RuntimeDefault seccomp and no runAsNonRoot for uid 0", psc)
	}
	vols := map[string]corev1.VolumeSource{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v.VolumeSource
	}
	if hp := vols["kms-sockets"].HostPath; hp == nil || hp.Path != "/var/run/kmsplugin" || hp.Type == nil || *hp.Type != corev1.HostPathDirectory {
		t.Errorf("hostPath volume %+v", hp)
	}
	proj := vols["kube-api-access"].Projected
	if proj == nil || len(proj.Sources) != 3 {
		t.Fatalf("projected volume %+v", proj)
	}
	if tok := proj.Sources[0].ServiceAccountToken; tok == nil || tok.Path != "token" || tok.ExpirationSeconds == nil || *tok.ExpirationSeconds != 3600 || tok.Audience != "" {
		t.Errorf("token projection %+v", tok)
	}
	if cm := proj.Sources[1].ConfigMap; cm == nil || cm.Name != "kube-root-ca.crt" || len(cm.Items) != 1 || cm.Items[0].Key != "ca.crt" || cm.Items[0].Path != "ca.crt" {
		t.Errorf("CA projection %+v", cm)
	}
	if da := proj.Sources[2].DownwardAPI; da == nil || len(da.Items) != 1 || da.Items[0].Path != "namespace" || da.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("namespace projection %+v", da)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers %+v", pod.Containers)
	}
	ct := pod.Containers[0]
	if ct.Name != "reporter" || ct.Image != "ghcr.io/kmshealth/terraform-provider-kmshealth:v1.2.3" || ct.Args[0] != "report" {
		t.Errorf("container %s image %s args %q", ct.Name, ct.Image, ct.Args)
	}
	if len(ct.Env) != 1 || ct.Env[0].Name != "NODE_NAME" || ct.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("env %+v", ct.Env)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range ct.VolumeMounts {
		mounts[m.Name] = m
	}
	if m := mounts["kms-sockets"]; m.MountPath != "/var/run/kmsplugin" || !m.ReadOnly {
		t.Errorf("socket mount %+v: want read-only at the node's path", m)
	}
	if m := mounts["kube-api-access"]; m.MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m.ReadOnly {
		t.Errorf("token mount %+v", m)
	}
	if p := ct.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "health" {
		t.Errorf("liveness probe %+v", p)
	}
	if len(ct.Ports) != 2 || ct.Ports[0].ContainerPort != 8082 || ct.Ports[0].Name != "health" ||
		ct.Ports[1].ContainerPort != MetricsPort || ct.Ports[1].Name != "metrics" || !slices.Contains(ct.Args, "--metrics-bind-address=:8444") {
		t.Errorf("ports %+v", ct.Ports)
	}
	sc := ct.SecurityContext
	if sc == nil || *sc.RunAsUser != 0 || *sc.RunAsGroup != 0 || sc.RunAsNonRoot != nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 || sc.Privileged != nil ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container securityContext %+v", sc)
	}
	if r := ct.Resources; r.Requests.Cpu().String() != "10m" || r.Requests.Memory().String() != "32Mi" || r.Limits.Memory().String() != "128Mi" || !r.Limits.Cpu().IsZero() {
		t.Errorf("resources %+v", r)
	}

	// Non-root, fixed sockets, no node selector or priority class.
	c := socketsConfig()
	c.NodeSelector = nil
	d = roundTrip[appsv1.DaemonSet](t, BuildDaemonSet(c))
	pod = d.Spec.Template.Spec
	ct = pod.Containers[0]
	if sc := ct.SecurityContext; *sc.RunAsUser != 65532 || *sc.RunAsGroup != 1001 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("non-root securityContext %+v", sc)
	}
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("non-root pod securityContext %+v", pod.SecurityContext)
	}
	if pod.NodeSelector != nil || pod.PriorityClassName != "" || ct.Resources.Requests != nil || ct.Resources.Limits != nil {
		t.Errorf("nodeSelector %v priorityClassName %q resources %+v: want none", pod.NodeSelector, pod.PriorityClassName, ct.Resources)
	}
	if len(pod.Tolerations) != 2 || pod.Tolerations[1].Operator != "" || *pod.Tolerations[1].TolerationSeconds != 30 {
		t.Errorf("tolerations %+v", pod.Tolerations)
	}
	if hp := pod.Volumes[0].HostPath; hp.Path != "/var/run/kmsplugin" {
		t.Errorf("kms_sockets mount %s, want the directory of the socket pattern", hp.Path)
	}

	// socket_dir is mounted at its own path.
	c = testConfig()
	c.SocketDir = "/run/kms"
	d = roundTrip[appsv1.DaemonSet](t, BuildDaemonSet(c))
	ct = d.Spec.Template.Spec.Containers[0]
	if d.Spec.Template.Spec.Volumes[0].HostPath.Path != "/run/kms" || ct.VolumeMounts[0].MountPath != "/run/kms" || !slices.Contains(ct.Args, "--socket-dir=/run/kms") {
		t.Errorf("socket_dir /run/kms: volume %+v mounts %+v args %q", d.Spec.Template.Spec.Volumes[0], ct.VolumeMounts, ct.Args)
	}
}

// TestBuildClusterRoleHasOneRule: patch of the target's status, by name,
// and nothing else of the cluster's state; beside it only the reviews
// that authenticate and authorize /metrics callers.
func TestBuildClusterRoleHasOneRule(t *testing.T) {
	for _, c := range []Config{testConfig(), socketsConfig()} {
		cr := roundTrip[rbacv1.ClusterRole](t, BuildClusterRole(c))
		want := []rbacv1.PolicyRule{{
			APIGroups: []string{c.Target.Group}, Resources: []string{c.Target.Resource + "/status"},
			ResourceNames: []string{c.Target.Name}, Verbs: []string{"patch"},
		}, {
			APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"},
		}, {
			APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"},
		}}
		if !reflect.DeepEqual(cr.Rules, want) || cr.AggregationRule != nil {
			t.Errorf("ClusterRole %s rules %+v, want %+v", cr.Name, cr.Rules, want)
		}
		if cr.Name != "kmshealth-reporter:"+c.Namespace+":"+c.Name {
			t.Errorf("ClusterRole name %q", cr.Name)
		}
		b := roundTrip[rbacv1.ClusterRoleBinding](t, BuildClusterRoleBinding(c))
		if b.RoleRef.Name != cr.Name || len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != c.Name || b.Subjects[0].Namespace != c.Namespace {
			t.Errorf("ClusterRoleBinding %+v", b)
		}
	}
	sa := roundTrip[corev1.ServiceAccount](t, BuildServiceAccount(testConfig()))
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount automountServiceAccountToken %v, want false", sa.AutomountServiceAccountToken)
	}
}

func TestBuildCRDAndObject(t *testing.T) {
	o, err := Build(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if o.CRD == nil || o.CRD.GetName() != kmshealth.CRDName || o.CRD.GetLabels()[install.InstanceLabel] != DefaultName || o.CRD.GetLabels()[NamespaceLabel] != "kube-system" {
		t.Fatalf("CRD %v", o.CRD)
	}
	if o.Object == nil || o.Object.GetName() != "cluster" || o.Object.GetKind() != "KMSHealth" || o.Object.GetAPIVersion() != "kmshealth.io/v1alpha1" {
		t.Fatalf("object %v", o.Object)
	}
	if kmshealth.CRD().GetLabels()[install.InstanceLabel] != "" {
		t.Error("BuildCRD changed the embedded CRD")
	}
	c := testConfig()
	c.Target.Name = "staging"
	if o, _ := Build(c); o.Object == nil || o.Object.GetName() != "staging" {
		t.Errorf("object for target %s: %v", c.Target, o.Object)
	}
	if o, err := Build(socketsConfig()); err != nil || o.CRD != nil || o.Object != nil {
		t.Errorf("install_crd = false: CRD %v object %v (err %v)", o.CRD, o.Object, err)
	}
}

// TestLiveConfigRoundTrip: what Build writes, Config reads back.
func TestLiveConfigRoundTrip(t *testing.T) {
	liveOf := func(c Config, ds *unstructured.Unstructured) *Live {
		d := Declare(Config{Namespace: c.Namespace, Name: c.Name, Target: c.Target})
		return &Live{Live: install.LiveOf(d, ds), decl: d, namespace: c.Namespace, name: c.Name, Target: c.Target}
	}
	for _, c := range []Config{testConfig(), socketsConfig()} {
		l := liveOf(c, roundTrip[unstructured.Unstructured](t, BuildDaemonSet(c)))
		got, ok := l.Config()
		if !ok {
			t.Fatalf("Config of %s not ok", c.Name)
		}
		want := c
		want.InstallCRD = false // read from the CRD, absent here
		want.Sockets = sortedSockets(c.Sockets)
		if len(want.Sockets) == 0 {
			want.Sockets = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, want)
		}
	}
	ds := roundTrip[appsv1.DaemonSet](t, BuildDaemonSet(testConfig()))
	ds.Spec.Template.Spec.Containers[0].Args = []string{"report", "--no-such-flag"}
	ds.APIVersion, ds.Kind = "apps/v1", "DaemonSet"
	if _, ok := liveOf(testConfig(), roundTrip[unstructured.Unstructured](t, ds)).Config(); ok {
		t.Error("Config ok for arguments that do not parse")
	}
}

func TestValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := socketsConfig().Validate(); err != nil {
		t.Fatalf("sockets: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"bad socket", func(c *Config) { c.SocketDir, c.Sockets = "", []string{"unix:///tmp/kms.sock"} }, `kms_sockets: KMS socket "unix:///tmp/kms.sock": must match ^unix:///var/run/kmsplugin/kms-(\d+)\.sock$`},
		{"same key twice", func(c *Config) {
			c.SocketDir, c.Sockets = "", []string{"unix:///var/run/kmsplugin/kms-1.sock", "unix:///var/run/kmsplugin/kms-01.sock"}
		}, "keyID 1 is already given"},
		{"both", func(c *Config) { c.Sockets = []string{"unix:///var/run/kmsplugin/kms-1.sock"} }, "kms_sockets and socket_dir: set one, not both"},
		{"neither", func(c *Config) { c.SocketDir = "" }, "kms_sockets or socket_dir: one is required"},
		{"relative dir", func(c *Config) { c.SocketDir = "run/kms" }, "not an absolute path"},
		{"root dir", func(c *Config) { c.SocketDir = "/" }, "whole file system"},
		{"unclean dir", func(c *Config) { c.SocketDir = "/run/kms/" }, "write /run/kms"},
		{"short interval", func(c *Config) { c.Interval = time.Second }, "probe_interval 1s: must be at least 5s"},
		{"slow read", func(c *Config) { c.ReadTimeout = c.Interval }, "read_timeout 30s: must be positive and shorter than the interval (30s)"},
		{"no write timeout", func(c *Config) { c.WriteTimeout = 0 }, "write_timeout 0s: must be positive"},
		{"bad selector key", func(c *Config) { c.NodeSelector = map[string]string{"bad key": ""} }, `node_selector: key "bad key" is not a label key`},
		{"bad selector value", func(c *Config) { c.NodeSelector = map[string]string{"a": "b c"} }, `value "b c" of key "a" is not a label value`},
		{"bad operator", func(c *Config) { c.Tolerations = []corev1.Toleration{{Key: "a", Operator: "In"}} }, `tolerations[0]: operator "In": must be Exists or Equal`},
		{"value with Exists", func(c *Config) { c.Tolerations = []corev1.Toleration{{Key: "a", Operator: "Exists", Value: "x"}} }, "must be empty with operator Exists"},
		{"bad effect", func(c *Config) { c.Tolerations = []corev1.Toleration{{Key: "a", Effect: "NoRun"}} }, `effect "NoRun"`},
		{"seconds without NoExecute", func(c *Config) {
			s := int64(1)
			c.Tolerations = []corev1.Toleration{{Key: "a", Effect: "NoSchedule", TolerationSeconds: &s}}
		}, "only valid with effect NoExecute"},
		{"bad target", func(c *Config) { c.Target.Resource = "KMSHealth" }, `resource "KMSHealth" (plural, lower case)`},
		{"CRD for another kind", func(c *Config) { c.Target.Group = "operator.openshift.io" }, "install_crd = true installs the kmshealths.kmshealth.io CRD, but target operator.openshift.io/v1alpha1/kmshealths/cluster is not a KMSHealth object"},
		{"negative user", func(c *Config) { c.RunAsUser = -1 }, "must not be negative"},
		{"bad priority class", func(c *Config) { c.PriorityClassName = "Node Critical" }, `priority_class_name "Node Critical"`},
		{"memory", func(c *Config) { c.MemoryRequest = "1Gi" }, "memory_request 1Gi is above memory_limit 128Mi"},
		{"image", func(c *Config) { c.Image = "" }, "image: must not be empty"},
		{"name", func(c *Config) { c.Name = "Reporter" }, `name "Reporter"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate: %v, want %q", err, tt.want)
			}
			if _, berr := Build(c); berr == nil {
				t.Error("Build accepted an invalid config")
			}
		})
	}
}

// TestParseID checks what is the reporter's own; install.ParseID is
// tested in its package.
func TestParseID(t *testing.T) {
	ns, name, err := ParseID("kube-system/kmshealth-reporter")
	if err != nil || ns != "kube-system" || name != "kmshealth-reporter" {
		t.Errorf("ParseID: %q %q %v", ns, name, err)
	}
	for id, want := range map[string]string{
		"kmshealth-reporter":   "e.g. kube-system/kmshealth-reporter",
		"kube-system/Reporter": "name: ",
	} {
		if _, _, err := ParseID(id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseID(%q): %v, want %q", id, err, want)
		}
	}
}

// TestCommandIsTheImagesReporterBuild: the DaemonSet runs the reporter's
// own build, which the image carries beside the in-cluster binary.
func TestCommandIsTheImagesReporterBuild(t *testing.T) {
	if want := "/" + image.ReporterBinaryName; Command != want {
		t.Errorf("Command = %q, want the image's reporter build %q", Command, want)
	}
	ds := BuildDaemonSet(DefaultConfig("kube-system", "cmd"))
	if got := ds.Spec.Template.Spec.Containers[0].Command; len(got) != 1 || got[0] != Command {
		t.Errorf("container command %q, want [%s]", got, Command)
	}
}
