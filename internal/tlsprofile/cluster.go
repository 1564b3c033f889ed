package tlsprofile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// The profile ConfigMap's own metadata: the label the reconciler selects
// profile ConfigMaps by, and the annotation that lists its rollout targets,
// so the reconciler learns the targets from our object, never from labels
// on the workloads (which a Helm upgrade or kubectl replace would drop).
const (
	ProfileLabel      = "kmshealth.io/tls-profile"
	TargetsAnnotation = "kmshealth.io/tls-profile-targets"
	// SpecAnnotation records what the profile was resolved from (the
	// static spec, or just the cluster source), so the reconciler can
	// resolve it again: to restore an edited profile.json, or to follow
	// the cluster's APIServer.
	SpecAnnotation = "kmshealth.io/tls-profile-spec"
	// FieldManager writes the ConfigMap; TargetFieldManager writes only the
	// hash annotation on targets, so applying it never touches (or drops)
	// fields kmshealth writes on the same workload for another purpose.
	FieldManager       = kube.FieldManager
	TargetFieldManager = "kmshealth-tls-profile"
)

// Target is a workload whose pod template carries HashAnnotation.
type Target = kube.Workload

// TargetKinds are the kinds a rollout target may be.
func TargetKinds() []string {
	var out []string
	for _, k := range kube.WorkloadKinds() {
		out = append(out, string(k))
	}
	return out
}

// TargetGVR is the target's resource, apps/v1; an unknown kind is a field
// error on kind.
func TargetGVR(t Target) (schema.GroupVersionResource, error) {
	gvr, ok := t.Kind.GVR()
	if !ok {
		return schema.GroupVersionResource{}, fieldError("kind", string(t.Kind), "unknown rollout target kind", "", TargetKinds())
	}
	return gvr, nil
}

// ConfigMap is the profile ConfigMap: profile.json as resolved, the
// profile label, and the rollout targets in an annotation.
func ConfigMap(namespace, name string, spec Spec, r Resolved, targets []Target) (*corev1ac.ConfigMapApplyConfiguration, error) {
	t, err := json.Marshal(nonNilTargets(targets))
	if err != nil {
		return nil, err
	}
	if spec.Source == SourceCluster {
		spec = Spec{Source: SourceCluster, FIPS: spec.FIPS} // re-read from the cluster every time
	}
	sp, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return corev1ac.ConfigMap(name, namespace).
		WithLabels(map[string]string{ProfileLabel: "true", "app.kubernetes.io/managed-by": "kmshealth"}).
		WithAnnotations(map[string]string{TargetsAnnotation: string(t), SpecAnnotation: string(sp)}).
		WithData(map[string]string{DocumentKey: string(r.JSON)}), nil
}

// FromConfigMap reads a profile ConfigMap's spec and targets annotations.
func FromConfigMap(annotations map[string]string) (Spec, []Target, error) {
	var spec Spec
	var targets []Target
	if err := json.Unmarshal([]byte(annotations[SpecAnnotation]), &spec); err != nil {
		return spec, nil, fmt.Errorf("annotation %s: %w", SpecAnnotation, err)
	}
	if a := annotations[TargetsAnnotation]; a != "" {
		if err := json.Unmarshal([]byte(a), &targets); err != nil {
			return spec, nil, fmt.Errorf("annotation %s: %w", TargetsAnnotation, err)
		}
	}
	return spec, targets, nil
}

func nonNilTargets(t []Target) []Target {
	if t == nil {
		return []Target{}
	}
	return t
}

// ErrNotOurs is returned when a ConfigMap of that name exists and is not a
// profile ConfigMap of kmshealth's.
var ErrNotOurs = errors.New("exists and is not a kmshealth TLS profile ConfigMap")

// ApplyConfigMap writes the profile ConfigMap by server-side apply. A
// ConfigMap of the same name that someone else created is never taken over
// (ErrNotOurs).
func ApplyConfigMap(ctx context.Context, cms corev1client.ConfigMapsGetter, ac *corev1ac.ConfigMapApplyConfiguration) error {
	live, err := cms.ConfigMaps(*ac.Namespace).Get(ctx, *ac.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case live.Labels[ProfileLabel] != "true":
		return fmt.Errorf("ConfigMap %s/%s %w", *ac.Namespace, *ac.Name, ErrNotOurs)
	}
	_, err = cms.ConfigMaps(*ac.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// LiveDocument reads the profile ConfigMap: its profile.json and its
// targets. found is false when there is no such ConfigMap, or it is not
// ours.
func LiveDocument(ctx context.Context, cms corev1client.ConfigMapsGetter, namespace, name string) (doc []byte, targets []Target, found bool, err error) {
	live, err := cms.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	if live.Labels[ProfileLabel] != "true" {
		return nil, nil, false, nil
	}
	if a := live.Annotations[TargetsAnnotation]; a != "" {
		if err := json.Unmarshal([]byte(a), &targets); err != nil {
			return nil, nil, false, fmt.Errorf("ConfigMap %s/%s: annotation %s: %w", namespace, name, TargetsAnnotation, err)
		}
	}
	return []byte(live.Data[DocumentKey]), targets, true, nil
}

// targetObject is the apply configuration of a target with only the hash
// annotation (or, with hash "", nothing: applying that releases it).
func targetObject(t Target, hash string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       t.Kind,
		"metadata":   map[string]any{"name": t.Name, "namespace": t.Namespace},
	}}
	if hash != "" {
		obj.Object["spec"] = map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{HashAnnotation: hash}}}}
	}
	return obj
}

// AnnotateTarget sets the target's pod-template hash annotation, and only
// that field, by server-side apply under TargetFieldManager; a changed
// value rolls the workload. A missing target is an error naming it.
func AnnotateTarget(ctx context.Context, dyn dynamic.Interface, t Target, hash string) error {
	gvr, err := TargetGVR(t)
	if err != nil {
		return err
	}
	ri := dyn.Resource(gvr).Namespace(t.Namespace)
	if _, err := ri.Get(ctx, t.Name, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("rollout target %s not found: create it first, or remove it from rollout_targets", t)
		}
		return fmt.Errorf("read rollout target %s: %w", t, err)
	}
	if _, err := ri.Apply(ctx, t.Name, targetObject(t, hash), metav1.ApplyOptions{FieldManager: TargetFieldManager, Force: true}); err != nil {
		return fmt.Errorf("annotate rollout target %s: %w", t, err)
	}
	return nil
}

// ReleaseTarget gives up the hash annotation: applying an empty
// configuration under TargetFieldManager removes the fields it owned. A
// missing target is fine.
func ReleaseTarget(ctx context.Context, dyn dynamic.Interface, t Target) error {
	gvr, err := TargetGVR(t)
	if err != nil {
		return err
	}
	ri := dyn.Resource(gvr).Namespace(t.Namespace)
	if _, err := ri.Get(ctx, t.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	}
	if _, err := ri.Apply(ctx, t.Name, targetObject(t, ""), metav1.ApplyOptions{FieldManager: TargetFieldManager, Force: true}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release rollout target %s: %w", t, err)
	}
	return nil
}

// TargetHash reads the target's pod-template hash annotation; found is
// false when the target does not exist.
func TargetHash(ctx context.Context, dyn dynamic.Interface, t Target) (hash string, found bool, err error) {
	gvr, err := TargetGVR(t)
	if err != nil {
		return "", false, err
	}
	obj, err := dyn.Resource(gvr).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	v, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "metadata", "annotations", HashAnnotation)
	return v, true, nil
}

// IsOpenShift reports whether the cluster serves OpenShift's
// config.openshift.io/v1 APIServer API: the platform detection done once,
// here, so that workloads take it as a value instead of calling discovery
// at startup.
func IsOpenShift(disco discovery.DiscoveryInterface) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(APIServerGroup + "/" + APIServerVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s/%s: %w", APIServerGroup, APIServerVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == APIServerResource }), nil
}

// ErrNoAPIServerAPI: the cluster does not serve OpenShift's APIServer API.
var ErrNoAPIServerAPI = errors.New("source = \"cluster\" reads OpenShift's " + APIServerGroup + "/" + APIServerVersion +
	" APIServer \"" + APIServerName + "\", and this cluster does not serve that API: give the profile in a profile block instead")

// ReadCluster reads the cluster's profile and tlsAdherence from the
// APIServer object "cluster": a missing object means Intermediate; a
// cluster without the API is ErrNoAPIServerAPI.
func ReadCluster(ctx context.Context, dyn dynamic.Interface, disco discovery.DiscoveryInterface) (Spec, Adherence, error) {
	ok, err := IsOpenShift(disco)
	if err != nil {
		return Spec{}, "", err
	}
	if !ok {
		return Spec{}, "", ErrNoAPIServerAPI
	}
	obj, err := dyn.Resource(APIServerGVR()).Get(ctx, APIServerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return FromAPIServer(nil)
	}
	if err != nil {
		return Spec{}, "", fmt.Errorf("read APIServer %s: %w", APIServerName, err)
	}
	return FromAPIServer(obj)
}

// Describe lists targets for messages.
func Describe(targets []Target) string {
	s := make([]string, len(targets))
	for i, t := range targets {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}
