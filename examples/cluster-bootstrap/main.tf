# Cluster bootstrap: the root module a platform repo keeps. It configures
# the provider and calls modules/cluster-bootstrap, which wires everything
# kmshealth hardens; the key rotation stays here, with the caller, gated on
# the module's rotation_ready. Applied by `make demo` against the local test
# API server; point kubeconfig_path at your own cluster to use it for real.

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

module "cluster_bootstrap" {
  # In a platform repo:
  # source = "git::https://github.com/kmshealth/terraform-provider-kmshealth.git//modules/cluster-bootstrap?ref=v0.1.0"
  source = "../../modules/cluster-bootstrap"

  # The aggregated API's caBundle, from inline PEM or from the Secret or
  # ConfigMap that holds its serving CA.
  apiservices = {
    (var.apiservice_name) = var.ca_source == null ? { ca_bundle = var.ca_bundle, source = null } : { ca_bundle = null, source = var.ca_source }
  }

  # The in-cluster reconciler restores the caBundle within milliseconds of
  # an out-of-band overwrite, between applies, and rolls KMS health up.
  reconciler = {
    namespace        = var.reconciler_namespace
    create_namespace = var.create_reconciler_namespace
    image            = var.reconciler_image
    wait_for_rollout = var.wait_for_rollout
  }

  # A reporter on every control-plane node probes each local KMS v2 plugin.
  reporter = {
    namespace        = var.reporter_namespace
    kms_sockets      = var.kms_sockets
    wait_for_rollout = var.wait_for_rollout
  }

  kms_health = {
    max_staleness  = var.kms_max_staleness
    expected_nodes = var.control_plane_nodes
  }

  # The TLS security profile, resolved once into a ConfigMap its workloads
  # mount (no API call at startup), rolling them when the profile changes.
  tls_profiles = var.tls_profile == null ? {} : {
    default = {
      namespace       = var.tls_profile.namespace
      name            = var.tls_profile.name
      source          = var.tls_profile.source
      type            = var.tls_profile_type
      rollout_targets = var.tls_profile.rollout_targets
    }
  }

  # kube-rbac-proxy in front of a workload's HTTP API: a caller needs RBAC
  # get on services/proxy <name> in its namespace (a TokenReview and a
  # SubjectAccessReview per request); the ignored paths (e.g. a health
  # check) are served without a token. The reconciler puts the sidecar
  # back when an installer's replace removes it.
  rbac_proxy_sidecars = var.protected_api == null ? [] : [{
    kind          = var.protected_api.kind
    namespace     = var.protected_api.namespace
    name          = var.protected_api.name
    upstream_port = var.protected_api.upstream_port
    listen_port   = var.protected_api.listen_port
    health_port   = var.protected_api.health_port
    ignore_paths  = var.protected_api.ignore_paths
    tls_profile   = var.tls_profile == null ? null : "default"
    authorization = {
      resource_attributes = {
        namespace   = var.protected_api.namespace
        resource    = "services"
        subresource = "proxy"
        name        = var.protected_api.name
      }
    }
  }]
}

# Stands in for whatever rotates the key encryption key (a new cloud KMS key
# version, an EncryptionConfiguration rollout): the plan stops here unless
# every node is healthy, fresh and agrees on the active key.
resource "terraform_data" "rotate_kek" {
  count = var.rotate_kek_to == null ? 0 : 1
  input = var.rotate_kek_to

  lifecycle {
    precondition {
      condition     = module.cluster_bootstrap.rotation_ready
      error_message = "KMS plugins are not ready for key rotation: ${join("; ", module.cluster_bootstrap.kms_problems)}"
    }
  }
}
