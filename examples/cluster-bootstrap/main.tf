# Cluster bootstrap: everything kmshealth hardens, wired together. Applied by
# `make demo` against the local test API server; point kubeconfig_path at
# your own cluster to use it for real.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    kmshealth = {
      source = "kmshealth/kmshealth"
    }
  }
}

provider "kmshealth" {
  config_path = var.kubeconfig_path
}

# The aggregated API's caBundle, from inline PEM or from the Secret/ConfigMap
# that holds its serving CA.
resource "kmshealth_apiservice_cabundle" "this" {
  apiservice_name = var.apiservice_name
  ca_bundle       = var.ca_source == null ? var.ca_bundle : null

  dynamic "source" {
    for_each = var.ca_source == null ? [] : [var.ca_source]
    content {
      kind      = source.value.kind
      namespace = source.value.namespace
      name      = source.value.name
      key       = source.value.key
    }
  }
}
