package kmshealth

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// AggregatorFieldManager owns KMSPluginsDegraded: the reconciler's field
// manager, the same as every other kmshealth write.
const AggregatorFieldManager = kube.FieldManager

//go:embed crd.yaml
var crdYAML []byte

// CRDGVR is where CustomResourceDefinitions live.
var CRDGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CRD returns the KMSHealth CustomResourceDefinition, ready to apply.
func CRD() *unstructured.Unstructured {
	var obj map[string]any
	if err := yaml.Unmarshal(crdYAML, &obj); err != nil {
		panic(fmt.Sprintf("embedded crd.yaml: %v", err)) // covered by a unit test
	}
	return &unstructured.Unstructured{Object: obj}
}

// ErrNamespacedTarget is wrapped when the target's resource is
// namespaced: the target must be a cluster-scoped object.
var ErrNamespacedTarget = errors.New("the target must be a cluster-scoped object")

// ErrTargetNotServed is wrapped when the API server serves no such
// resource (yet).
var ErrTargetNotServed = errors.New("the API server serves no such resource")

// ResourceLister lists the resources of one group/version, as discovery
// does (discovery.DiscoveryInterface is one). The reporter answers it with
// one plain GET, so a node agent need not link client-go's discovery and
// the scheme of every built-in API group it brings.
type ResourceLister interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// ResolveKind returns the Kind of the target's resource, which a
// server-side apply body must carry, and refuses a namespaced resource.
// The default target needs no request.
func ResolveKind(ctx context.Context, disc ResourceLister, t Target) (string, error) {
	_ = ctx // discovery takes no context
	if t.IsDefault() {
		return Kind, nil
	}
	gv := schema.GroupVersion{Group: t.Group, Version: t.Version}.String()
	list, err := disc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("target %s: %w (%s is not served)", t, ErrTargetNotServed, gv)
	}
	if err != nil {
		return "", fmt.Errorf("discover %s for target %s: %w", gv, t, err)
	}
	for _, r := range list.APIResources {
		if r.Name == t.Resource {
			if r.Namespaced {
				return "", fmt.Errorf("target %s: %s is namespaced: %w", t, t.Resource, ErrNamespacedTarget)
			}
			return r.Kind, nil
		}
	}
	return "", fmt.Errorf("target %s: %w (no resource %q in %s)", t, ErrTargetNotServed, t.Resource, gv)
}

// ApplyCondition server-side applies one condition entry on the target's
// status as fieldManager, forcing ownership of that entry (each entry has
// exactly one writer by design). Other entries and fields are untouched.
func ApplyCondition(ctx context.Context, dyn dynamic.Interface, t Target, kind string, c metav1.Condition, fieldManager string) error {
	return applyCondition(ctx, dyn, t, kind, c, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

// DryRunCondition is ApplyCondition as a dry run: the API server checks
// everything (admission included) and writes nothing.
func DryRunCondition(ctx context.Context, dyn dynamic.Interface, t Target, kind string, c metav1.Condition, fieldManager string) error {
	return applyCondition(ctx, dyn, t, kind, c, metav1.ApplyOptions{FieldManager: fieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
}

func applyCondition(ctx context.Context, dyn dynamic.Interface, t Target, kind string, c metav1.Condition, opts metav1.ApplyOptions) error {
	entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return fmt.Errorf("convert condition %s: %w", c.Type, err)
	}
	body := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schema.GroupVersion{Group: t.Group, Version: t.Version}.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": t.Name},
		"status":     map[string]any{"conditions": []any{entry}},
	}}
	_, err = dyn.Resource(t.GVR()).Apply(ctx, t.Name, body, opts, "status")
	if err != nil {
		return fmt.Errorf("apply condition %s on %s: %w", c.Type, t, err)
	}
	return nil
}

// Conditions returns the target object's status.conditions. Entries that do
// not decode as metav1.Condition are skipped; the object is returned too.
func Conditions(obj *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	out := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			continue
		}
		out = append(out, c)
	}
	return out
}

// GetTarget reads the target object.
func GetTarget(ctx context.Context, dyn dynamic.Interface, t Target) (*unstructured.Unstructured, error) {
	obj, err := dyn.Resource(t.GVR()).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read target %s: %w", t, err)
	}
	return obj, nil
}

// RemoveConditions deletes the condition entries whose type satisfies drop
// from obj (the target as last read), by a JSON patch on the status
// subresource that first tests each entry's position and type, so a
// concurrent change makes it fail instead of removing the wrong entry. It
// returns the removed types; a NotFound target removes nothing.
func RemoveConditions(ctx context.Context, dyn dynamic.Interface, t Target, obj *unstructured.Unstructured, drop func(conditionType string) bool) ([]string, error) {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	var ops []op
	var removed []string
	for i := len(raw) - 1; i >= 0; i-- { // back to front: indices stay valid
		m, _ := raw[i].(map[string]any)
		typ, _ := m["type"].(string)
		if !drop(typ) {
			continue
		}
		path := "/status/conditions/" + strconv.Itoa(i)
		ops = append(ops, op{Op: "test", Path: path + "/type", Value: typ}, op{Op: "remove", Path: path})
		removed = append(removed, typ)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	_, err = dyn.Resource(t.GVR()).Patch(ctx, t.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: AggregatorFieldManager}, "status")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove conditions %v from %s: %w", removed, t, err)
	}
	return removed, nil
}

// IsOurs reports whether a condition type is written by kmshealth (a
// reporter or the aggregator).
func IsOurs(conditionType string) bool {
	_, reporter := NodeFromConditionType(conditionType)
	return reporter || conditionType == DegradedCondition
}

// Established reports whether a CustomResourceDefinition is served, and
// an error when its names were rejected (waiting cannot help then).
func Established(crd *unstructured.Unstructured) (bool, error) {
	ok := false
	for _, c := range Conditions(crd) {
		switch {
		case c.Type == "Established" && c.Status == metav1.ConditionTrue:
			ok = true
		case c.Type == "NamesAccepted" && c.Status == metav1.ConditionFalse:
			return false, fmt.Errorf("CustomResourceDefinition %s: names not accepted: %s", crd.GetName(), c.Message)
		}
	}
	return ok, nil
}

// WaitForCondition watches the target until its condition conditionType
// has status, or ctx ends; the error then names the condition it waited
// for.
func WaitForCondition(ctx context.Context, dyn dynamic.Interface, t Target, conditionType string, status metav1.ConditionStatus) error {
	err := kube.WaitFor(ctx, dyn.Resource(t.GVR()), t.Name, func(u *unstructured.Unstructured) (bool, error) {
		for _, c := range Conditions(u) {
			if c.Type == conditionType {
				return c.Status == status, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s=%s on %s: %w", conditionType, status, t, err)
	}
	return nil
}
