package rbacproxy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// decoded is what an apply configuration means, as the typed object T.
func decoded[T any](t *testing.T, ac any) *T {
	t.Helper()
	out := new(T)
	if err := roundTripJSON(ac, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// inSyncLive is what the cluster holds right after Apply of c (full()):
// the user's workload with our template merged in, and our objects.
func inSyncLive(t *testing.T, c Config) *Live {
	t.Helper()
	tmpl := liveTemplate(t, c)
	cm, err := c.ConfigMapApply()
	if err != nil {
		t.Fatal(err)
	}
	crb, err := c.ClusterRoleBindingApply()
	if err != nil {
		t.Fatal(err)
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	np, err := c.NetworkPolicyApply(selector)
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
			{Name: ServicePortName, Port: c.Defaulted().ListenPort, TargetPort: intstr.FromInt32(c.Defaulted().ListenPort), Protocol: corev1.ProtocolTCP},
		},
	}}
	return &Live{
		Workload:      &LiveWorkload{UID: "u1", Selector: selector, Template: *tmpl},
		ConfigMap:     decoded[corev1.ConfigMap](t, cm),
		Binding:       decoded[rbacv1.ClusterRoleBinding](t, crb),
		Service:       svc,
		NetworkPolicy: decoded[networkingv1.NetworkPolicy](t, np),
	}
}

func TestDriftInSync(t *testing.T) {
	c := full()
	drift, err := c.Drift(inSyncLive(t, c))
	if err != nil || len(drift) != 0 {
		t.Errorf("Drift of what Apply wrote = %q, %v; want none", drift, err)
	}
	if err := c.Check(inSyncLive(t, c)); err != nil {
		t.Errorf("Check of what Apply wrote: %v", err)
	}
}

func TestDrift(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(l *Live)
		want   string
	}{
		{"workload gone", func(l *Live) { l.Workload = nil }, "Deployment/apps/web does not exist"},
		{"sidecar removed", func(l *Live) {
			l.Workload.Template.Spec.InitContainers = l.Workload.Template.Spec.InitContainers[:1]
		}, `initContainers has no "kmshealth-rbac-proxy" sidecar`},
		{"config edited", func(l *Live) { l.ConfigMap.Data[ConfigFileKey] = "authorization: {}\n" }, "config.yaml was changed"},
		{"record edited", func(l *Live) { l.ConfigMap.Data[RecordKey] = "{}" }, "record.json was changed"},
		{"config ConfigMap gone", func(l *Live) { l.ConfigMap = nil }, "ConfigMap apps/kmshealth-rbac-proxy-deployment-web is missing"},
		{"binding gone", func(l *Live) { l.Binding = nil }, "ClusterRoleBinding kmshealth-rbac-proxy:apps:deployment:web is missing"},
		{"binding widened", func(l *Live) {
			l.Binding.Subjects = append(l.Binding.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Namespace: "apps", Name: "other"})
		}, "does not bind ServiceAccount apps/web to ClusterRole system:auth-delegator alone"},
		{"Service port gone", func(l *Live) { l.Service.Spec.Ports = l.Service.Spec.Ports[:1] }, `Service apps/web has no port "kmshealth-rbac-proxy"`},
		{"Service port changed", func(l *Live) { l.Service.Spec.Ports[1].Port = 9999 }, `port "kmshealth-rbac-proxy" is 9999`},
		{"NetworkPolicy gone", func(l *Live) { l.NetworkPolicy = nil }, "NetworkPolicy apps/kmshealth-rbac-proxy-deployment-web is missing"},
		{"NetworkPolicy opened", func(l *Live) { l.NetworkPolicy.Spec.Ingress[0].Ports = nil }, "its spec was changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := full()
			l := inSyncLive(t, c)
			tc.change(l)
			drift, err := c.Drift(l)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(drift, "; "), tc.want) {
				t.Errorf("Drift = %q, want it to say %q", drift, tc.want)
			}
		})
	}
	// A NetworkPolicy of ours that is no longer wanted is drift too.
	c := full()
	l := inSyncLive(t, c)
	c.NetworkPolicy.Enabled = false
	if drift, _ := c.Drift(l); !strings.Contains(strings.Join(drift, "; "), "no NetworkPolicy is wanted") {
		t.Errorf("Drift with an unwanted NetworkPolicy = %q", drift)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(l *Live)
		field  string
		want   string
	}{
		{"no workload", func(l *Live) { l.Workload = nil }, "target", "Deployment/apps/web does not exist: create it first"},
		{"no Service", func(l *Live) { l.Service = nil }, "serviceName", "Service apps/web does not exist"},
		{"foreign ConfigMap", func(l *Live) { l.ConfigMap.Labels = nil }, "target", "ConfigMap apps/kmshealth-rbac-proxy-deployment-web exists and was not created by kmshealth"},
		{"binding of another namespace's workload", func(l *Live) { l.Binding.Annotations[TargetAnnotation] = "Deployment/other/web" }, "target", "was not created by kmshealth for Deployment/apps/web"},
		{"foreign NetworkPolicy", func(l *Live) { l.NetworkPolicy.Labels = map[string]string{} }, "networkPolicy.enabled", "NetworkPolicy apps/kmshealth-rbac-proxy-deployment-web exists"},
		{"volume of our name", func(l *Live) {
			for i, v := range l.Workload.Template.Spec.Volumes {
				if v.Name == ConfigVolumeName {
					l.Workload.Template.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
				}
			}
		}, "target", `already has a pod volume named "kmshealth-rbac-proxy-config" that is not kmshealth's`},
		{"port taken", func(l *Live) {
			l.Workload.Template.Spec.Containers[0].Ports = append(l.Workload.Template.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: DefaultListenPort})
		}, "listenPort", "8443 is already declared by container"},
		{"empty selector with a NetworkPolicy", func(l *Live) { l.Workload.Selector = &metav1.LabelSelector{} }, "networkPolicy.enabled", "would select every pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := full()
			l := inSyncLive(t, c)
			tc.change(l)
			es := problems(t, c.Check(l))
			if !has(es, tc.field, tc.want) {
				t.Errorf("Check = %v, want %s: %s", es, tc.field, tc.want)
			}
		})
	}
	// A foreign NetworkPolicy of our name is no concern without ours.
	c := full()
	c.NetworkPolicy.Enabled = false
	l := inSyncLive(t, full())
	l.NetworkPolicy.Labels = nil
	if err := c.Check(l); err != nil {
		t.Errorf("Check with a foreign NetworkPolicy and none wanted: %v", err)
	}
}
