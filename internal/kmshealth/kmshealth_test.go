package kmshealth

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDefaultTarget(t *testing.T) {
	d := DefaultTarget()
	if got, want := d.String(), "kmshealth.io/v1alpha1/kmshealths/cluster"; got != want {
		t.Errorf("DefaultTarget().String() = %q, want %q", got, want)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("DefaultTarget().Validate(): %v", err)
	}
	if !d.IsDefault() {
		t.Error("DefaultTarget().IsDefault() = false")
	}
	if got, want := d.GVR(), (schema.GroupVersionResource{Group: "kmshealth.io", Version: "v1alpha1", Resource: "kmshealths"}); got != want {
		t.Errorf("GVR = %v, want %v", got, want)
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in          string
		want        Target
		wantDefault bool
	}{
		{"kmshealth.io/v1alpha1/kmshealths/cluster", DefaultTarget(), true},
		{"kmshealth.io/v1alpha1/kmshealths/other", Target{Group: "kmshealth.io", Version: "v1alpha1", Resource: "kmshealths", Name: "other"}, true},
		{"kmshealth.io/v1/kmshealths/cluster", Target{Group: "kmshealth.io", Version: "v1", Resource: "kmshealths", Name: "cluster"}, false},
		{"operator.openshift.io/v1/kubeapiservers/cluster", Target{Group: "operator.openshift.io", Version: "v1", Resource: "kubeapiservers", Name: "cluster"}, false},
		{"/v1/namespaces/kube-system", Target{Group: "", Version: "v1", Resource: "namespaces", Name: "kube-system"}, false},
		{"example.com/v1beta1/widgets/a.b-c", Target{Group: "example.com", Version: "v1beta1", Resource: "widgets", Name: "a.b-c"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if err != nil {
				t.Fatalf("ParseTarget: %v", err)
			}
			if got != tt.want {
				t.Errorf("ParseTarget = %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want the input back", got.String())
			}
			if got.IsDefault() != tt.wantDefault {
				t.Errorf("IsDefault() = %v, want %v", got.IsDefault(), tt.wantDefault)
			}
			again, err := ParseTarget(got.String())
			if err != nil || again != got {
				t.Errorf("ParseTarget(String()) = %+v, %v; want %+v", again, err, got)
			}
		})
	}
}

func TestParseTargetRejects(t *testing.T) {
	tests := []struct {
		in   string
		want []string // parts of the error text
	}{
		{"", []string{"group/version/resource/name", DefaultTarget().String()}},
		{"kmshealth.io/v1alpha1/kmshealths", []string{"group/version/resource/name"}},
		{"kmshealths/cluster", []string{"group/version/resource/name"}},
		{"a/kmshealth.io/v1alpha1/kmshealths/cluster", []string{"group/version/resource/name"}},
		{"kmshealth.io/v1alpha1/KMSHealths/cluster", []string{"resource", `"KMSHealths"`}},
		{"kmshealth.io/v1alpha1/kmshealths/", []string{"name", `""`}},
		{"kmshealth.io/v1alpha1/kmshealths/Cluster", []string{"name", `"Cluster"`}},
		{"kmshealth.io/v1alpha1//cluster", []string{"resource", `""`}},
		{"kmshealth.io//kmshealths/cluster", []string{"version", `""`}},
		{"kmshealth.io/V1/kmshealths/cluster", []string{"version", `"V1"`}},
		{"KMSHealth.io/v1alpha1/kmshealths/cluster", []string{"group", `"KMSHealth.io"`}},
		{"kmshealth_io/v1alpha1/kmshealths/cluster", []string{"group", `"kmshealth_io"`}},
		{"kmshealth.io/v1alpha1/kms.healths/cluster", []string{"resource", `"kms.healths"`}},
		// Every bad part is reported, not only the first.
		{"Bad/V1/Res/", []string{`group "Bad"`, `version "V1"`, `resource "Res"`, `name ""`}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if err == nil {
				t.Fatalf("ParseTarget(%q) = %+v, want an error", tt.in, got)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestTargetValidate(t *testing.T) {
	good := DefaultTarget()
	for name, mutate := range map[string]func(*Target){
		"version":  func(t *Target) { t.Version = "" },
		"resource": func(t *Target) { t.Resource = "Kmshealths" },
		"name":     func(t *Target) { t.Name = "" },
		"group":    func(t *Target) { t.Group = "-bad" },
	} {
		bad := good
		mutate(&bad)
		err := bad.Validate()
		if err == nil {
			t.Errorf("%s: Validate(%+v) = nil, want an error", name, bad)
			continue
		}
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), bad.String()) {
			t.Errorf("%s: error %q does not name the part and the target", name, err)
		}
	}
}
