package install

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// liveObject is a live object of kind in namespace ns with labels, whose
// labels manager applied (none when manager is empty).
func liveObject(apiVersion, kind, name string, labels map[string]string, manager string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetLabels(labels)
	if manager != "" {
		// What the API server records for an apply of the labels.
		fields := `{"f:metadata":{"f:labels":{` + labelFields(labels) + `}}}`
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: apiVersion, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}})
	}
	return u
}

func networkPolicy(name string, labels map[string]string, manager string) *unstructured.Unstructured {
	return liveObject("networking.k8s.io/v1", "NetworkPolicy", name, labels, manager)
}

// TestDeclarationOurs: an installation told apart by Ours (a pattern's
// objects for one target) owns exactly what Ours accepts, whatever the
// installation labels say; Compare speaks for a changed object; an
// Unwanted object is drift only while it is the installation's; and a
// NetworkPolicy is compared by the fields FieldManager owns.
func TestDeclarationOurs(t *testing.T) {
	mark := map[string]string{"example.com/for": "web"}
	ours := func(obj metav1.Object) bool { return obj.GetLabels()["example.com/for"] == "web" }
	id := func(name string) ID { return ID{Kind: NetworkPolicies, Namespace: "ns", Name: name} }
	body := func(name string) any { return networkingv1ac.NetworkPolicy(name, "ns").WithLabels(mark) }
	d := Declaration{Ours: ours, Marks: "example.com/for=web", Objects: []Object{
		{ID: id("in-sync"), Body: body("in-sync")},
		{ID: id("taken-over"), Body: body("taken-over")},
		{ID: id("foreign"), Body: body("foreign")},
		{ID: id("compared"), Body: body("compared"), Compare: func(*unstructured.Unstructured) []string { return []string{"compared: its spec was changed"} }},
		{ID: id("unwanted"), Unwanted: true},
		{ID: id("unwanted-foreign"), Unwanted: true},
		{ID: id("unwanted-gone"), Unwanted: true},
	}}
	l := LiveOf(d,
		networkPolicy("in-sync", mark, FieldManager),
		networkPolicy("taken-over", mark, "kubectl"),
		// The installers' labels do not make it ours: Ours decides.
		networkPolicy("foreign", testOwner().Labels("x"), FieldManager),
		networkPolicy("compared", mark, FieldManager),
		networkPolicy("unwanted", mark, FieldManager),
		networkPolicy("unwanted-foreign", nil, "kubectl"),
	)
	want := []string{
		"NetworkPolicy ns/taken-over was changed",
		"NetworkPolicy ns/foreign is not managed by kmshealth",
		"compared: its spec was changed",
		"NetworkPolicy ns/unwanted exists, but no NetworkPolicy is wanted",
	}
	if got := l.Drift(d); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Drift =\n%q\nwant\n%q", got, want)
	}
	if got := l.selector(); got != "example.com/for=web" {
		t.Errorf("the marks a refusal names = %q, want Declaration.Marks", got)
	}
}

func TestRequestError(t *testing.T) {
	cause := errors.New("forbidden")
	id := ID{Kind: ConfigMaps, Namespace: "ns", Name: "cm"}
	for _, tc := range []struct {
		verb, want string
	}{
		{"get", "read ConfigMap ns/cm: forbidden"},
		{"patch", `server-side apply as "kmshealth": forbidden`},
		{"delete", "delete ConfigMap ns/cm: forbidden"},
	} {
		var err error = &PartialError{Failed: id, Err: &RequestError{Verb: tc.verb, ID: id, Err: cause}}
		var re *RequestError
		if !errors.As(err, &re) || re.Verb != tc.verb || re.ID != id || !errors.Is(err, cause) {
			t.Errorf("%s: errors.As/Is through PartialError: %#v", tc.verb, err)
		}
		if re.Error() != tc.want {
			t.Errorf("%s: %q, want %q", tc.verb, re.Error(), tc.want)
		}
	}
}

func TestWorkloadID(t *testing.T) {
	for kind, want := range map[kube.WorkloadKind]Kind{
		kube.KindDeployment: Deployments, kube.KindStatefulSet: StatefulSets, kube.KindDaemonSet: DaemonSets,
	} {
		id, ok := WorkloadID(kube.Workload{Kind: kind, Namespace: "ns", Name: "web"})
		if !ok || id != (ID{Kind: want, Namespace: "ns", Name: "web"}) {
			t.Errorf("WorkloadID(%s) = %v, %v", kind, id, ok)
		}
	}
	if _, ok := WorkloadID(kube.Workload{Kind: "CronJob", Namespace: "ns", Name: "web"}); ok {
		t.Error("WorkloadID of a CronJob: ok, want not a workload kind")
	}
}
