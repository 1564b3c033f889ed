# The KMS health reporter on every control-plane node, with the defaults:
# it probes every kms-<keyID>.sock in /var/run/kmsplugin every 30s and
# writes one condition per node on the KMSHealth object "cluster", which it
# creates together with its CRD. kube-system allows the hostPath volume of
# the socket directory; namespaces enforcing the baseline or restricted Pod
# Security Standard do not.
resource "kmshealth_reporter" "this" {
  namespace = "kube-system"
}

# The same health on an OpenShift operator CR instead, with the sockets
# named as in the API server's EncryptionConfiguration. The reporters may
# patch the status of exactly this object (besides the token and access
# reviews that guard their /metrics).
resource "kmshealth_reporter" "openshift" {
  namespace   = "openshift-kube-apiserver"
  name        = "kmshealth-reporter-operator"
  target      = "operator.openshift.io/v1/kubeapiservers/cluster"
  install_crd = false

  kms_sockets = [
    "unix:///var/run/kmsplugin/kms-1.sock",
    "unix:///var/run/kmsplugin/kms-2.sock",
  ]

  probe_interval = "1m"
  node_selector  = { "node-role.kubernetes.io/master" = "" }
  tolerations = [{
    key      = "node-role.kubernetes.io/master"
    operator = "Exists"
    effect   = "NoSchedule"
  }]
}

