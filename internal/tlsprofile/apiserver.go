package tlsprofile

import (
	_ "embed"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// OpenShift's cluster-wide APIServer configuration object.
const (
	APIServerGroup    = "config.openshift.io"
	APIServerVersion  = "v1"
	APIServerResource = "apiservers"
	APIServerKind     = "APIServer"
	APIServerListKind = "APIServerList"
	APIServerCRDName  = APIServerResource + "." + APIServerGroup
	// APIServerName is the canonical (and only) instance.
	APIServerName = "cluster"
)

// APIServerGVR is the resource of OpenShift's APIServer object.
func APIServerGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: APIServerGroup, Version: APIServerVersion, Resource: APIServerResource}
}

//go:embed apiserver-crd.yaml
var apiServerCRDYAML []byte

// APIServerCRD returns OpenShift's config.openshift.io/v1 APIServer CRD (the
// fields this pattern reads, written from the documented API), for test beds
// and the demo to install into a real API server. A fresh object each call.
func APIServerCRD() *unstructured.Unstructured {
	obj := map[string]any{}
	if err := yaml.Unmarshal(apiServerCRDYAML, &obj); err != nil {
		panic(fmt.Sprintf("embedded apiserver-crd.yaml: %v", err)) // covered by a unit test
	}
	return &unstructured.Unstructured{Object: obj}
}

// FromAPIServer reads an APIServer object's spec.tlsSecurityProfile and
// spec.tlsAdherence; see [FromAPIServerSpec]. A nil object (no APIServer
// "cluster") means the default profile, Intermediate, and no adherence
// opinion.
func FromAPIServer(obj *unstructured.Unstructured) (Spec, Adherence, error) {
	if obj == nil {
		return Spec{Type: DefaultProfile, Source: SourceCluster}, AdherenceNoOpinion, nil
	}
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec")
	if err != nil || !found || raw == nil {
		return FromAPIServerSpec(nil)
	}
	spec, ok := raw.(map[string]any)
	if !ok {
		return Spec{}, "", fmt.Errorf("APIServer %s: spec is %T, want an object", obj.GetName(), raw)
	}
	return FromAPIServerSpec(spec)
}

// FromAPIServerSpec reads the spec map of an APIServer object into a Spec
// (Source cluster) and the adherence. A missing or empty tlsSecurityProfile,
// or an empty type, means Intermediate. For Custom, custom.ciphers,
// custom.minTLSVersion and custom.groups are read; custom.curves, the
// spelling of the API before openshift/api#2583 named the field groups, is
// read too, with a warning in [Spec.Warnings] (both may be set only if they
// are equal). The union members of other types are ignored, as in
// OpenShift. Values are taken as they are: [Resolve] judges them under the
// adherence.
func FromAPIServerSpec(spec map[string]any) (Spec, Adherence, error) {
	out := Spec{Type: DefaultProfile, Source: SourceCluster}
	adherence, err := optionalString(spec, "spec.tlsAdherence", "tlsAdherence")
	if err != nil {
		return Spec{}, "", err
	}
	profile, err := optionalMap(spec, "spec.tlsSecurityProfile", "tlsSecurityProfile")
	if err != nil || profile == nil {
		return out, Adherence(adherence), err
	}
	t, err := optionalString(profile, "spec.tlsSecurityProfile.type", "type")
	if err != nil {
		return Spec{}, "", err
	}
	if t != "" {
		out.Type = ProfileType(t)
	}
	if out.Type != ProfileCustom {
		return out, Adherence(adherence), nil
	}

	custom, err := optionalMap(profile, "spec.tlsSecurityProfile.custom", "custom")
	if err != nil {
		return Spec{}, "", err
	}
	if custom == nil {
		return Spec{}, "", fieldError("spec.tlsSecurityProfile.custom", "", "is missing but type is Custom", "add custom with ciphers and minTLSVersion, or set type to Old, Intermediate or Modern", nil)
	}
	if out.Ciphers, err = stringList(custom, "spec.tlsSecurityProfile.custom.ciphers", "ciphers"); err != nil {
		return Spec{}, "", err
	}
	minVersion, err := optionalString(custom, "spec.tlsSecurityProfile.custom.minTLSVersion", "minTLSVersion")
	if err != nil {
		return Spec{}, "", err
	}
	out.MinTLSVersion = TLSVersion(minVersion)
	curves, err := stringList(custom, "spec.tlsSecurityProfile.custom.curves", "curves")
	if err != nil {
		return Spec{}, "", err
	}
	groups, err := stringList(custom, "spec.tlsSecurityProfile.custom.groups", "groups")
	if err != nil {
		return Spec{}, "", err
	}
	switch {
	case len(curves) > 0 && len(groups) > 0 && !slices.Equal(curves, groups):
		return Spec{}, "", fieldError("spec.tlsSecurityProfile.custom", "", fmt.Sprintf("curves %v and groups %v differ, and they mean the same thing", curves, groups), "set only groups (curves is the older spelling)", nil)
	case len(curves) > 0:
		out.Groups = curves
		out.Warnings = append(out.Warnings, "spec.tlsSecurityProfile.custom.curves is the older spelling of groups (openshift/api#2583); it is read as groups, but write groups instead")
	default:
		out.Groups = groups
	}
	return out, Adherence(adherence), nil
}

func optionalString(m map[string]any, path, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldError(path, "", fmt.Sprintf("is %T, want a string", v), "", nil)
	}
	return s, nil
}

func optionalMap(m map[string]any, path, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	mm, ok := v.(map[string]any)
	if !ok {
		return nil, fieldError(path, "", fmt.Sprintf("is %T, want an object", v), "", nil)
	}
	return mm, nil
}

func stringList(m map[string]any, path, key string) ([]string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	if ss, ok := v.([]string); ok {
		return slices.Clone(ss), nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fieldError(path, "", fmt.Sprintf("is %T, want a list of strings", v), "", nil)
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, ok := item.(string)
		if !ok {
			return nil, fieldError(fmt.Sprintf("%s[%d]", path, i), "", fmt.Sprintf("is %T, want a string", item), "", nil)
		}
		out = append(out, s)
	}
	return out, nil
}
