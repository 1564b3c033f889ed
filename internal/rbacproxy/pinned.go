package rbacproxy

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Pinned is kmshealth's part of the workload's pod template as the API
// server stores it: the config hash annotation, the sidecar container and
// its volumes, each whole, with every field the API server defaults filled
// in. It is what the reconciler's admission policy pins and what the drift
// check compares: an allow-list — anything in the sidecar that is not here
// (a lifecycle hook, a startupProbe, an exec probe, a hostPort, an
// AppArmor or SELinux option, an environment) is a difference, whoever
// wrote it.
//
// The fields the API server defaults, and so the only ones whose value is
// not ours (every exception, and why it is safe):
//   - terminationMessagePath (/dev/termination-log) and
//     terminationMessagePolicy (File): where kubelet reads the exit message;
//     our values are the defaults, so a pinned sidecar never differs.
//   - imagePullPolicy: Always for an image tagged latest or untagged,
//     IfNotPresent otherwise (the API server's rule); the image is pinned.
//   - the probes' timeoutSeconds 1, periodSeconds 10, successThreshold 1,
//     failureThreshold 3: timings, not what is probed.
//   - a ConfigMap or Secret volume's defaultMode 0644: our files are
//     mounted read-only into a non-root container.
//
// Not an exception: hostPort. The API server sets hostPort = containerPort
// in a Pod with spec.hostNetwork, but not in a pod template since
// Kubernetes 1.28 (feature gate DefaultHostNetworkHostPortsInPodTemplates,
// off), so a hostPort on the sidecar of a workload is always somebody's
// write and always a difference.
//
// Nothing else is defaulted into a container of a pod template, so nothing
// else may differ. A Kubernetes version that defaults a new container field
// shows as drift the reconciler cannot repair and the policy denies (it
// fails closed); TestPinnedIsWhatTheAPIServerStores catches it.
type Pinned struct {
	ConfigHash string           `json:"configHash"`
	Container  corev1.Container `json:"container"`
	Volumes    []corev1.Volume  `json:"volumes"`
}

// The API server's container and volume defaults (k8s.io/api/core/v1
// documents each).
const (
	defaultProbeTimeoutSeconds   int32 = 1
	defaultProbePeriodSeconds    int32 = 10
	defaultProbeSuccessThreshold int32 = 1
	defaultProbeFailureThreshold int32 = 3
	defaultVolumeMode            int32 = 0o644
	latestTag                          = "latest"
)

// Pinned is c's part of the pod template, normalised with the API server's
// defaults.
func (c Config) Pinned() (Pinned, error) {
	tmpl, err := c.desiredTemplate()
	if err != nil {
		return Pinned{}, err
	}
	p := Pinned{
		ConfigHash: tmpl.Annotations[ConfigHashAnnotation],
		Container:  tmpl.Spec.InitContainers[0],
		Volumes:    tmpl.Spec.Volumes,
	}
	normaliseContainer(&p.Container)
	for i := range p.Volumes {
		normaliseVolume(&p.Volumes[i])
	}
	return p, nil
}

// EncodePinned is Pinned as JSON, the form the reconciler's
// installer takes (kmshealth_rbac_proxy_sidecar's pinned_sidecar): stable
// for equal Configs.
func (c Config) EncodePinned() (string, error) {
	p, err := c.Pinned()
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("rbac proxy for %s: encode the pinned sidecar: %w", c.Target, err)
	}
	return string(data), nil
}

// DecodePinned reads what EncodePinned wrote; unknown fields are refused
// (a skewed kmshealth), so nothing unread is ever pinned or allowed.
func DecodePinned(data string) (Pinned, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	var p Pinned
	if err := dec.Decode(&p); err != nil {
		return Pinned{}, fmt.Errorf("decode the pinned sidecar: %w", err)
	}
	if p.Container.Name != ContainerName || p.Container.Image == "" || p.ConfigHash == "" {
		return Pinned{}, fmt.Errorf("decode the pinned sidecar: it is not a %q container with an image and a config hash: pass kmshealth_rbac_proxy_sidecar's pinned_sidecar unchanged", ContainerName)
	}
	return p, nil
}

func normaliseContainer(ctr *corev1.Container) {
	if ctr.TerminationMessagePath == "" {
		ctr.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if ctr.TerminationMessagePolicy == "" {
		ctr.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if ctr.ImagePullPolicy == "" {
		ctr.ImagePullPolicy = defaultPullPolicy(ctr.Image)
	}
	for _, p := range []*corev1.Probe{ctr.LivenessProbe, ctr.ReadinessProbe, ctr.StartupProbe} {
		if p == nil {
			continue
		}
		def := func(v *int32, d int32) {
			if *v == 0 {
				*v = d
			}
		}
		def(&p.TimeoutSeconds, defaultProbeTimeoutSeconds)
		def(&p.PeriodSeconds, defaultProbePeriodSeconds)
		def(&p.SuccessThreshold, defaultProbeSuccessThreshold)
		def(&p.FailureThreshold, defaultProbeFailureThreshold)
		if p.HTTPGet != nil && p.HTTPGet.Scheme == "" {
			p.HTTPGet.Scheme = corev1.URISchemeHTTP
		}
	}
	for i := range ctr.Ports {
		if ctr.Ports[i].Protocol == "" {
			ctr.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
}

func normaliseVolume(v *corev1.Volume) {
	mode := defaultVolumeMode
	if cm := v.ConfigMap; cm != nil && cm.DefaultMode == nil {
		cm.DefaultMode = &mode
	}
	if s := v.Secret; s != nil && s.DefaultMode == nil {
		s.DefaultMode = &mode
	}
}

// defaultPullPolicy is the API server's rule: Always when the image's tag
// is latest, or when it has neither tag nor digest (which means latest);
// IfNotPresent otherwise.
func defaultPullPolicy(image string) corev1.PullPolicy {
	name, digest, _ := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag = name[i+1:]
	}
	if tag == latestTag || (tag == "" && digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// RestorePatch is a JSON patch (RFC 6902) that puts the pinned sidecar and
// volumes back whole where live holds them changed, or nil when there is
// nothing server-side apply cannot do itself. Server-side apply sets our
// fields but never removes another manager's (a lifecycle hook, an exec
// probe beside our httpGet, an AppArmor profile in our securityContext):
// only replacing the list entries does. resourceVersion is the workload's
// as read: the write is refused (409) if it changed since. Apply the
// workload's apply configuration after it, so our manager owns the fields.
func (c Config) RestorePatch(live *corev1.PodTemplateSpec, resourceVersion string) ([]byte, error) {
	want, err := c.Pinned()
	if err != nil {
		return nil, err
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	for i, ctr := range live.Spec.InitContainers {
		if ctr.Name == ContainerName && len(jsonDiff(&ctr, &want.Container)) > 0 {
			ops = append(ops, op{"replace", fmt.Sprintf("/spec/template/spec/initContainers/%d", i), want.Container})
		}
	}
	for i, v := range live.Spec.Volumes {
		for _, wv := range want.Volumes {
			if v.Name == wv.Name && len(jsonDiff(&v, &wv)) > 0 {
				ops = append(ops, op{"replace", fmt.Sprintf("/spec/template/spec/volumes/%d", i), wv})
			}
		}
	}
	if len(ops) == 0 {
		return nil, nil
	}
	ops = append([]op{{"replace", "/metadata/resourceVersion", resourceVersion}}, ops...)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("rbac proxy for %s: encode the restore patch: %w", c.Target, err)
	}
	return data, nil
}
