# Everything kmshealth hardens on one cluster, each pattern behind an input.
# No provider block: the caller configures kmshealth (or passes an alias with
# `providers = { kmshealth = kmshealth.east }`), so the module can be called
# with for_each, count and depends_on, once per cluster.

locals {
  # Where the reporters write, the reconciler rolls up and the health is
  # read: one object for all three. null: the provider's default, the
  # KMSHealth object "cluster".
  kms_target = try(coalesce(try(var.reporter.target, null), try(var.kms_health.target, null)), null)

  # One staleness for the rollup and the read-back, so the two agree.
  kms_max_staleness = try(var.kms_health.max_staleness, null)

  # The health is read where there is something to read: the target of the
  # reporter this call installs, or the object kms_health.target names
  # (reporters installed elsewhere). reporter = null alone turns the read
  # off, so it never fails a plan on an object nothing created.
  read_kms_health = var.kms_health != null && (var.reporter != null || try(var.kms_health.target, null) != null)
}

# One caBundle per APIService, from inline PEM or the Secret/ConfigMap key
# that holds the serving CA: the one authoritative object the reconciler
# restores it from.
resource "kmshealth_apiservice_cabundle" "this" {
  for_each = var.apiservices

  apiservice_name  = each.key
  ca_bundle        = each.value.ca_bundle
  bundle_namespace = each.value.bundle_namespace
  field_manager    = var.field_manager
  force_conflicts  = each.value.force_conflicts

  dynamic "source" {
    for_each = each.value.source == null ? [] : [each.value.source]
    content {
      kind      = source.value.kind
      namespace = source.value.namespace
      name      = source.value.name
      key       = source.value.key
    }
  }
}

# The same for webhook configurations and CRD conversion webhooks: only
# their caBundles, from one authoritative object each.
resource "kmshealth_webhook_cabundle" "this" {
  for_each = var.webhook_ca_bundles

  kind             = split("/", each.key)[0]
  name             = split("/", each.key)[1]
  webhooks         = each.value.webhooks
  ca_bundle        = each.value.ca_bundle
  bundle_namespace = each.value.bundle_namespace
  field_manager    = var.field_manager
  force_conflicts  = each.value.force_conflicts

  dynamic "source" {
    for_each = each.value.source == null ? [] : [each.value.source]
    content {
      kind      = source.value.kind
      namespace = source.value.namespace
      name      = source.value.name
      key       = source.value.key
    }
  }
}

# The in-cluster reconciler: restores each caBundle above within
# milliseconds of an out-of-band overwrite, between applies, keeps the TLS
# profiles and the rbac proxy sidecars, and rolls the reporters' conditions
# up into KMSPluginsDegraded.
# It may read exactly the sources above and patch exactly those APIServices
# (RBAC resourceNames).
resource "kmshealth_reconciler" "this" {
  count = var.reconciler == null ? 0 : 1

  namespace        = var.reconciler.namespace
  create_namespace = var.reconciler.create_namespace
  name             = var.reconciler.name
  image            = var.reconciler.image
  replicas         = var.reconciler.replicas
  wait_for_rollout = var.reconciler.wait_for_rollout
  admission_policy = var.reconciler.admission_policy
  field_manager    = var.field_manager
  monitoring       = var.reconciler.monitoring

  ca_bundles = { for r in kmshealth_apiservice_cabundle.this : r.apiservice_name => r.ca_bundle_source }

  # The webhook and CRD caBundles above, with RBAC on exactly these objects
  # and an admission policy that lets it change nothing else of them.
  webhook_ca_bundles = { for r in kmshealth_webhook_cabundle.this : r.id => { source = r.ca_bundle_source, webhooks = r.webhooks } }

  # It also keeps each TLS profile ConfigMap below (an edited profile.json,
  # a removed hash annotation; for source = "cluster", a changed cluster
  # profile), with RBAC on exactly these ConfigMaps and their targets.
  tls_profiles = [
    for p in kmshealth_tls_profile_configmap.this : { namespace = p.namespace, name = p.name, rollout_targets = p.rollout_targets }
  ]

  # And puts each kube-rbac-proxy sidecar below back when a Helm upgrade or
  # a kubectl replace removes it, pinned whole: exactly its container
  # (pinned_sidecar, field for field), volumes and config hash.
  rbac_proxy_sidecars = [
    for s in kmshealth_rbac_proxy_sidecar.this : { target = s.target, image = s.image, args = s.args, pinned_sidecar = s.pinned_sidecar }
  ]

  kms_target        = local.kms_target
  kms_max_staleness = local.kms_max_staleness

  timeouts {
    create = var.reconciler.timeout
    update = var.reconciler.timeout
    delete = var.reconciler.timeout
  }
}

# KMS v2 plugin health: a reporter on every control-plane node probes each
# local plugin socket and writes one condition per node.
resource "kmshealth_reporter" "this" {
  count = var.reporter == null ? 0 : 1

  namespace        = var.reporter.namespace
  name             = var.reporter.name
  image            = var.reporter.image
  kms_sockets      = var.reporter.kms_sockets
  socket_dir       = var.reporter.socket_dir
  probe_interval   = var.reporter.probe_interval
  node_selector    = var.reporter.node_selector
  target           = var.reporter.target
  install_crd      = var.reporter.install_crd
  wait_for_rollout = var.reporter.wait_for_rollout
  admission_policy = var.reporter.admission_policy
  monitoring       = var.reporter.monitoring

  timeouts {
    create = var.reporter.timeout
    update = var.reporter.timeout
    delete = var.reporter.timeout
  }
}

# The reporter's target, known at plan once the reporter exists: its output
# is unknown only in the plan that creates the reporter (or replaces it
# with another target, or turns kms_health on), which is when the target
# object may not exist yet.
# Updating the reporter in place (a new image on every provider upgrade)
# changes nothing here.
resource "terraform_data" "kms_target" {
  count = var.reporter != null && local.read_kms_health ? 1 : 0

  input = kmshealth_reporter.this[0].target
}

# Read back at every plan: per node and per plugin health, and whether every
# node agrees on the active key encryption key. The caller's key rotation
# gates on the rotation_ready and kms_problems outputs.
#
# No depends_on on the reporter: Terraform and OpenTofu defer a data source
# to apply time whenever something it depends on has changes, and the
# reporter changes on every provider upgrade (its image tag is the
# provider's version), so the caller's rotation gate would silently move
# from plan to apply. The target comes through terraform_data.kms_target
# instead, which waits for the reporter only while the reporter is created.
data "kmshealth_kms_plugin_health" "this" {
  count = local.read_kms_health ? 1 : 0

  target         = var.reporter == null ? local.kms_target : terraform_data.kms_target[0].output
  max_staleness  = var.kms_health.max_staleness
  expected_nodes = var.kms_health.expected_nodes
  wait_timeout   = var.kms_health.wait_timeout
}

# The re-encrypt step of a key rotation: every object of the listed
# resources rewritten under the new key, gated at apply on the same health
# target (and on kube-apiserver writing with that key).
resource "kmshealth_kms_reencryption" "this" {
  count = var.kms_reencryption == null ? 0 : 1

  name          = var.kms_reencryption.name
  namespace     = var.kms_reencryption.namespace
  key_id        = var.kms_reencryption.key_id
  resources     = var.kms_reencryption.resources
  method        = var.kms_reencryption.method
  health_target = local.kms_target
}

# The retire step of a key rotation: whether kube-apiserver still reads any
# stored object with the old key, after the re-encryption (this module's,
# unless kms_retire names another). Reads the same health target as above
# for the plugins' key IDs.
data "kmshealth_kms_key_usage" "this" {
  count = var.kms_retire == null ? 0 : 1

  target        = local.kms_target
  retire_key_id = var.kms_retire.key_id
  reencryption  = try(coalesce(var.kms_retire.reencryption, try(kmshealth_kms_reencryption.this[0].id, null)), null)

  lifecycle {
    precondition {
      condition     = var.kms_retire.reencryption != null || var.kms_reencryption != null
      error_message = "kms_retire.reencryption: name the kmshealth_kms_reencryption that re-encrypted under the new key (<namespace>/<name>, its id), or set kms_reencryption to run it here."
    }
  }
}

# TLS security profiles, each resolved once into a ConfigMap its workloads
# mount (no API call at startup), rolling them when the profile changes.
resource "kmshealth_tls_profile_configmap" "this" {
  for_each = var.tls_profiles

  namespace = each.value.namespace
  name      = each.value.name
  source    = each.value.source

  dynamic "profile" {
    for_each = each.value.source == "static" ? [each.value] : []
    content {
      type = profile.value.type

      dynamic "custom" {
        for_each = profile.value.custom == null ? [] : [profile.value.custom]
        content {
          min_tls_version = custom.value.min_tls_version
          ciphers         = custom.value.ciphers
          groups          = custom.value.groups
        }
      }
    }
  }

  fips            = each.value.fips
  rollout_targets = each.value.rollout_targets
}

# kube-rbac-proxy in front of each workload's HTTP API: a native sidecar
# written by server-side apply of only its own fields, its config
# ConfigMap, the auth-delegator binding, and optionally a Service port and a
# NetworkPolicy. The listener takes the TLS profile it names.
resource "kmshealth_rbac_proxy_sidecar" "this" {
  for_each = { for s in var.rbac_proxy_sidecars : "${s.kind}/${s.namespace}/${s.name}" => s }

  target {
    kind      = each.value.kind
    namespace = each.value.namespace
    name      = each.value.name
  }

  upstream_port   = each.value.upstream_port
  listen_port     = each.value.listen_port
  health_port     = each.value.health_port
  image           = each.value.image
  proxy_version   = each.value.proxy_version
  allow_paths     = each.value.allow_paths
  ignore_paths    = each.value.ignore_paths
  tls_secret_name = each.value.tls_secret_name
  insecure_listen = each.value.insecure_listen
  service_name    = each.value.service_name

  tls_profile = each.value.tls_profile == null ? null : try({
    min_tls_version = kmshealth_tls_profile_configmap.this[each.value.tls_profile].min_tls_version
    cipher_suites   = kmshealth_tls_profile_configmap.this[each.value.tls_profile].cipher_suites
  }, null)

  dynamic "authorization" {
    for_each = each.value.authorization == null ? [] : [each.value.authorization]
    content {
      dynamic "resource_attributes" {
        for_each = authorization.value.resource_attributes == null ? [] : [authorization.value.resource_attributes]
        content {
          namespace   = resource_attributes.value.namespace
          api_group   = resource_attributes.value.api_group
          api_version = resource_attributes.value.api_version
          resource    = resource_attributes.value.resource
          subresource = resource_attributes.value.subresource
          name        = resource_attributes.value.name
        }
      }
      dynamic "rewrites" {
        for_each = authorization.value.rewrites == null ? [] : [authorization.value.rewrites]
        content {
          by_query_parameter = rewrites.value.by_query_parameter
          by_http_header     = rewrites.value.by_http_header
        }
      }
    }
  }

  dynamic "network_policy" {
    for_each = each.value.network_policy == null ? [] : [each.value.network_policy]
    content {
      enabled                 = network_policy.value.enabled
      from_namespace_selector = network_policy.value.from_namespace_selector
      from_pod_selector       = network_policy.value.from_pod_selector
    }
  }

  dynamic "resources" {
    for_each = each.value.resources == null ? [] : [each.value.resources]
    content {
      requests = resources.value.requests
      limits   = resources.value.limits
    }
  }

  wait_for_rollout = each.value.wait_for_rollout

  timeouts {
    create = each.value.timeout
    update = each.value.timeout
    delete = each.value.timeout
  }

  lifecycle {
    precondition {
      condition     = each.value.tls_profile == null || contains(keys(var.tls_profiles), coalesce(each.value.tls_profile, "-"))
      error_message = "rbac_proxy_sidecars (${each.key}): tls_profile = \"${each.value.tls_profile == null ? "" : each.value.tls_profile}\" names no entry of tls_profiles (${join(", ", keys(var.tls_profiles))}); use one of those keys, or leave it out for the proxy's defaults."
    }
  }
}
