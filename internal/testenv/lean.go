package testenv

import "strings"

// A control plane that a test binary starts (testing.Testing) is lean: a
// make test runs about forty of them, two to nine at a time beside the
// CLIs on two cores, and most of their time they wait for the next
// request. The bench and the demo start the control plane as a cluster
// runs it (every watch cache, every core), so that their figures and
// behaviour are a real API server's. ARCHITECTURE.md, "The test bed", has the
// measurements.
//
// Lean means:
//   - kube-apiserver keeps a watch cache only for the encrypted resources
//     (Secrets and ConfigMaps: the KMS tests read that its watch caches
//     decrypted every stored object, kmshealth.KeyUsage) and for custom
//     resources (the flag does not reach them). Every watch cache wakes
//     each second to send bookmarks: idle, the watch caches were over half
//     of kube-apiserver's CPU. Without one, a resource's watches are
//     etcd's, with no bookmarks; lists are read from etcd.
//   - kube-apiserver does not poll etcd for object counts and database
//     size (metrics no test reads).
//   - etcd, kube-apiserver and the node's components run with GOMAXPROCS=1:
//     on two cores shared by several control planes and the CLIs, a second
//     processor per process bought wake-ups, not speed.

// uncachedResources are the resources (resource[.group], as
// --watch-cache-sizes names them) that kube-apiserver v1.35.4 keeps a
// watch cache of, less secrets and configmaps: the resources of its
// apiserver_watch_cache_initializations_total metric. A resource a newer
// kube-apiserver adds keeps its watch cache; a name it no longer serves
// is ignored.
var uncachedResources = []string{
	"apiservices.apiregistration.k8s.io", "certificatesigningrequests.certificates.k8s.io",
	"clusterrolebindings.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io",
	"controllerrevisions.apps", "cronjobs.batch", "csidrivers.storage.k8s.io", "csinodes.storage.k8s.io",
	"csistoragecapacities.storage.k8s.io", "customresourcedefinitions.apiextensions.k8s.io",
	"daemonsets.apps", "deployments.apps", "deviceclasses.resource.k8s.io", "endpoints",
	"endpointslices.discovery.k8s.io", "flowschemas.flowcontrol.apiserver.k8s.io",
	"horizontalpodautoscalers.autoscaling", "ingressclasses.networking.k8s.io",
	"ingresses.networking.k8s.io", "ipaddresses.networking.k8s.io", "jobs.batch",
	"leases.coordination.k8s.io", "limitranges",
	"mutatingwebhookconfigurations.admissionregistration.k8s.io", "namespaces",
	"networkpolicies.networking.k8s.io", "nodes", "persistentvolumeclaims", "persistentvolumes",
	"poddisruptionbudgets.policy", "pods", "podtemplates", "priorityclasses.scheduling.k8s.io",
	"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io", "replicasets.apps",
	"replicationcontrollers", "resourceclaims.resource.k8s.io", "resourceclaimtemplates.resource.k8s.io",
	"resourcequotas", "resourceslices.resource.k8s.io", "rolebindings.rbac.authorization.k8s.io",
	"roles.rbac.authorization.k8s.io", "runtimeclasses.node.k8s.io", "serviceaccounts",
	"servicecidrs.networking.k8s.io", "services", "statefulsets.apps", "storageclasses.storage.k8s.io",
	"storageversionmigrations.storagemigration.k8s.io",
	"validatingadmissionpolicies.admissionregistration.k8s.io",
	"validatingadmissionpolicybindings.admissionregistration.k8s.io",
	"validatingwebhookconfigurations.admissionregistration.k8s.io",
	"volumeattachments.storage.k8s.io", "volumeattributesclasses.storage.k8s.io",
}

// leanAPIServerArgs are the kube-apiserver flags of a lean control plane.
func leanAPIServerArgs() []string {
	sizes := make([]string, len(uncachedResources))
	for i, r := range uncachedResources {
		sizes[i] = r + "#0"
	}
	return []string{
		"--watch-cache-sizes=" + strings.Join(sizes, ","),
		"--etcd-count-metric-poll-period=0",
		"--etcd-db-metric-poll-interval=0",
	}
}
