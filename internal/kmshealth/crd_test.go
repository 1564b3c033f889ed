package kmshealth

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func nested[T any](t *testing.T, obj map[string]any, path ...string) T {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found {
		t.Fatalf("CRD has no %s (err %v)", strings.Join(path, "."), err)
	}
	x, ok := v.(T)
	if !ok {
		t.Fatalf("CRD %s is %T, want %T", strings.Join(path, "."), v, x)
	}
	return x
}

func TestCRD(t *testing.T) {
	crd := CRD()
	obj := crd.Object
	if crd.GetAPIVersion() != "apiextensions.k8s.io/v1" || crd.GetKind() != "CustomResourceDefinition" {
		t.Errorf("CRD is %s %s", crd.GetAPIVersion(), crd.GetKind())
	}
	if crd.GetName() != "kmshealths.kmshealth.io" || crd.GetName() != CRDName {
		t.Errorf("name = %q, want kmshealths.kmshealth.io (CRDName %q)", crd.GetName(), CRDName)
	}
	if got := nested[string](t, obj, "spec", "group"); got != Group {
		t.Errorf("group = %q, want %q", got, Group)
	}
	if got := nested[string](t, obj, "spec", "scope"); got != "Cluster" {
		t.Errorf("scope = %q, want Cluster", got)
	}
	names := nested[map[string]any](t, obj, "spec", "names")
	if want := map[string]any{"kind": Kind, "listKind": ListKind, "plural": Resource, "singular": Singular, "shortNames": []any{"kmsh"}}; !reflect.DeepEqual(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}

	versions := nested[[]any](t, obj, "spec", "versions")
	if len(versions) != 1 {
		t.Fatalf("%d versions, want 1", len(versions))
	}
	v := versions[0].(map[string]any)
	if v["name"] != Version || v["served"] != true || v["storage"] != true {
		t.Errorf("version %v %v %v, want %s served and stored", v["name"], v["served"], v["storage"], Version)
	}
	if status := nested[map[string]any](t, v, "subresources", "status"); len(status) != 0 {
		t.Errorf("subresources.status = %v, want {}", status)
	}

	conds := nested[map[string]any](t, v, "schema", "openAPIV3Schema", "properties", "status", "properties", "conditions")
	if conds["type"] != "array" || conds["x-kubernetes-list-type"] != "map" {
		t.Errorf("conditions type %v list-type %v, want an array listType=map", conds["type"], conds["x-kubernetes-list-type"])
	}
	if keys := conds["x-kubernetes-list-map-keys"]; !reflect.DeepEqual(keys, []any{"type"}) {
		t.Errorf("conditions list-map-keys = %v, want [type]", keys)
	}
	required := nested[[]any](t, conds, "items", "required")
	for _, f := range []string{"type", "status", "lastTransitionTime", "reason", "message"} {
		found := false
		for _, r := range required {
			found = found || r == f
		}
		if !found {
			t.Errorf("condition field %s is not required (required: %v)", f, required)
		}
	}

	if _, err := json.Marshal(obj); err != nil {
		t.Errorf("CRD does not encode as JSON: %v", err)
	}
}

// TestCRDAcceptsOurConditions checks what the reporter and the aggregator
// write against the CRD's own condition schema, so neither is rejected by
// the API server.
func TestCRDAcceptsOurConditions(t *testing.T) {
	v := nested[[]any](t, CRD().Object, "spec", "versions")[0].(map[string]any)
	item := nested[map[string]any](t, v, "schema", "openAPIV3Schema", "properties", "status", "properties", "conditions", "items", "properties")
	field := func(name string) map[string]any { return item[name].(map[string]any) }

	typePattern := regexp.MustCompile(field("type")["pattern"].(string))
	typeMax := int(field("type")["maxLength"].(float64))
	longest := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) // 253
	if err := ValidateNodeName(longest); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{ReporterConditionType("cp-1"), ReporterConditionType("ip-10-0-0-1.ec2.internal"), ReporterConditionType(longest), DegradedCondition} {
		if !typePattern.MatchString(typ) || len(typ) > typeMax {
			t.Errorf("condition type %q (%d chars) fails the CRD's pattern or maxLength %d", typ, len(typ), typeMax)
		}
	}

	reasons := field("reason")["enum"].([]any)
	reasonOK := func(r string) bool { return slices.Contains(reasons, any(r)) }
	for _, r := range []string{ReasonAsExpected, ReasonUnhealthy, ReasonError, ReasonStale, ReasonMissing, ReasonInvalid} {
		if !reasonOK(r) {
			t.Errorf("reason %q is not in the CRD's enum %v", r, reasons)
		}
	}
	for _, typ := range []string{"Ready", "KMSHealthReporter_", "KMSHealthReporter_Node_1", "kmshealth.io/KMSPluginsDegraded"} {
		if typePattern.MatchString(typ) {
			t.Errorf("condition type %q passes the CRD's pattern; only kmshealth's types may", typ)
		}
	}

	if got := field("status")["enum"]; !reflect.DeepEqual(got, []any{"True", "False", "Unknown"}) {
		t.Errorf("status enum = %v", got)
	}
	if got := int(field("message")["maxLength"].(float64)); got < maxConditionMessage || got < MaxMessageBytes {
		t.Errorf("message maxLength %d is under the %d bytes ParseMessage accepts", got, maxConditionMessage)
	}

	c := (&ConditionBuilder{Node: longest}).Build([]Plugin{healthy("1", "k", t0)}, t0.Add(time.Second))
	if !typePattern.MatchString(c.Type) || !reasonOK(c.Reason) {
		t.Errorf("built condition %+v fails the CRD's schema", c)
	}
}

func TestCRDIsAFreshCopy(t *testing.T) {
	a := CRD()
	a.SetName("changed")
	unstructured.RemoveNestedField(a.Object, "spec", "versions")
	b := CRD()
	if b.GetName() != CRDName {
		t.Errorf("changing one CRD() result changed the next: name %q", b.GetName())
	}
	if _, found, _ := unstructured.NestedSlice(b.Object, "spec", "versions"); !found {
		t.Error("changing one CRD() result changed the next: versions gone")
	}
}
