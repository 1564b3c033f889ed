package testenv

// The node's network: one bridge in a network namespace of the test bed's
// own, with private ranges that exist nowhere else on the machine.
const (
	NodeName            = "kmsh-node"
	BridgeName          = "kmsh0"
	BridgeAddress       = "10.244.0.1" // the node's InternalIP and the API server's advertised address
	PodCIDR             = "10.244.0.0/24"
	ServiceCIDR         = "10.96.0.0/16"
	KubernetesServiceIP = "10.96.0.1"
	// SandboxImage is the pause image the node's containerd uses for pod
	// sandboxes, built and imported by the test bed.
	SandboxImage = "kmshealth.test/pause:1"
	// TLSServerImage is a TLS server configured only from a mounted
	// profile.json (internal/testenv/tlsserver), for the TLS profile's pod
	// tests; imported like the others.
	TLSServerImage = "kmshealth.test/tls-server:1"
	// HTTPUpstreamImage is a plain HTTP server listening on 127.0.0.1:8080
	// only (internal/testenv/httpupstream), the workload behind the rbac
	// proxy sidecar in the pod tests. Its own `-probe` flag is its exec
	// readiness probe.
	HTTPUpstreamImage = "kmshealth.test/http-upstream:1"
	// The node also holds rbacproxy.DefaultImage: the kube-rbac-proxy
	// binary of tools/install.sh packaged under the release's name, so the
	// sidecar's default image is the one the pod tests run.
)
