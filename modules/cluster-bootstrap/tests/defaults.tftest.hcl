# The module's defaults, as a caller that sets only the input it wants gets
# them: no file-level variables here, unlike cluster_bootstrap.tftest.hcl.
# Run by TestAccModule_tofuTest with the same -var-file; plans only.

# A caller that wants only caBundles gets them and the reconciler that keeps
# them, in a namespace every cluster has: no reporter (a root hostPath
# DaemonSet), no KMS health read, no namespace created.
run "only_ca_bundles" {
  command = plan
  variables {
    apiservices = { (var.apiservice_inline) = { ca_bundle = var.ca_pem } }
  }

  assert {
    condition     = length(kmshealth_reporter.this) == 0 && length(data.kmshealth_kms_plugin_health.this) == 0
    error_message = "defaults: want no reporter and no KMS health read"
  }
  assert {
    condition     = kmshealth_reconciler.this[0].namespace == "kube-system" && kmshealth_reconciler.this[0].create_namespace == false
    error_message = "defaults: want the reconciler in kube-system with no namespace created, got ${kmshealth_reconciler.this[0].namespace} (create_namespace = ${kmshealth_reconciler.this[0].create_namespace})"
  }
  assert {
    condition     = length(kmshealth_apiservice_cabundle.this) == 1 && output.rotation_ready == false
    error_message = "defaults: want the one caBundle and rotation_ready = false"
  }
  assert {
    condition     = kmshealth_reconciler.this[0].monitoring == null
    error_message = "defaults: want no monitoring objects (opt-in, as on the resource), got ${jsonencode(kmshealth_reconciler.this[0].monitoring)}"
  }
}

# reporter = {} on a cluster without it: the plan does not fail on the
# KMSHealth object the reporter is about to create (the read waits for the
# reporter's creation, and only for that), and timeouts left unset reach the
# resources as null, so their own defaults apply (reporter 2m, reconciler
# 10m) rather than a second set of defaults in the module.
run "reporter_first_install" {
  command = plan
  variables {
    reporter = { image = "registry.example.com/kmshealth:test" }
  }

  assert {
    condition     = length(kmshealth_reporter.this) == 1 && length(data.kmshealth_kms_plugin_health.this) == 1
    error_message = "reporter = {}: want the reporter and its KMS health read"
  }
  assert {
    condition     = kmshealth_reporter.this[0].timeouts.create == null && kmshealth_reconciler.this[0].timeouts.create == null
    error_message = "unset timeouts should reach the resources as null, got ${jsonencode(kmshealth_reporter.this[0].timeouts)} and ${jsonencode(kmshealth_reconciler.this[0].timeouts)}"
  }
}

# The one default that differs from its resource's, on purpose and said so
# in the variable's description: giving network_policy asks for the policy
# (the resource's enabled defaults to false).
run "network_policy_given_is_enabled" {
  command = plan
  variables {
    rbac_proxy_sidecars = [{
      kind           = "Deployment"
      namespace      = var.namespace
      name           = var.web_deployment
      upstream_port  = 8080
      network_policy = { from_pod_selector = { match_labels = { app = "prometheus" } } }
    }]
  }

  assert {
    condition     = kmshealth_rbac_proxy_sidecar.this["Deployment/${var.namespace}/${var.web_deployment}"].network_policy.enabled == true
    error_message = "network_policy given without enabled: want the NetworkPolicy (enabled = true)"
  }
}

# Monitoring is opt-in on both parts, as on the resources, and each part's
# input reaches its resource: the reconciler's PodMonitor and its alert
# group, the reporter's with the KMS alerts turned off. The test cluster has
# no prometheus-operator, so the plan warns and does not fail.
run "monitoring_opt_in" {
  command = plan
  variables {
    apiservices = { (var.apiservice_inline) = { ca_bundle = var.ca_pem } }
    reconciler  = { monitoring = { labels = { release = "kube-prometheus-stack" } } }
    reporter    = { image = "registry.example.com/kmshealth:test", monitoring = { rules = false } }
  }

  assert {
    condition     = kmshealth_reconciler.this[0].monitoring.rules == true && kmshealth_reconciler.this[0].monitoring.labels.release == "kube-prometheus-stack"
    error_message = "reconciler.monitoring: want rules = true (the default) and the release label, got ${jsonencode(kmshealth_reconciler.this[0].monitoring)}"
  }
  assert {
    condition     = kmshealth_reporter.this[0].monitoring.rules == false && kmshealth_reporter.this[0].monitoring.labels == null
    error_message = "reporter.monitoring: want rules = false and no labels, got ${jsonencode(kmshealth_reporter.this[0].monitoring)}"
  }
}

# The re-encrypt and retire steps of a key rotation: the re-encryption is
# planned with the resource's defaults where the caller gave none, and the
# retire read takes this module's run unless told another.
run "kms_rotation_steps" {
  command = plan
  variables {
    kms_reencryption = { name = "rotate", key_id = "k-new" }
    kms_retire       = { key_id = "k-old" }
  }

  assert {
    condition     = length(kmshealth_kms_reencryption.this) == 1 && kmshealth_kms_reencryption.this[0].namespace == "kube-system" && kmshealth_kms_reencryption.this[0].resources == tolist(["secrets"]) && kmshealth_kms_reencryption.this[0].method == "auto"
    error_message = "kms_reencryption: want one run in kube-system over secrets by method auto, got ${jsonencode(kmshealth_kms_reencryption.this)}"
  }
  assert {
    condition     = kmshealth_kms_reencryption.this[0].key_id == "k-new"
    error_message = "kms_reencryption: want key_id k-new"
  }
}

run "kms_retire_needs_a_run" {
  command = plan
  variables {
    kms_retire = { key_id = "k-old" }
  }
  expect_failures = [data.kmshealth_kms_key_usage.this]
}
