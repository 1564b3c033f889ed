package testenv

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// InstallAPIServerAPI installs OpenShift's config.openshift.io/v1
// APIServer CRD into the API server and creates the object "cluster" with
// spec. remove deletes the CRD (and with it the object) and waits until it
// is gone, so a later test sees a cluster without the API again.
func InstallAPIServerAPI(ctx context.Context, dyn dynamic.Interface, spec map[string]any) (remove func(), err error) {
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, tlsprofile.APIServerCRD(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create the APIServer CRD: %w", err)
	}
	remove = func() {
		ctx := context.Background()
		_ = crds.Delete(ctx, tlsprofile.APIServerCRDName, metav1.DeleteOptions{})
		// The API server offers no watch of its own discovery: poll the CRD.
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := crds.Get(ctx, tlsprofile.APIServerCRDName, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tlsprofile.APIServerGroup + "/" + tlsprofile.APIServerVersion, "kind": tlsprofile.APIServerKind,
		"metadata": map[string]any{"name": tlsprofile.APIServerName}, "spec": spec,
	}}
	// The CRD's API is served a moment after it is Established.
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = dyn.Resource(tlsprofile.APIServerGVR()).Create(ctx, obj, metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		remove()
		return nil, fmt.Errorf("create APIServer %s: %w (last: %w)", tlsprofile.APIServerName, err, last)
	}
	return remove, nil
}

// SetClusterTLSProfile sets spec.tlsSecurityProfile of the APIServer
// object "cluster".
func SetClusterTLSProfile(ctx context.Context, dyn dynamic.Interface, profile map[string]any) error {
	ri := dyn.Resource(tlsprofile.APIServerGVR())
	obj, err := ri.Get(ctx, tlsprofile.APIServerName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(obj.Object, profile, "spec", "tlsSecurityProfile"); err != nil {
		return err
	}
	_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// WaitNoAPIServerAPI waits until discovery no longer lists OpenShift's
// APIServer API, as tlsprofile.IsOpenShift asks it: discovery follows the
// CRD's deletion a moment after the CRD is gone, and a test that runs next
// (or in parallel) must see a cluster that is not OpenShift. The API server
// offers no watch of its own discovery: it polls.
func WaitNoAPIServerAPI(ctx context.Context, disco discovery.DiscoveryInterface) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = tlsprofile.IsOpenShift(disco)
		return last == nil && !ok, nil
	})
	if err != nil {
		return fmt.Errorf("discovery still serves %s/%s APIServer: %w (last: %w)", tlsprofile.APIServerGroup, tlsprofile.APIServerVersion, err, last)
	}
	return nil
}
