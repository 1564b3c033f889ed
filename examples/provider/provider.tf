# The same connection settings (and KUBE_* environment variables) as the
# hashicorp/kubernetes provider: a block can be copied over.
provider "kmshealth" {
  config_path    = "~/.kube/config"
  config_context = "admin@prod-eu1"
}

# Or without a kubeconfig, e.g. from a cluster resource's outputs:
# provider "kmshealth" {
#   host                   = module.cluster.endpoint
#   cluster_ca_certificate = module.cluster.ca_certificate
#   exec {
#     api_version = "client.authentication.k8s.io/v1"
#     command     = "aws"
#     args        = ["eks", "get-token", "--cluster-name", module.cluster.name]
#   }
# }

# Or, when Terraform runs in a pod (Atlantis, a CI runner), nothing at all:
# the pod's ServiceAccount is used, as with hashicorp/kubernetes.
# provider "kmshealth" {}
