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
# out-of-band overwrite, between applies, even when an installer replaces or
# re-creates the APIService (what it keeps is recorded in a ConfigMap of its
# own). It may read exactly the source object above and patch exactly that
# APIService (RBAC resourceNames), and nothing else.
resource "kmshealth_reconciler" "this" {
  namespace        = var.reconciler_namespace
  create_namespace = var.create_reconciler_namespace
  ca_bundles       = { (kmshealth_apiservice_cabundle.this.apiservice_name) = kmshealth_apiservice_cabundle.this.ca_bundle_source }
  image            = var.reconciler_image
  wait_for_rollout = var.wait_for_rollout

  # The KMS health aggregator rolls up what the reporter below writes.
  kms_target        = kmshealth_reporter.this.target
  kms_max_staleness = var.kms_max_staleness
}

# KMS v2 plugin health: a reporter on every control-plane node probes each
# local plugin socket and writes one condition per node on the KMSHealth
# object "cluster"; the reconciler above rolls them up into
# KMSPluginsDegraded (kubectl get kmshealths).
resource "kmshealth_reporter" "this" {
  namespace        = var.reporter_namespace
  kms_sockets      = var.kms_sockets
  wait_for_rollout = var.wait_for_rollout
}

# Read back by Terraform: per node and per plugin health, and whether every
# node agrees on the active key encryption key.
data "kmshealth_kms_plugin_health" "this" {
  max_staleness  = var.kms_max_staleness
  expected_nodes = var.control_plane_nodes

  depends_on = [kmshealth_reporter.this]
}

# Stands in for whatever rotates the key encryption key (a new cloud KMS key
# version, an EncryptionConfiguration rollout): the plan stops here unless
# every node is healthy, fresh and agrees on the active key.
resource "terraform_data" "rotate_kek" {
  count = var.rotate_kek_to == null ? 0 : 1
  input = var.rotate_kek_to

  lifecycle {
    precondition {
      condition     = data.kmshealth_kms_plugin_health.this.rotation_ready
      error_message = "KMS plugins are not ready for key rotation: ${join("; ", data.kmshealth_kms_plugin_health.this.problems)}"
    }
  }
}

# The TLS security profile, resolved once into a ConfigMap its workloads
# mount (no API call at startup), rolling them when the profile changes.
resource "kmshealth_tls_profile_configmap" "this" {
  count     = var.tls_profile == null ? 0 : 1
  namespace = var.tls_profile.namespace
  name      = var.tls_profile.name
  source    = var.tls_profile.source

  dynamic "profile" {
    for_each = var.tls_profile.source == "static" ? [var.tls_profile_type] : []
    content {
      type = profile.value
    }
  }

  rollout_targets = var.tls_profile.rollout_targets
}
