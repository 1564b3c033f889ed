package tlsprofile

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func apiServerSpec(t *testing.T, y string) map[string]any {
	t.Helper()
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestFromAPIServerSpec(t *testing.T) {
	tests := []struct {
		name      string
		spec      string
		want      Spec
		adherence Adherence
		errField  string
		errHas    string
	}{
		{name: "no profile means Intermediate", spec: `audit: {profile: Default}`, want: Spec{Type: ProfileIntermediate}},
		{name: "null profile", spec: `tlsSecurityProfile: null`, want: Spec{Type: ProfileIntermediate}},
		{name: "empty profile", spec: `tlsSecurityProfile: {}`, want: Spec{Type: ProfileIntermediate}},
		{name: "empty type", spec: `tlsSecurityProfile: {type: ""}`, want: Spec{Type: ProfileIntermediate}},
		{name: "Old", spec: `tlsSecurityProfile: {type: Old, old: {}}`, want: Spec{Type: ProfileOld}},
		{name: "Modern", spec: `tlsSecurityProfile: {type: Modern, modern: {}}`, want: Spec{Type: ProfileModern}},
		{
			name: "the discriminator wins over a stray custom member",
			spec: `tlsSecurityProfile: {type: Intermediate, custom: {minTLSVersion: VersionTLS10, ciphers: [AES128-SHA]}}`,
			want: Spec{Type: ProfileIntermediate},
		},
		{
			name: "Custom with groups",
			spec: `
tlsSecurityProfile:
  type: Custom
  custom:
    minTLSVersion: VersionTLS12
    ciphers: [ECDHE-RSA-AES128-GCM-SHA256, ECDHE-ECDSA-AES128-GCM-SHA256]
    groups: [X25519, secp256r1]`,
			want: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"}, Groups: []string{"X25519", "secp256r1"}},
		},
		{
			name: "Custom with the older spelling, curves: read as groups, with a warning",
			spec: `
tlsSecurityProfile:
  type: Custom
  custom: {minTLSVersion: VersionTLS13, ciphers: [], curves: [X25519MLKEM768]}`,
			want: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS13, Ciphers: []string{}, Groups: []string{"X25519MLKEM768"},
				Warnings: []string{"spec.tlsSecurityProfile.custom.curves is the older spelling of groups (openshift/api#2583); it is read as groups, but write groups instead"}},
		},
		{
			name: "curves and groups both set and equal: read, with the warning",
			spec: `tlsSecurityProfile: {type: Custom, custom: {minTLSVersion: VersionTLS13, curves: [X25519], groups: [X25519]}}`,
			want: Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS13, Groups: []string{"X25519"},
				Warnings: []string{"spec.tlsSecurityProfile.custom.curves is the older spelling of groups (openshift/api#2583); it is read as groups, but write groups instead"}},
		},
		{
			name:     "curves and groups differ",
			spec:     `tlsSecurityProfile: {type: Custom, custom: {minTLSVersion: VersionTLS13, curves: [X25519], groups: [secp256r1]}}`,
			errField: "spec.tlsSecurityProfile.custom", errHas: "set only groups",
		},
		{
			name:     "Custom without custom",
			spec:     `tlsSecurityProfile: {type: Custom}`,
			errField: "spec.tlsSecurityProfile.custom", errHas: "is missing but type is Custom",
		},
		{
			name: "an unknown type is passed on for Resolve to refuse",
			spec: `tlsSecurityProfile: {type: Paranoid}`,
			want: Spec{Type: "Paranoid"},
		},
		{name: "legacy adherence", spec: `tlsAdherence: LegacyAdheringComponentsOnly`, want: Spec{Type: ProfileIntermediate}, adherence: AdherenceLegacy},
		{name: "strict adherence", spec: `{tlsAdherence: StrictAllComponents, tlsSecurityProfile: {type: Modern}}`, want: Spec{Type: ProfileModern}, adherence: AdherenceStrict},
		{name: "unknown adherence is kept for Resolve to treat as strict", spec: `tlsAdherence: Everything`, want: Spec{Type: ProfileIntermediate}, adherence: "Everything"},
		{name: "adherence not a string", spec: `tlsAdherence: [x]`, errField: "spec.tlsAdherence", errHas: "want a string"},
		{name: "profile not an object", spec: `tlsSecurityProfile: Modern`, errField: "spec.tlsSecurityProfile", errHas: "want an object"},
		{name: "ciphers not a list", spec: `tlsSecurityProfile: {type: Custom, custom: {ciphers: AES128-SHA}}`, errField: "spec.tlsSecurityProfile.custom.ciphers", errHas: "want a list of strings"},
		{name: "a cipher not a string", spec: `tlsSecurityProfile: {type: Custom, custom: {ciphers: [AES128-SHA, 7]}}`, errField: "spec.tlsSecurityProfile.custom.ciphers[1]", errHas: "is float64, want a string"},
		{name: "minTLSVersion not a string", spec: `tlsSecurityProfile: {type: Custom, custom: {minTLSVersion: 12}}`, errField: "spec.tlsSecurityProfile.custom.minTLSVersion", errHas: "want a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, adherence, err := FromAPIServerSpec(apiServerSpec(t, tt.spec))
			if tt.errField != "" {
				var fe *field.Error
				if !errors.As(err, &fe) || fe.Field != tt.errField || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want a *field.Error at %s containing %q", err, tt.errField, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Source = SourceCluster
			if !reflect.DeepEqual(spec, tt.want) {
				t.Errorf("spec = %#v, want %#v", spec, tt.want)
			}
			if adherence != tt.adherence {
				t.Errorf("adherence = %q, want %q", adherence, tt.adherence)
			}
		})
	}
}

func TestFromAPIServer(t *testing.T) {
	intermediate := Spec{Type: ProfileIntermediate, Source: SourceCluster}
	for name, obj := range map[string]*unstructured.Unstructured{
		"no object":         nil,
		"object, no spec":   {Object: map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "APIServer"}},
		"object, null spec": {Object: map[string]any{"spec": nil}},
	} {
		spec, adherence, err := FromAPIServer(obj)
		if err != nil || !reflect.DeepEqual(spec, intermediate) || adherence != AdherenceNoOpinion {
			t.Errorf("%s: %+v %q %v, want Intermediate from the cluster", name, spec, adherence, err)
		}
	}
	if _, _, err := FromAPIServer(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "cluster"}, "spec": "x"}}); err == nil || !strings.Contains(err.Error(), "APIServer cluster: spec is string") {
		t.Errorf("a non-object spec: err = %v", err)
	}
}

// An APIServer object as a cluster would hold it, read and resolved.
func TestAPIServerObjectResolves(t *testing.T) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: config.openshift.io/v1
kind: APIServer
metadata: {name: cluster}
spec:
  audit: {profile: Default}
  tlsAdherence: StrictAllComponents
  tlsSecurityProfile:
    type: Custom
    custom:
      minTLSVersion: VersionTLS12
      ciphers: [TLS_AES_128_GCM_SHA256, ECDHE-ECDSA-AES256-GCM-SHA384]
      groups: [secp384r1]
`), &obj.Object); err != nil {
		t.Fatal(err)
	}
	spec, adherence, err := FromAPIServer(obj)
	if err != nil {
		t.Fatal(err)
	}
	r, warnings, err := Resolve(spec, adherence)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Document
	if d.Source != SourceCluster || !slices.Equal(d.CipherSuites, []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}) || !slices.Equal(d.CurvePreferences, []string{"secp384r1"}) || !slices.Equal(d.Groups, []string{"secp384r1"}) {
		t.Errorf("document = %+v", d)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "spec.tlsSecurityProfile.custom.ciphers names only some TLS 1.3 suites") {
		t.Errorf("warnings = %q", warnings)
	}
}

func TestAPIServerCRD(t *testing.T) {
	crd := APIServerCRD()
	if crd.GetAPIVersion() != "apiextensions.k8s.io/v1" || crd.GetKind() != "CustomResourceDefinition" || crd.GetName() != APIServerCRDName || APIServerCRDName != "apiservers.config.openshift.io" {
		t.Fatalf("CRD is %s %s %s", crd.GetAPIVersion(), crd.GetKind(), crd.GetName())
	}
	obj := crd.Object
	get := func(path ...string) any {
		t.Helper()
		v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
		if err != nil || !found {
			t.Fatalf("CRD has no %s (%v)", strings.Join(path, "."), err)
		}
		return v
	}
	if get("spec", "group") != APIServerGroup || get("spec", "scope") != "Cluster" {
		t.Errorf("group %v scope %v", get("spec", "group"), get("spec", "scope"))
	}
	names := get("spec", "names").(map[string]any)
	if want := map[string]any{"kind": APIServerKind, "listKind": APIServerListKind, "plural": APIServerResource, "singular": "apiserver"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
	if gvr := APIServerGVR(); gvr.Group != APIServerGroup || gvr.Version != "v1" || gvr.Resource != "apiservers" {
		t.Errorf("GVR = %v", gvr)
	}
	versions := get("spec", "versions").([]any)
	if len(versions) != 1 {
		t.Fatalf("%d versions, want 1", len(versions))
	}
	v := versions[0].(map[string]any)
	if v["name"] != APIServerVersion || v["served"] != true || v["storage"] != true {
		t.Errorf("version %v", v)
	}
	obj = v
	root := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties"}
	at := func(path ...string) []string { return slices.Concat(root, path) }
	enum := func(path ...string) []string {
		t.Helper()
		var out []string
		for _, e := range get(append(path, "enum")...).([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	profile := at("tlsSecurityProfile", "properties")
	if got := enum(slices.Concat(profile, []string{"type"})...); !slices.Equal(got, ValidTypes()) {
		t.Errorf("type enum = %q, want %q", got, ValidTypes())
	}
	for _, member := range []string{"old", "intermediate", "modern", "custom"} {
		if get(slices.Concat(profile, []string{member, "type"})...) != "object" || get(slices.Concat(profile, []string{member, "nullable"})...) != true {
			t.Errorf("%s is not a nullable object", member)
		}
	}
	custom := slices.Concat(profile, []string{"custom", "properties"})
	if got := enum(slices.Concat(custom, []string{"minTLSVersion"})...); !slices.Equal(got, ValidTLSVersions()) {
		t.Errorf("minTLSVersion enum = %q", got)
	}
	if get(slices.Concat(custom, []string{"ciphers", "items", "type"})...) != "string" {
		t.Error("ciphers are not strings")
	}
	canonical := ValidGroups()
	for _, field := range []string{"curves", "groups"} {
		got := enum(slices.Concat(custom, []string{field, "items"})...)
		if !sameSet(got, canonical) {
			t.Errorf("%s enum = %q, want the group names %q", field, got, canonical)
		}
		if get(slices.Concat(custom, []string{field, "x-kubernetes-list-type"})...) != "set" {
			t.Errorf("%s is not a set", field)
		}
	}
	if got := enum(at("tlsAdherence")...); !slices.Equal(got, ValidAdherences()) {
		t.Errorf("tlsAdherence enum = %q", got)
	}
	if get("schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-preserve-unknown-fields") != true {
		t.Error("spec does not preserve the APIServer fields we do not model")
	}
	if _, ok := get("subresources", "status").(map[string]any); !ok {
		t.Error("no status subresource")
	}

	// A fresh object each call.
	crd.SetName("changed")
	if APIServerCRD().GetName() != APIServerCRDName {
		t.Error("APIServerCRD returns a shared object")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
