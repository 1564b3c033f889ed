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
