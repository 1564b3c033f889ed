package install

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestAdmissionPoliciesServed reads discovery answers as the API servers
// of each era give them: 1.30+ serves the policies in
// admissionregistration.k8s.io/v1; older ones serve the group version
// with webhooks only, or (very old) not at all; a failed discovery is an
// error, never a silent "not served".
func TestAdmissionPoliciesServed(t *testing.T) {
	gv := "admissionregistration.k8s.io/v1"
	webhooks := metav1.APIResource{Name: "validatingwebhookconfigurations"}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		fail      error
		want      bool
		wantErr   bool
	}{
		{"1.30 and later", []*metav1.APIResourceList{{GroupVersion: gv, APIResources: []metav1.APIResource{webhooks, {Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}}}, nil, true, false},
		{"webhooks only", []*metav1.APIResourceList{{GroupVersion: gv, APIResources: []metav1.APIResource{webhooks}}}, nil, false, false},
		{"group version not served", nil, nil, false, false},
		{"discovery fails", nil, errors.New("connection refused"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tt.resources}}
			if tt.fail != nil {
				d.AddReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.fail })
			}
			got, err := AdmissionPoliciesServed(context.Background(), d)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("AdmissionPoliciesServed = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
