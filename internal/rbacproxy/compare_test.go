package rbacproxy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// liveTemplate is what the API server would hold after our apply to a
// user's workload: the user's fields, ours, and the defaults the server
// fills in (which are nobody's intent and must not count as drift).
func liveTemplate(t *testing.T, c Config) *corev1.PodTemplateSpec {
	t.Helper()
	want, err := c.desiredTemplate()
	if err != nil {
		t.Fatal(err)
	}
	live := want.DeepCopy()
	live.Labels = map[string]string{"app": "web"}
	live.Annotations["user/annotation"] = "kept"
	live.Spec.ServiceAccountName = "web"
	live.Spec.Containers = []corev1.Container{{Name: "web", Image: "example.com/web:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}
	live.Spec.InitContainers = append([]corev1.Container{{Name: "migrate", Image: "example.com/migrate:1"}}, live.Spec.InitContainers...)
	live.Spec.Volumes = append(live.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	mode := int32(0o644)
	for i := range live.Spec.Volumes {
		if cm := live.Spec.Volumes[i].ConfigMap; cm != nil {
			cm.DefaultMode = &mode
		}
		if s := live.Spec.Volumes[i].Secret; s != nil {
			s.DefaultMode = &mode
		}
	}
	ctr := &live.Spec.InitContainers[1]
	ctr.ImagePullPolicy = corev1.PullIfNotPresent
	ctr.TerminationMessagePath = corev1.TerminationMessagePathDefault
	ctr.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	for _, p := range []*corev1.Probe{ctr.LivenessProbe, ctr.ReadinessProbe} {
		p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 1, 10, 1, 3
	}
	// Quantities come back canonical.
	for name, q := range ctr.Resources.Requests {
		ctr.Resources.Requests[name] = resource.MustParse(q.String())
	}
	return live
}

func sidecarOf(live *corev1.PodTemplateSpec) *corev1.Container {
	for i := range live.Spec.InitContainers {
		if live.Spec.InitContainers[i].Name == ContainerName {
			return &live.Spec.InitContainers[i]
		}
	}
	return nil
}

func TestDiff(t *testing.T) {
	configs := map[string]func(*Config){
		"defaults":     func(*Config) {},
		"full":         func(c *Config) { *c = full() },
		"tls secret":   func(c *Config) { c.TLS.SecretName = "web-tls" },
		"insecure":     func(c *Config) { c.InsecureListen = true },
		"cpu as 0.005": func(c *Config) { c.Resources.Requests = map[string]string{"cpu": "0.005"} },
	}
	for cname, configure := range configs {
		c := valid()
		configure(&c)
		for _, tc := range []struct {
			name   string
			mutate func(*corev1.PodTemplateSpec)
			want   string // "" = in sync
		}{
			{"as applied", func(*corev1.PodTemplateSpec) {}, ""},
			// The sidecar is pinned whole (issue 21): another manager's
			// addition to it is drift, restored like any other.
			{"others' additions to the sidecar are drift", func(l *corev1.PodTemplateSpec) {
				s := sidecarOf(l)
				s.Env = append(s.Env, corev1.EnvVar{Name: "X", Value: "y"})
				if s.Resources.Limits == nil {
					s.Resources.Limits = corev1.ResourceList{}
				}
				s.Resources.Limits["ephemeral-storage"] = resource.MustParse("1Gi")
				s.SecurityContext.RunAsUser = new(int64)
				*s.SecurityContext.RunAsUser = 65532
			}, "env differs from the recorded container"},
			{"the workload's own fields are not ours", func(l *corev1.PodTemplateSpec) {
				l.Annotations["user/other"] = "x"
				l.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "X", Value: "y"}}
				l.Spec.Volumes = append(l.Spec.Volumes, corev1.Volume{Name: "more", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}, ""},
			{"sidecar removed", func(l *corev1.PodTemplateSpec) { l.Spec.InitContainers = l.Spec.InitContainers[:1] }, `no "kmshealth-rbac-proxy" sidecar`},
			{"sidecar moved to containers", func(l *corev1.PodTemplateSpec) {
				l.Spec.Containers = append(l.Spec.Containers, *sidecarOf(l))
				l.Spec.InitContainers = l.Spec.InitContainers[:1]
			}, "no \"kmshealth-rbac-proxy\" sidecar"},
			{"annotation removed", func(l *corev1.PodTemplateSpec) { delete(l.Annotations, ConfigHashAnnotation) }, "annotation " + ConfigHashAnnotation},
			{"annotation stale", func(l *corev1.PodTemplateSpec) { l.Annotations[ConfigHashAnnotation] = "0" }, `is "0"`},
			{"not a native sidecar", func(l *corev1.PodTemplateSpec) { sidecarOf(l).RestartPolicy = nil }, "restartPolicy is unset"},
			{"image", func(l *corev1.PodTemplateSpec) { sidecarOf(l).Image = "evil:latest" }, `image is "evil:latest"`},
			{"args", func(l *corev1.PodTemplateSpec) {
				s := sidecarOf(l)
				s.Args = append(s.Args[:len(s.Args)-1], "--ignore-paths=/*")
			}, "args are"},
			{"port", func(l *corev1.PodTemplateSpec) { sidecarOf(l).Ports = nil }, "has no port"},
			{"mount", func(l *corev1.PodTemplateSpec) { sidecarOf(l).VolumeMounts[0].ReadOnly = false }, "does not mount volume"},
			{"probe", func(l *corev1.PodTemplateSpec) { sidecarOf(l).ReadinessProbe = nil }, "readinessProbe"},
			{"probe target", func(l *corev1.PodTemplateSpec) {
				sidecarOf(l).LivenessProbe.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}}
			}, "livenessProbe"},
			{"privilege escalation", func(l *corev1.PodTemplateSpec) {
				tr := true
				sidecarOf(l).SecurityContext.AllowPrivilegeEscalation = &tr
			}, "securityContext.allowPrivilegeEscalation"},
			{"capabilities", func(l *corev1.PodTemplateSpec) { sidecarOf(l).SecurityContext.Capabilities = nil }, "securityContext.capabilities.drop"},
			{"security context removed", func(l *corev1.PodTemplateSpec) { sidecarOf(l).SecurityContext = nil }, "securityContext.runAsNonRoot"},
			{"config volume removed", func(l *corev1.PodTemplateSpec) { l.Spec.Volumes = l.Spec.Volumes[1:] }, `volume "kmshealth-rbac-proxy-config" is missing`},
			{"config volume repointed", func(l *corev1.PodTemplateSpec) { l.Spec.Volumes[0].ConfigMap.Name = "other" }, `volume "kmshealth-rbac-proxy-config" is not ConfigMap`},
		} {
			t.Run(cname+"/"+tc.name, func(t *testing.T) {
				live := liveTemplate(t, c)
				tc.mutate(live)
				diffs, err := c.Diff(live)
				if err != nil {
					t.Fatal(err)
				}
				inSync, err := c.InSync(live)
				if err != nil || inSync != (len(diffs) == 0) {
					t.Fatalf("InSync = %v, %v with diffs %q", inSync, err, diffs)
				}
				if tc.want == "" {
					if len(diffs) > 0 {
						t.Fatalf("Diff = %q, want in sync", diffs)
					}
					return
				}
				if !strings.Contains(strings.Join(diffs, "\n"), tc.want) {
					t.Fatalf("Diff = %q, want one containing %q", diffs, tc.want)
				}
			})
		}
	}
}

func TestDiffSeesResourceChanges(t *testing.T) {
	c := full()
	live := liveTemplate(t, c)
	sidecarOf(live).Resources.Limits["memory"] = resource.MustParse("1Gi")
	diffs, err := c.Diff(live)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(diffs, "\n"), "resources.limits[memory] is 1Gi, want 64Mi") {
		t.Fatalf("Diff = %q", diffs)
	}
}

func TestDiffSeesTLSVolumeChanges(t *testing.T) {
	c := valid()
	c.TLS.SecretName = "web-tls"
	live := liveTemplate(t, c)
	for i := range live.Spec.Volumes {
		if live.Spec.Volumes[i].Name == TLSVolumeName {
			live.Spec.Volumes[i].Secret.SecretName = "stolen"
		}
	}
	diffs, err := c.Diff(live)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(diffs, "\n"), `is not Secret "web-tls"`) {
		t.Fatalf("Diff = %q", diffs)
	}
}

// TestDiffSeesEveryFieldFamily: the drift check compares the whole
// sidecar, so each family of fields the admission policy pins is drift
// when changed — including those no named check looks at (issue 21's
// bypasses).
func TestDiffSeesEveryFieldFamily(t *testing.T) {
	unconfined := "Unconfined"
	tr := true
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Container)
		want   string
	}{
		{"lifecycle: exec postStart", func(s *corev1.Container) {
			s.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
				Command: []string{"/usr/local/bin/kube-rbac-proxy", "--insecure-listen-address=0.0.0.0:9999", "--ignore-paths=/*"}}}}
		}, "lifecycle differs"},
		{"lifecycle: preStop sleep", func(s *corev1.Container) {
			s.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
		}, "lifecycle differs"},
		{"probes: exec startupProbe", func(s *corev1.Container) {
			s.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/usr/local/bin/kube-rbac-proxy"}}}}
		}, "startupProbe differs"},
		{"probes: liveness replaced by exec", func(s *corev1.Container) {
			s.LivenessProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
		}, "livenessProbe.exec differs"},
		{"probes: timings", func(s *corev1.Container) { s.ReadinessProbe.FailureThreshold = 1000 }, "readinessProbe.failureThreshold differs"},
		{"securityContext: seccomp Unconfined", func(s *corev1.Container) {
			s.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}, "securityContext.seccompProfile"},
		{"securityContext: AppArmor Unconfined", func(s *corev1.Container) {
			s.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileType(unconfined)}
		}, "securityContext.appArmorProfile differs"},
		{"securityContext: SELinux spc_t", func(s *corev1.Container) {
			s.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		}, "securityContext.seLinuxOptions differs"},
		{"securityContext: no capability drop", func(s *corev1.Container) { s.SecurityContext.Capabilities = nil }, "securityContext.capabilities differs"},
		{"securityContext: writable root", func(s *corev1.Container) {
			f := false
			s.SecurityContext.ReadOnlyRootFilesystem = &f
		}, "securityContext.readOnlyRootFilesystem differs"},
		{"securityContext: runAsUser 0", func(s *corev1.Container) { s.SecurityContext.RunAsUser = new(int64) }, "securityContext.runAsUser differs"},
		{"securityContext: privileged", func(s *corev1.Container) { s.SecurityContext.Privileged = &tr }, "securityContext.privileged differs"},
		{"ports: hostPort", func(s *corev1.Container) { s.Ports[0].HostPort = s.Ports[0].ContainerPort }, "ports[0].hostPort differs"},
		{"ports: another port", func(s *corev1.Container) {
			s.Ports = append(s.Ports, corev1.ContainerPort{Name: "evil", ContainerPort: 9999, Protocol: corev1.ProtocolTCP})
		}, "ports differs"},
		{"command", func(s *corev1.Container) { s.Command = []string{"/bin/sh"} }, "command differs"},
		{"env from", func(s *corev1.Container) {
			s.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}
		}, "envFrom differs"},
		{"volumeMounts: subPath", func(s *corev1.Container) { s.VolumeMounts[0].SubPath = "x" }, "volumeMounts[0].subPath differs"},
		{"stdin", func(s *corev1.Container) { s.Stdin = true }, "stdin differs"},
		{"pull policy", func(s *corev1.Container) { s.ImagePullPolicy = corev1.PullNever }, "imagePullPolicy differs"},
		{"resize policy", func(s *corev1.Container) {
			s.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		}, "resizePolicy differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			live := liveTemplate(t, c)
			tc.mutate(sidecarOf(live))
			diffs, err := c.Diff(live)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(diffs, "\n"), tc.want) {
				t.Fatalf("Diff = %q, want one containing %q", diffs, tc.want)
			}
		})
	}
}

// TestDiffHostNetwork: the API server defaults no hostPort in a pod
// template, even with hostNetwork: a hostPort on the sidecar is drift.
func TestDiffHostNetwork(t *testing.T) {
	c := valid()
	live := liveTemplate(t, c)
	live.Spec.HostNetwork = true
	if diffs, err := c.Diff(live); err != nil || len(diffs) > 0 {
		t.Fatalf("Diff = %q, %v; want in sync", diffs, err)
	}
	s := sidecarOf(live)
	s.Ports[0].HostPort = s.Ports[0].ContainerPort
	if diffs, _ := c.Diff(live); !strings.Contains(strings.Join(diffs, "\n"), "ports[0].hostPort differs") {
		t.Fatalf("Diff = %q, want the hostPort", diffs)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"quay.io/brancz/kube-rbac-proxy:v0.19.1":                 corev1.PullIfNotPresent,
		"quay.io/brancz/kube-rbac-proxy":                         corev1.PullAlways,
		"quay.io/brancz/kube-rbac-proxy:latest":                  corev1.PullAlways,
		"localhost:5000/kube-rbac-proxy":                         corev1.PullAlways,
		"localhost:5000/kube-rbac-proxy:v1":                      corev1.PullIfNotPresent,
		"quay.io/x/krp@sha256:" + strings.Repeat("a", 64):        corev1.PullIfNotPresent,
		"quay.io/x/krp:latest@sha256:" + strings.Repeat("a", 64): corev1.PullAlways,
	} {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}
