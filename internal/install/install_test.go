package install

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

func testOwner() Owner {
	return Owner{App: "kmshealth-test", NamespaceLabel: "kmshealth.io/test-namespace", Namespace: "ns", Name: "inst"}
}

func TestOwnerRecognizesItsObjects(t *testing.T) {
	o := testOwner()
	other := o
	other.Name = "other"
	otherMode := o
	otherMode.App = "kmshealth-other"
	applied := []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}}
	for _, tc := range []struct {
		name          string
		obj           metav1.ObjectMeta
		owns, labeled bool
	}{
		{"its labels", metav1.ObjectMeta{Labels: o.Labels("x")}, true, true},
		{"another installation's labels", metav1.ObjectMeta{Labels: other.Labels("x"), ManagedFields: applied}, false, false},
		{"labels removed, applied by kmshealth", metav1.ObjectMeta{ManagedFields: applied}, true, false},
		{"another mode's labels, applied by kmshealth", metav1.ObjectMeta{Labels: otherMode.Labels("x"), ManagedFields: applied}, true, false},
		{"someone else's", metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := o.Owns(&tc.obj); got != tc.owns {
				t.Errorf("Owns = %v, want %v", got, tc.owns)
			}
			if got := o.Labelled(&tc.obj); got != tc.labeled {
				t.Errorf("Labelled = %v, want %v", got, tc.labeled)
			}
			err := o.CheckOwned("ServiceAccount", "ns/inst", &tc.obj)
			if tc.owns != (err == nil) || (err != nil && !errors.Is(err, ErrForeignObject)) {
				t.Errorf("CheckOwned = %v", err)
			}
		})
	}
	if err := o.CheckOwned("ServiceAccount", "ns/inst", nil); err != nil {
		t.Errorf("CheckOwned of a missing object = %v", err)
	}
	if got, want := o.Selector(), "app.kubernetes.io/managed-by=kmshealth,app.kubernetes.io/name=kmshealth-test,app.kubernetes.io/instance=inst,kmshealth.io/test-namespace=ns"; got != want {
		t.Errorf("Selector = %q, want %q", got, want)
	}
}

func TestResources(t *testing.T) {
	r := Resources{CPURequest: "10m", MemoryRequest: "0.5Gi", MemoryLimit: "1Gi"}
	if errs := r.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	ac := r.ResourceRequirements()
	live := corev1.ResourceRequirements{Requests: *ac.Requests, Limits: *ac.Limits}
	if got, want := ResourcesOf(live), (Resources{CPURequest: "10m", MemoryRequest: "512Mi", MemoryLimit: "1Gi"}); got != want {
		t.Errorf("ResourcesOf = %+v, want %+v (canonical spelling)", got, want)
	}
	if (Resources{}).ResourceRequirements() != nil {
		t.Error("no quantities: want no requirements at all")
	}
	if only := (Resources{MemoryLimit: "1Gi"}).ResourceRequirements(); only.Requests != nil || only.Limits == nil {
		t.Errorf("a memory limit alone: %+v, want limits and no requests", only)
	}
	for _, tc := range []struct {
		r    Resources
		want string
	}{
		{Resources{CPURequest: "ten"}, `cpu_request: "ten" is not a quantity`},
		{Resources{MemoryLimit: "-1Mi"}, `memory_limit: "-1Mi": must not be negative`},
		{Resources{MemoryRequest: "1Gi", MemoryLimit: "128Mi"}, "memory_request 1Gi is above memory_limit 128Mi"},
	} {
		if err := errors.Join(tc.r.Validate()...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}

func TestParseID(t *testing.T) {
	ns, name, err := ParseID("kube-system/inst", "kube-system/inst", validation.IsDNS1123Label)
	if ns != "kube-system" || name != "inst" || err != nil {
		t.Errorf("ParseID: %q %q %v", ns, name, err)
	}
	for id, want := range map[string]string{
		"inst":           "want <namespace>/<name>, e.g. ns/example",
		"a/b/c":          "want <namespace>/<name>",
		"Bad_NS/inst":    "namespace: ",
		"ns/Not_A_Label": "name: ",
	} {
		if _, _, err := ParseID(id, "ns/example", validation.IsDNS1123Label); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseID(%q): %v, want %q", id, err, want)
		}
	}
}

func TestDrift(t *testing.T) {
	o := testOwner()
	sa := func(name string, labels map[string]string, manager string) *unstructured.Unstructured {
		return liveObject("v1", "ServiceAccount", name, labels, manager)
	}
	id := func(name string) ID { return ID{Kind: ServiceAccounts, Namespace: "ns", Name: name} }
	body := func(name string) any { return corev1ac.ServiceAccount(name, "ns").WithLabels(o.Labels("x")) }
	d := Declaration{Owner: o, Namespace: "ns", Objects: []Object{
		{ID: id("missing"), Body: body("missing")},
		{ID: id("foreign"), Body: body("foreign")},
		{ID: id("changed"), Body: body("changed")},
		{ID: id("in-sync"), Body: body("in-sync")},
		{ID: id("by-name-only")},
	}, Released: []Released{{ID: ID{Kind: Namespaces, Name: "ns"}, Body: corev1ac.Namespace("ns")}},
		Sweep: []Kind{ServiceAccounts}}
	changedLabels := o.Labels("x")
	changedLabels[ComponentLabel] = "edited"
	l := &Live{owner: o, objects: map[ID]*unstructured.Unstructured{
		id("missing"):                  nil,
		id("foreign"):                  sa("foreign", nil, "kubectl"),
		id("changed"):                  sa("changed", changedLabels, FieldManager),
		id("in-sync"):                  sa("in-sync", o.Labels("x"), FieldManager),
		{Kind: Namespaces, Name: "ns"}: {Object: map[string]any{"metadata": map[string]any{"name": "ns", "labels": toAny(o.Labels("x"))}}},
	}}
	leftover := sa("leftover", o.Labels("x"), FieldManager)
	l.swept = []*unstructured.Unstructured{l.objects[id("in-sync")], leftover}
	l.sweptIDs = []ID{id("in-sync"), id("leftover")}
	want := []string{
		"ServiceAccount ns/missing is missing",
		"ServiceAccount ns/foreign is not managed by kmshealth",
		"ServiceAccount ns/changed was changed",
		"Namespace ns is still labelled as the installation's",
		"ServiceAccount ns/leftover is left over",
	}
	if got := l.Drift(d); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Drift =\n%q\nwant\n%q", got, want)
	}
	if !l.Exists(d) {
		t.Error("Exists = false with objects of the installation left")
	}
}

func labelFields(labels map[string]string) string {
	var parts []string
	for k := range labels {
		parts = append(parts, fmt.Sprintf("%q:{}", "f:"+k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestContains(t *testing.T) {
	live := map[string]any{"spec": map[string]any{
		"names":    map[string]any{"kind": "KMSHealth", "plural": "kmshealths", "shortNames": []any{"kh"}},
		"versions": []any{map[string]any{"name": "v1beta1"}, map[string]any{"name": "v1alpha1", "served": true, "maxLength": int64(316)}},
		"enum":     []any{"True", "False"},
	}}
	for _, tt := range []struct {
		want any
		ok   bool
	}{
		{map[string]any{"spec": map[string]any{"names": map[string]any{"kind": "KMSHealth"}}}, true},
		{map[string]any{"spec": map[string]any{"versions": []any{map[string]any{"name": "v1alpha1", "maxLength": 316.0}}}}, true},
		{map[string]any{"spec": map[string]any{"versions": []any{map[string]any{"name": "v1alpha1", "served": false}}}}, false},
		{map[string]any{"spec": map[string]any{"enum": []any{"True", "False"}}}, true},
		{map[string]any{"spec": map[string]any{"enum": []any{"True"}}}, false}, // lists of scalars are compared whole
		{map[string]any{"spec": map[string]any{"scope": "Cluster"}}, false},
	} {
		if got := contains(live, tt.want); got != tt.ok {
			t.Errorf("contains(live, %v) = %v, want %v", tt.want, got, tt.ok)
		}
	}
}
