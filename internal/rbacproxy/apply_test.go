package rbacproxy

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// roundTrip marshals an apply configuration and decodes it both as the
// typed object T and as a tree, the latter to check that it holds only
// our fields.
func roundTrip[T any](t *testing.T, ac any) (T, map[string]any) {
	t.Helper()
	var typed T
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&typed); err != nil {
		t.Fatalf("apply configuration does not decode as %T: %v\n%s", typed, err, data)
	}
	var tree map[string]any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	return typed, tree
}

// keysOf is the sorted keys of the map at path in tree.
func keysOf(t *testing.T, tree map[string]any, path ...string) []string {
	t.Helper()
	m := tree
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("no object at %q of %v", strings.Join(path, "."), tree)
		}
		m = next
	}
	return sortedKeys(m)
}

func full() Config {
	c := valid()
	c.ServiceName = "web"
	c.Authorization.ResourceAttributes = &ResourceAttributes{Namespace: "apps", Resource: "services", Subresource: "proxy", Name: "web"}
	c.Resources = Resources{Requests: map[string]string{"cpu": "5m", "memory": "32Mi"}, Limits: map[string]string{"memory": "64Mi"}}
	c.NetworkPolicy = NetworkPolicy{Enabled: true}
	return c
}

func TestConfigMapApply(t *testing.T) {
	c := full()
	ac, err := c.ConfigMapApply()
	if err != nil {
		t.Fatal(err)
	}
	cm, tree := roundTrip[corev1.ConfigMap](t, ac)
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Namespace != "apps" || cm.Name != "kmshealth-rbac-proxy-deployment-web" {
		t.Errorf("ConfigMap is %s %s %s/%s", cm.APIVersion, cm.Kind, cm.Namespace, cm.Name)
	}
	wantLabels := map[string]string{ManagedByLabel: "kmshealth", ForLabel: "deployment.web"}
	if !reflect.DeepEqual(cm.Labels, wantLabels) || cm.Annotations[TargetAnnotation] != "Deployment/apps/web" {
		t.Errorf("labels %v, annotations %v", cm.Labels, cm.Annotations)
	}
	if got := keysOf(t, tree); !slices.Equal(got, []string{"apiVersion", "data", "kind", "metadata"}) {
		t.Errorf("top-level keys %v", got)
	}
	if got := sortedKeys(cm.Data); !slices.Equal(got, []string{ConfigFileKey, RecordKey}) {
		t.Errorf("data keys %v", got)
	}
	file, _ := c.ConfigFile()
	if cm.Data[ConfigFileKey] != string(file) {
		t.Errorf("config.yaml is not ConfigFile")
	}
	back, err := DecodeRecord(&cm)
	if err != nil {
		t.Fatalf("DecodeRecord of our own ConfigMap: %v", err)
	}
	if !reflect.DeepEqual(back, c.Defaulted()) {
		t.Errorf("record round trip:\n got %+v\nwant %+v", back, c.Defaulted())
	}
}

func TestClusterRoleBindingApply(t *testing.T) {
	ac, err := full().ClusterRoleBindingApply()
	if err != nil {
		t.Fatal(err)
	}
	crb, _ := roundTrip[rbacv1.ClusterRoleBinding](t, ac)
	if crb.APIVersion != "rbac.authorization.k8s.io/v1" || crb.Kind != "ClusterRoleBinding" || crb.Name != "kmshealth-rbac-proxy:apps:deployment:web" || crb.Namespace != "" {
		t.Errorf("binding is %s %s %q/%q", crb.APIVersion, crb.Kind, crb.Namespace, crb.Name)
	}
	if want := (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"}); crb.RoleRef != want {
		t.Errorf("roleRef %+v, want %+v", crb.RoleRef, want)
	}
	if want := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "apps", Name: "web"}}; !reflect.DeepEqual(crb.Subjects, want) {
		t.Errorf("subjects %+v, want %+v", crb.Subjects, want)
	}
	if crb.Labels[ManagedByLabel] != ManagedByValue || crb.Annotations[TargetAnnotation] != "Deployment/apps/web" {
		t.Errorf("labels %v, annotations %v", crb.Labels, crb.Annotations)
	}
}

// workloadTemplate returns the metadata, pod template and tree of the
// workload apply configuration, whatever its kind.
func workloadTemplate(t *testing.T, w Workload) (metav1.ObjectMeta, corev1.PodTemplateSpec, map[string]any) {
	t.Helper()
	switch {
	case w.Deployment != nil:
		d, tree := roundTrip[appsv1.Deployment](t, w.Object())
		return d.ObjectMeta, d.Spec.Template, tree
	case w.StatefulSet != nil:
		s, tree := roundTrip[appsv1.StatefulSet](t, w.Object())
		return s.ObjectMeta, s.Spec.Template, tree
	case w.DaemonSet != nil:
		d, tree := roundTrip[appsv1.DaemonSet](t, w.Object())
		return d.ObjectMeta, d.Spec.Template, tree
	}
	t.Fatal("Workload holds nothing")
	return metav1.ObjectMeta{}, corev1.PodTemplateSpec{}, nil
}

func TestWorkloadApplyHoldsOnlyOurFields(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			c := full()
			c.Target.Kind = kind
			w, err := c.WorkloadApply("uid-1")
			if err != nil {
				t.Fatal(err)
			}
			set := 0
			for _, p := range []bool{w.Deployment != nil, w.StatefulSet != nil, w.DaemonSet != nil} {
				if p {
					set++
				}
			}
			if set != 1 {
				t.Fatalf("%d apply configurations set, want 1", set)
			}
			meta, tmpl, tree := workloadTemplate(t, w)
			if tree["kind"] != string(kind) || tree["apiVersion"] != "apps/v1" || meta.Name != "web" || meta.Namespace != "apps" || meta.UID != "uid-1" {
				t.Errorf("names %v %v %s/%s uid %q", tree["apiVersion"], tree["kind"], meta.Namespace, meta.Name, meta.UID)
			}
			for _, tc := range []struct {
				path []string
				want []string
			}{
				{nil, []string{"apiVersion", "kind", "metadata", "spec"}},
				{[]string{"metadata"}, []string{"name", "namespace", "uid"}},
				{[]string{"spec"}, []string{"template"}},
				{[]string{"spec", "template"}, []string{"metadata", "spec"}},
				{[]string{"spec", "template", "metadata"}, []string{"annotations"}},
				{[]string{"spec", "template", "metadata", "annotations"}, []string{ConfigHashAnnotation}},
				{[]string{"spec", "template", "spec"}, []string{"initContainers", "volumes"}},
			} {
				if got := keysOf(t, tree, tc.path...); !slices.Equal(got, tc.want) {
					t.Errorf("keys at %v = %v, want exactly %v", tc.path, got, tc.want)
				}
			}
			hash, _ := c.ConfigHash()
			if tmpl.Annotations[ConfigHashAnnotation] != hash {
				t.Errorf("hash annotation %q, want %q", tmpl.Annotations[ConfigHashAnnotation], hash)
			}
			if len(tmpl.Spec.InitContainers) != 1 || len(tmpl.Spec.Containers) != 0 {
				t.Fatalf("initContainers %d, containers %d", len(tmpl.Spec.InitContainers), len(tmpl.Spec.Containers))
			}
		})
	}
}

func TestSidecar(t *testing.T) {
	c := full()
	w, err := c.WorkloadApply("")
	if err != nil {
		t.Fatal(err)
	}
	meta, tmpl, _ := workloadTemplate(t, w)
	if meta.UID != "" {
		t.Errorf("uid %q without a precondition", meta.UID)
	}
	ctr := tmpl.Spec.InitContainers[0]
	if ctr.Name != ContainerName || ctr.Image != DefaultImage || !slices.Equal(ctr.Args, c.Args()) {
		t.Errorf("container %s image %s args %q", ctr.Name, ctr.Image, ctr.Args)
	}
	if ctr.RestartPolicy == nil || *ctr.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("restartPolicy %v, want Always (a native sidecar)", ctr.RestartPolicy)
	}
	wantPorts := []corev1.ContainerPort{
		{Name: "krp-https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
		{Name: "krp-health", ContainerPort: 8643, Protocol: corev1.ProtocolTCP},
	}
	if !reflect.DeepEqual(ctr.Ports, wantPorts) {
		t.Errorf("ports %+v, want %+v", ctr.Ports, wantPorts)
	}
	wantProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8643), Scheme: corev1.URISchemeHTTPS}}}
	if !reflect.DeepEqual(ctr.LivenessProbe, wantProbe) || !reflect.DeepEqual(ctr.ReadinessProbe, wantProbe) {
		t.Errorf("probes %+v / %+v, want %+v", ctr.LivenessProbe, ctr.ReadinessProbe, wantProbe)
	}
	f, tr := false, true
	wantSC := &corev1.SecurityContext{
		RunAsNonRoot: &tr, ReadOnlyRootFilesystem: &tr, AllowPrivilegeEscalation: &f,
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if !reflect.DeepEqual(ctr.SecurityContext, wantSC) {
		t.Errorf("securityContext %+v, want %+v", ctr.SecurityContext, wantSC)
	}
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("5m"), "memory": resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{"memory": resource.MustParse("64Mi")},
	}
	for name, q := range wantRes.Requests {
		if got := ctr.Resources.Requests[name]; got.Cmp(q) != 0 {
			t.Errorf("requests[%s] = %s, want %s", name, got.String(), q.String())
		}
	}
	if got := ctr.Resources.Limits["memory"]; got.Cmp(wantRes.Limits["memory"]) != 0 || len(ctr.Resources.Limits) != 1 {
		t.Errorf("limits %v", ctr.Resources.Limits)
	}
	if want := []corev1.VolumeMount{{Name: ConfigVolumeName, MountPath: ConfigDir, ReadOnly: true}}; !reflect.DeepEqual(ctr.VolumeMounts, want) {
		t.Errorf("mounts %+v, want %+v", ctr.VolumeMounts, want)
	}
	wantVolumes := []corev1.Volume{{Name: ConfigVolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "kmshealth-rbac-proxy-deployment-web"},
		Items:                []corev1.KeyToPath{{Key: "config.yaml", Path: "config.yaml"}},
	}}}}
	if !reflect.DeepEqual(tmpl.Spec.Volumes, wantVolumes) {
		t.Errorf("volumes %+v, want %+v", tmpl.Spec.Volumes, wantVolumes)
	}
	// The config file the proxy is told to read is the one the volume
	// holds.
	if !slices.Contains(ctr.Args, "--config-file="+ctr.VolumeMounts[0].MountPath+"/"+wantVolumes[0].ConfigMap.Items[0].Path) {
		t.Errorf("--config-file does not point into the config volume: %q", ctr.Args)
	}
}

func TestSidecarWithTLSSecret(t *testing.T) {
	c := full()
	c.TLS.SecretName = "web-tls"
	w, err := c.WorkloadApply("")
	if err != nil {
		t.Fatal(err)
	}
	_, tmpl, _ := workloadTemplate(t, w)
	ctr := tmpl.Spec.InitContainers[0]
	if want := (corev1.VolumeMount{Name: TLSVolumeName, MountPath: TLSDir, ReadOnly: true}); !slices.Contains(ctr.VolumeMounts, want) {
		t.Errorf("mounts %+v lack %+v", ctr.VolumeMounts, want)
	}
	i := slices.IndexFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == TLSVolumeName })
	if i < 0 || tmpl.Spec.Volumes[i].Secret == nil || tmpl.Spec.Volumes[i].Secret.SecretName != "web-tls" {
		t.Fatalf("volumes %+v lack the TLS secret", tmpl.Spec.Volumes)
	}
	if want := []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}; !reflect.DeepEqual(tmpl.Spec.Volumes[i].Secret.Items, want) {
		t.Errorf("secret items %+v", tmpl.Spec.Volumes[i].Secret.Items)
	}
	for _, arg := range []string{"--tls-cert-file=" + TLSDir + "/tls.crt", "--tls-private-key-file=" + TLSDir + "/tls.key"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("args %q lack %s", ctr.Args, arg)
		}
	}
}

func TestSidecarInsecure(t *testing.T) {
	c := valid()
	c.InsecureListen = true
	w, err := c.WorkloadApply("")
	if err != nil {
		t.Fatal(err)
	}
	_, tmpl, _ := workloadTemplate(t, w)
	ctr := tmpl.Spec.InitContainers[0]
	if want := []corev1.ContainerPort{{Name: InsecurePortName, ContainerPort: 8443, Protocol: corev1.ProtocolTCP}}; !reflect.DeepEqual(ctr.Ports, want) {
		t.Errorf("ports %+v, want %+v", ctr.Ports, want)
	}
	want := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8443)}}}
	if !reflect.DeepEqual(ctr.LivenessProbe, want) || !reflect.DeepEqual(ctr.ReadinessProbe, want) {
		t.Errorf("probes %+v / %+v, want a TCP check on the listen port", ctr.LivenessProbe, ctr.ReadinessProbe)
	}
}

func TestReleaseWorkload(t *testing.T) {
	for _, kind := range Kinds() {
		w, err := ReleaseWorkload(Target{Kind: kind, Namespace: "apps", Name: "web"}, "uid-1")
		if err != nil {
			t.Fatal(err)
		}
		meta, _, tree := workloadTemplate(t, w)
		if got := keysOf(t, tree); !slices.Equal(got, []string{"apiVersion", "kind", "metadata"}) {
			t.Errorf("%s: keys %v, want no spec", kind, got)
		}
		if meta.UID != "uid-1" || meta.Name != "web" {
			t.Errorf("%s: metadata %+v", kind, meta)
		}
	}
	if _, err := ReleaseWorkload(Target{Kind: "Pod", Namespace: "apps", Name: "web"}, ""); err == nil || !strings.Contains(err.Error(), "target.kind") {
		t.Errorf("ReleaseWorkload of a Pod: %v", err)
	}
}

func TestServiceApply(t *testing.T) {
	ac, err := full().ServiceApply("uid-9")
	if err != nil {
		t.Fatal(err)
	}
	svc, tree := roundTrip[corev1.Service](t, ac)
	if svc.Name != "web" || svc.Namespace != "apps" || svc.UID != "uid-9" {
		t.Errorf("service %s/%s uid %q", svc.Namespace, svc.Name, svc.UID)
	}
	if got := keysOf(t, tree, "spec"); !slices.Equal(got, []string{"ports"}) {
		t.Errorf("spec keys %v, want only ports", got)
	}
	want := []corev1.ServicePort{{Name: ServicePortName, Protocol: corev1.ProtocolTCP, Port: 8443, TargetPort: intstr.FromInt32(8443)}}
	if !reflect.DeepEqual(svc.Spec.Ports, want) {
		t.Errorf("ports %+v, want %+v", svc.Spec.Ports, want)
	}

	noService := valid()
	if _, err := noService.ServiceApply(""); err == nil || !strings.Contains(err.Error(), "serviceName") {
		t.Errorf("ServiceApply without serviceName: %v", err)
	}
	_, tree = roundTrip[corev1.Service](t, ReleaseService("apps", "web", ""))
	if got := keysOf(t, tree); !slices.Equal(got, []string{"apiVersion", "kind", "metadata"}) {
		t.Errorf("ReleaseService keys %v", got)
	}
}

func TestNetworkPolicyApply(t *testing.T) {
	pods := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	monitoring := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}
	prometheus := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"prometheus"}}}}
	for _, tc := range []struct {
		name     string
		ns, pod  *metav1.LabelSelector
		wantFrom []networkingv1.NetworkPolicyPeer
	}{
		{"from anywhere, proxy port only", nil, nil, nil},
		{"from namespaces", monitoring, nil, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: monitoring}}},
		{"from pods of the namespace", nil, prometheus, []networkingv1.NetworkPolicyPeer{{PodSelector: prometheus}}},
		{"from pods of namespaces: one peer, both selectors", monitoring, prometheus, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: monitoring, PodSelector: prometheus}}},
		{"from every namespace", &metav1.LabelSelector{}, nil, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := full()
			c.NetworkPolicy = NetworkPolicy{Enabled: true, FromNamespaceSelector: tc.ns, FromPodSelector: tc.pod}
			ac, err := c.NetworkPolicyApply(pods)
			if err != nil {
				t.Fatal(err)
			}
			np, _ := roundTrip[networkingv1.NetworkPolicy](t, ac)
			if np.Name != "kmshealth-rbac-proxy-deployment-web" || np.Namespace != "apps" || np.Labels[ForLabel] != "deployment.web" {
				t.Errorf("policy %s/%s labels %v", np.Namespace, np.Name, np.Labels)
			}
			tcp := corev1.ProtocolTCP
			port := intstr.FromInt32(8443)
			want := networkingv1.NetworkPolicySpec{
				PodSelector: *pods,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}, From: tc.wantFrom}},
			}
			if !reflect.DeepEqual(np.Spec, want) {
				t.Errorf("spec\n %+v\nwant\n %+v", np.Spec, want)
			}
		})
	}
	c := full()
	for name, sel := range map[string]*metav1.LabelSelector{"nil": nil, "empty": {}} {
		if _, err := c.NetworkPolicyApply(sel); err == nil || !strings.Contains(err.Error(), "spec.selector") {
			t.Errorf("%s pod selector: %v", name, err)
		}
	}
	c.NetworkPolicy.Enabled = false
	if _, err := c.NetworkPolicyApply(pods); err == nil || !strings.Contains(err.Error(), "networkPolicy.enabled") {
		t.Errorf("disabled: %v", err)
	}
}

func TestBuildersRefuseInvalidConfigs(t *testing.T) {
	c := full()
	c.UpstreamPort = 0
	for name, build := range map[string]func() error{
		"ConfigMapApply":          func() error { _, err := c.ConfigMapApply(); return err },
		"ClusterRoleBindingApply": func() error { _, err := c.ClusterRoleBindingApply(); return err },
		"PodTemplateApply":        func() error { _, err := c.PodTemplateApply(); return err },
		"WorkloadApply":           func() error { _, err := c.WorkloadApply(""); return err },
		"ServiceApply":            func() error { _, err := c.ServiceApply(""); return err },
		"NetworkPolicyApply": func() error {
			_, err := c.NetworkPolicyApply(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
			return err
		},
		"Diff": func() error { _, err := c.Diff(&corev1.PodTemplateSpec{}); return err },
	} {
		if err := build(); err == nil || !strings.Contains(err.Error(), "upstreamPort") {
			t.Errorf("%s of an invalid config: %v, want an error naming upstreamPort", name, err)
		}
	}
}
