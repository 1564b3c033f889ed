# The CA comes from the Secret cert-manager keeps for the aggregated API's
# serving certificate: when cert-manager rotates it, the next plan shows the
# new fingerprint and the apply carries it to the APIService.
resource "kmshealth_apiservice_cabundle" "metrics" {
  apiservice_name = "v1beta1.metrics.k8s.io"

  source {
    kind      = "Secret"
    namespace = "kube-system"
    name      = "metrics-server-tls"
    key       = "ca.crt"
  }
}

# Inline PEM: kept in the ConfigMap kube-system/kmshealth-cabundle-<name>,
# which this resource owns and deletes on destroy. packaging-ca.pem beside
# this file is a throwaway example CA certificate (its key was never kept).
resource "kmshealth_apiservice_cabundle" "packages" {
  apiservice_name = "v1alpha1.data.packaging.carvel.dev"
  ca_bundle       = file("${path.module}/packaging-ca.pem")
}

# Alert before the CA expires.
output "metrics_ca_not_after" {
  value = kmshealth_apiservice_cabundle.metrics.not_after
}
