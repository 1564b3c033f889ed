package install

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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
	var d Drift
	extract := func(v any) func() (any, error) { return func() (any, error) { return v, nil } }
	d.Check("A", false, false, nil, 1)
	d.Check("B", true, false, nil, 1)
	d.Check("C", true, true, extract(map[string]int{"x": 1}), map[string]int{"x": 2})
	d.Check("D", true, true, extract(map[string]int{"x": 1}), map[string]int{"x": 1})
	d.Check("E", true, true, func() (any, error) { return nil, errors.New("cannot extract") }, 1)
	want := []string{"A is missing", "B is not managed by kmshealth", "C was changed", "E was changed"}
	if strings.Join(d, "|") != strings.Join(want, "|") {
		t.Errorf("Drift = %q, want %q", d, want)
	}
}
