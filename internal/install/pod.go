package install

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// What every installed pod mounts instead of the automounted token.
const (
	// TokenExpirationSeconds bounds the projected ServiceAccount token; the
	// kubelet renews it at 80% of its life and client-go rereads the file.
	TokenExpirationSeconds = 3600
	// ServiceAccountMountPath is where in-cluster configuration looks for
	// the token, the CA bundle and the namespace.
	ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCAConfigMap is published in every namespace by the controller
	// manager.
	RootCAConfigMap = "kube-root-ca.crt"
	// TokenVolumeName names the projected volume.
	TokenVolumeName = "kube-api-access"
)

// TokenVolume is what automountServiceAccountToken would mount, with a
// token that expires after TokenExpirationSeconds: in-cluster
// configuration finds token, ca.crt and namespace where it expects them.
// Pods that mount it set automountServiceAccountToken: false.
func TokenVolume() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(TokenVolumeName).WithProjected(corev1ac.ProjectedVolumeSource().WithSources(
		corev1ac.VolumeProjection().WithServiceAccountToken(corev1ac.ServiceAccountTokenProjection().
			WithPath("token").
			WithExpirationSeconds(TokenExpirationSeconds)),
		corev1ac.VolumeProjection().WithConfigMap(corev1ac.ConfigMapProjection().
			WithName(RootCAConfigMap).
			WithItems(corev1ac.KeyToPath().WithKey("ca.crt").WithPath("ca.crt"))),
		corev1ac.VolumeProjection().WithDownwardAPI(corev1ac.DownwardAPIProjection().
			WithItems(corev1ac.DownwardAPIVolumeFile().WithPath("namespace").WithFieldRef(FieldRef("metadata.namespace")))),
	))
}

// TokenMount mounts TokenVolume read-only where in-cluster configuration
// looks.
func TokenMount() *corev1ac.VolumeMountApplyConfiguration {
	return corev1ac.VolumeMount().WithName(TokenVolumeName).WithMountPath(ServiceAccountMountPath).WithReadOnly(true)
}

// FieldRef is a downward-API field selector. fieldRef is atomic: spell out
// the defaulted apiVersion, or the extracted field would differ from what
// was applied.
func FieldRef(path string) *corev1ac.ObjectFieldSelectorApplyConfiguration {
	return corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath(path)
}
