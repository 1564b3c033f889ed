package kube

import "testing"

func TestResourceOf(t *testing.T) {
	tests := map[string]string{
		"/api/v1/namespaces/default/secrets/x":                       "secrets",
		"/api/v1/namespaces/default/configmaps":                      "configmaps",
		"/api/v1/namespaces/default":                                 "namespaces",
		"/api/v1/events":                                             "events",
		"/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com": "apiservices",
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/l":        "leases",
		"/apis/kmshealth.io/v1alpha1/kmshealths/cluster/status":      "kmshealths",
		"/healthz": "other",
	}
	for path, want := range tests {
		if got := ResourceOf(path); got != want {
			t.Errorf("ResourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
