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

# The in-cluster reconciler: restores the caBundle within milliseconds of an
# out-of-band overwrite, between applies. It may read exactly the source
# object above (RBAC resourceNames) and no other Secret or ConfigMap.
resource "kmshealth_reconciler" "this" {
  namespace         = var.reconciler_namespace
  create_namespace  = var.create_reconciler_namespace
  ca_bundle_sources = [kmshealth_apiservice_cabundle.this.ca_bundle_source]
  image             = var.reconciler_image
}
