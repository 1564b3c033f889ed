package rbacproxy

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Diff compares the live pod template of the workload with Pinned: the
// config hash annotation, the sidecar container and its volumes, each
// whole (normalised for what the API server defaults; see Pinned), and
// describes each difference. Fields of the sidecar nobody of kmshealth
// wrote (a lifecycle hook, a startupProbe, an AppArmor profile, a
// hostPort) are differences too: the admission policy pins the same
// whole container, so what it would deny is what Diff reports and
// Restore puts back. The rest of the pod template is the workload's and
// is not looked at. Empty means in sync: nothing to write.
func (c Config) Diff(live *corev1.PodTemplateSpec) ([]string, error) {
	want, err := c.Pinned()
	if err != nil {
		return nil, err
	}
	var diffs []string
	differ := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }

	if have := live.Annotations[ConfigHashAnnotation]; have != want.ConfigHash {
		differ("annotation %s is %q, want %q", ConfigHashAnnotation, have, want.ConfigHash)
	}
	i := slices.IndexFunc(live.Spec.InitContainers, func(ctr corev1.Container) bool { return ctr.Name == ContainerName })
	if i < 0 {
		differ("initContainers has no %q sidecar", ContainerName)
	} else {
		diffContainer(differ, &live.Spec.InitContainers[i], &want.Container)
	}
	for _, wv := range want.Volumes {
		j := slices.IndexFunc(live.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == wv.Name })
		if j < 0 {
			differ("volume %q is missing", wv.Name)
			continue
		}
		diffVolume(differ, &live.Spec.Volumes[j], &wv)
	}
	return diffs, nil
}

// InSync reports whether live carries the sidecar as desired (Diff is empty).
func (c Config) InSync(live *corev1.PodTemplateSpec) (bool, error) {
	diffs, err := c.Diff(live)
	return len(diffs) == 0, err
}

// desiredTemplate is PodTemplateApply as a typed object: what the apply
// configuration means, field for field.
func (c Config) desiredTemplate() (*corev1.PodTemplateSpec, error) {
	ac, err := c.PodTemplateApply()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("rbac proxy for %s: encode the pod template: %w", c.Target, err)
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("rbac proxy for %s: decode the pod template: %w", c.Target, err)
	}
	return &out, nil
}

func diffContainer(differ func(string, ...any), have, want *corev1.Container) {
	name := fmt.Sprintf("sidecar %q", want.Name)
	if !equality.Semantic.DeepEqual(have.RestartPolicy, want.RestartPolicy) {
		differ("%s restartPolicy is %v, want %s (a native sidecar)", name, ptrString(have.RestartPolicy), ptrString(want.RestartPolicy))
	}
	if have.Image != want.Image {
		differ("%s image is %q, want %q", name, have.Image, want.Image)
	}
	if !slices.Equal(have.Args, want.Args) {
		differ("%s args are %q, want %q", name, have.Args, want.Args)
	}
	for _, wp := range want.Ports {
		if !slices.ContainsFunc(have.Ports, func(p corev1.ContainerPort) bool {
			return p.ContainerPort == wp.ContainerPort && p.Name == wp.Name && protocol(p.Protocol) == protocol(wp.Protocol)
		}) {
			differ("%s has no port %s %d/%s", name, wp.Name, wp.ContainerPort, wp.Protocol)
		}
	}
	for _, wm := range want.VolumeMounts {
		if !slices.ContainsFunc(have.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.MountPath == wm.MountPath && m.Name == wm.Name && m.ReadOnly == wm.ReadOnly
		}) {
			differ("%s does not mount volume %q read-only at %s", name, wm.Name, wm.MountPath)
		}
	}
	for _, list := range []struct {
		name       string
		have, want corev1.ResourceList
	}{{"requests", have.Resources.Requests, want.Resources.Requests}, {"limits", have.Resources.Limits, want.Resources.Limits}} {
		for res, wq := range list.want {
			if hq, ok := list.have[res]; !ok || hq.Cmp(wq) != 0 {
				differ("%s resources.%s[%s] is %v, want %s", name, list.name, res, quantityString(list.have, res), wq.String())
			}
		}
	}
	for _, p := range []struct {
		name       string
		have, want *corev1.Probe
	}{{"livenessProbe", have.LivenessProbe, want.LivenessProbe}, {"readinessProbe", have.ReadinessProbe, want.ReadinessProbe}} {
		if p.have == nil || !equality.Semantic.DeepEqual(probeHandler(p.have), probeHandler(p.want)) {
			differ("%s %s differs from the proxy's health check", name, p.name)
		}
	}
	diffSecurityContext(differ, name, have.SecurityContext, want.SecurityContext)
	// Then the whole container: whatever the named checks above do not
	// look at (lifecycle, startupProbe, probe timings, hostPort, AppArmor,
	// SELinux, env, command, ...) differs too.
	for _, path := range jsonDiff(have, want) {
		differ("%s %s differs from the recorded container", name, path)
	}
}

// probeHandler is the part of a probe kmshealth sets: what is probed, not
// the timings the API server defaults.
func probeHandler(p *corev1.Probe) corev1.ProbeHandler {
	h := *p.ProbeHandler.DeepCopy()
	if h.HTTPGet != nil && h.HTTPGet.Scheme == "" {
		h.HTTPGet.Scheme = corev1.URISchemeHTTP
	}
	return h
}

func diffSecurityContext(differ func(string, ...any), name string, have, want *corev1.SecurityContext) {
	if have == nil {
		have = &corev1.SecurityContext{}
	}
	wrong := func(field string) { differ("%s securityContext.%s differs from the hardened setting", name, field) }
	if !equality.Semantic.DeepEqual(have.RunAsNonRoot, want.RunAsNonRoot) {
		wrong("runAsNonRoot")
	}
	if !equality.Semantic.DeepEqual(have.ReadOnlyRootFilesystem, want.ReadOnlyRootFilesystem) {
		wrong("readOnlyRootFilesystem")
	}
	if !equality.Semantic.DeepEqual(have.AllowPrivilegeEscalation, want.AllowPrivilegeEscalation) {
		wrong("allowPrivilegeEscalation")
	}
	if have.Capabilities == nil || !slices.Equal(have.Capabilities.Drop, want.Capabilities.Drop) {
		wrong("capabilities.drop")
	}
	if have.SeccompProfile == nil || have.SeccompProfile.Type != want.SeccompProfile.Type {
		wrong("seccompProfile")
	}
}

func diffVolume(differ func(string, ...any), have, want *corev1.Volume) {
	defer func() {
		for _, path := range jsonDiff(have, want) {
			differ("volume %q %s differs from the recorded volume", want.Name, path)
		}
	}()
	switch {
	case want.ConfigMap != nil:
		if have.ConfigMap == nil || have.ConfigMap.Name != want.ConfigMap.Name || !equality.Semantic.DeepEqual(have.ConfigMap.Items, want.ConfigMap.Items) {
			differ("volume %q is not ConfigMap %q with key %s", want.Name, want.ConfigMap.Name, ConfigFileKey)
		}
	case want.Secret != nil:
		if have.Secret == nil || have.Secret.SecretName != want.Secret.SecretName || !equality.Semantic.DeepEqual(have.Secret.Items, want.Secret.Items) {
			differ("volume %q is not Secret %q with keys %s and %s", want.Name, want.Secret.SecretName, TLSCertKey, TLSPrivateKeyKey)
		}
	}
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func quantityString(l corev1.ResourceList, name corev1.ResourceName) string {
	if q, ok := l[name]; ok {
		return q.String()
	}
	return "unset"
}

// jsonDiff lists the JSON paths (".lifecycle", ".ports[0].hostPort") where
// have and want differ, both encoded as the API server encodes them: a
// field set on one side only, or set to another value.
func jsonDiff(have, want any) []string {
	var h, w any
	for _, x := range []struct {
		in  any
		out *any
	}{{have, &h}, {want, &w}} {
		data, err := json.Marshal(x.in)
		if err != nil {
			return []string{"(cannot be encoded: " + err.Error() + ")"}
		}
		if err := json.Unmarshal(data, x.out); err != nil {
			return []string{"(cannot be decoded: " + err.Error() + ")"}
		}
	}
	var out []string
	walkDiff("", h, w, &out)
	return out
}

func walkDiff(path string, have, want any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			break
		}
		keys := slices.Sorted(maps.Keys(h))
		for k := range w {
			if _, ok := h[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			walkDiff(path+"."+k, h[k], w[k], out)
		}
		return
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			break
		}
		for i := range w {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), h[i], w[i], out)
		}
		return
	}
	if !reflect.DeepEqual(have, want) {
		if path == "" {
			path = "."
		}
		*out = append(*out, strings.TrimPrefix(path, "."))
	}
}
