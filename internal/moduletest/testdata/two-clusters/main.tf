# A platform repo's root module for two clusters, as TestAccModule_twoClusters
# applies it: one call of modules/cluster-bootstrap per cluster, each through
# its own provider alias. The test copies this directory to <tmp>/caller
# beside a copy of the module at <tmp>/modules/cluster-bootstrap (a local
# path: nothing is downloaded).

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    kmshealth = {
      source = "kmshealth/kmshealth"
    }
  }
}

provider "kmshealth" {
  alias       = "east"
  config_path = var.east.kubeconfig
}

provider "kmshealth" {
  alias       = "west"
  config_path = var.west.kubeconfig
}

variable "east" {
  description = "The east cluster: kubeconfig, and the CA PEM of each APIService (by name)."
  type = object({
    kubeconfig  = string
    apiservices = map(string)
  })
}

variable "west" {
  description = "The west cluster, as east."
  type = object({
    kubeconfig  = string
    apiservices = map(string)
  })
}

variable "namespace" {
  description = "Where each cluster runs the reconciler and the web Deployment that consumes the TLS profile (both exist)."
  type        = string
}

variable "web_deployment" {
  description = "The Deployment rolled by the TLS profile."
  type        = string
}

variable "west_enabled" {
  description = "Bootstrap the west cluster too (count on a module call)."
  type        = bool
  default     = true
}

variable "west_reporter_image" {
  description = "West's reporter image: a new one stands in for a provider upgrade, which changes the image tag."
  type        = string
  default     = "registry.example.com/kmshealth:test"
}

variable "rotate_east_kek_to" {
  description = "Rotate east's key encryption key (stands in for the real rotation); gated on east's KMS health."
  type        = string
  default     = null
}

variable "rotate_west_kek_to" {
  description = "As rotate_east_kek_to, for west."
  type        = string
  default     = null
}

locals {
  # What both clusters share; only the provider and the CAs differ.
  bootstrap = {
    reconciler = {
      namespace        = var.namespace
      create_namespace = false
      image            = "registry.example.com/kmshealth:test"
      wait_for_rollout = false # no kubelet runs the pods here
    }
    reporter = {
      image            = "registry.example.com/kmshealth:test"
      wait_for_rollout = false
      probe_interval   = "5s"
    }
    kms_health = { max_staleness = "20s" }
    tls_profiles = {
      web = {
        namespace       = var.namespace
        rollout_targets = [{ kind = "Deployment", namespace = var.namespace, name = var.web_deployment }]
      }
    }
    # The web API behind kube-rbac-proxy, with the TLS profile above.
    rbac_proxy_sidecars = [{
      kind          = "Deployment"
      namespace     = var.namespace
      name          = var.web_deployment
      upstream_port = 8080
      tls_profile   = "web"
      allow_paths   = ["/metrics"]
      authorization = {
        resource_attributes = { namespace = var.namespace, resource = "services", subresource = "proxy", name = var.web_deployment }
      }
    }]
  }
}

module "east" {
  source    = "../modules/cluster-bootstrap"
  providers = { kmshealth = kmshealth.east }

  apiservices  = { for name, pem in var.east.apiservices : name => { ca_bundle = pem } }
  reconciler   = local.bootstrap.reconciler
  reporter     = local.bootstrap.reporter
  kms_health   = local.bootstrap.kms_health
  tls_profiles = local.bootstrap.tls_profiles

  rbac_proxy_sidecars = local.bootstrap.rbac_proxy_sidecars
}

# West follows east (a staged rollout): count and depends_on on a module
# call, which a module with a provider block inside could not take.
module "west" {
  source    = "../modules/cluster-bootstrap"
  count     = var.west_enabled ? 1 : 0
  providers = { kmshealth = kmshealth.west }

  apiservices  = { for name, pem in var.west.apiservices : name => { ca_bundle = pem } }
  reconciler   = local.bootstrap.reconciler
  reporter     = merge(local.bootstrap.reporter, { image = var.west_reporter_image })
  kms_health   = local.bootstrap.kms_health
  tls_profiles = local.bootstrap.tls_profiles

  rbac_proxy_sidecars = local.bootstrap.rbac_proxy_sidecars

  depends_on = [module.east]
}

# Key rotation is the caller's: each cluster's stands in for the real one,
# gated on that cluster's KMS health.
resource "terraform_data" "rotate_east_kek" {
  count = var.rotate_east_kek_to == null ? 0 : 1
  input = var.rotate_east_kek_to

  lifecycle {
    precondition {
      condition     = module.east.rotation_ready
      error_message = "east: KMS plugins are not ready for key rotation: ${join("; ", module.east.kms_problems)}"
    }
  }
}

resource "terraform_data" "rotate_west_kek" {
  count = var.rotate_west_kek_to == null ? 0 : 1
  input = var.rotate_west_kek_to

  lifecycle {
    precondition {
      condition     = module.west[0].rotation_ready
      error_message = "west: KMS plugins are not ready for key rotation: ${join("; ", module.west[0].kms_problems)}"
    }
  }
}

output "east" {
  value = module.east
}

output "west" {
  value = one(module.west[*])
}

# The README's check block: a warning at every plan and apply while a
# cluster could not rotate, without stopping anything else.
check "east_kms_rotation_ready" {
  assert {
    condition     = module.east.rotation_ready
    error_message = "east: a key rotation would be blocked: ${join("; ", module.east.kms_problems)}"
  }
}

check "west_kms_rotation_ready" {
  assert {
    condition     = !var.west_enabled || one(module.west[*].rotation_ready) == true
    error_message = "west: a key rotation would be blocked: ${join("; ", flatten(module.west[*].kms_problems))}"
  }
}
