package reconciler

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// TestSchemeKnowsEverySubject: the Manager's scheme, which the Event
// recorder reads an object's kind from, knows every kind a pattern's
// Subject returns; an Event about a kind it did not know would be dropped.
func TestSchemeKnowsEverySubject(t *testing.T) {
	s := scheme()
	for _, tc := range []struct {
		obj  runtime.Object
		want schema.GroupVersionKind
	}{
		{&apiregv1.APIService{}, apiregv1.SchemeGroupVersion.WithKind("APIService")},
		{&corev1.ConfigMap{}, corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{&appsv1.Deployment{}, appsv1.SchemeGroupVersion.WithKind("Deployment")},
		{&appsv1.StatefulSet{}, appsv1.SchemeGroupVersion.WithKind("StatefulSet")},
		{&appsv1.DaemonSet{}, appsv1.SchemeGroupVersion.WithKind("DaemonSet")},
		{&admissionregistrationv1.ValidatingWebhookConfiguration{}, admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration")},
		{&admissionregistrationv1.MutatingWebhookConfiguration{}, admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration")},
		{&apiextensionsv1.CustomResourceDefinition{}, apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")},
	} {
		t.Run(tc.want.Kind, func(t *testing.T) {
			gvks, _, err := s.ObjectKinds(tc.obj)
			if err != nil {
				t.Fatalf("scheme(): %v", err)
			}
			if len(gvks) != 1 || gvks[0] != tc.want {
				t.Errorf("scheme() kinds of a %T = %v, want [%v]", tc.obj, gvks, tc.want)
			}
		})
	}
}
