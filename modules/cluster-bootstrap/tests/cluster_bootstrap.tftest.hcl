# The module's own tests, in OpenTofu's test framework, against a real API
# server: run by TestAccModule_tofuTest (internal/moduletest) in `make test`,
# which starts the control plane, creates what a cluster already has (the
# aggregated APIServices, a CA Secret, a namespace with a web Deployment),
# points the provider at it with KUBE_CONFIG_PATH and passes their names
# with -var-file: ca_pem (an inline CA), namespace, web_deployment,
# apiservice_inline, apiservice_source and source_secret (a Secret in
# namespace whose ca.crt is apiservice_source's CA).
#
# Afterwards `tofu test` destroys what the runs applied, and the Go test
# checks that nothing of ours is left in the cluster.

# No kubelet runs: the reconciler's and the reporter's pods cannot start, so
# no run waits for them; the reconciler goes into the test's own namespace
# (an aggregated API with no server behind it keeps a deleted namespace
# Terminating, as in any cluster).
variables {
  reconciler = {
    namespace        = var.namespace
    create_namespace = false
    image            = "registry.example.com/kmshealth:test"
    wait_for_rollout = false
  }
  reporter = {
    image            = "registry.example.com/kmshealth:test"
    wait_for_rollout = false
  }
}

# Turning a part off is one input: without a reporter the default
# kms_health = {} reads nothing (before this, the plan failed on a KMSHealth
# object nothing created). First, while nothing is applied.
run "reporter_off_with_default_kms_health" {
  command = plan
  variables {
    apiservices = { (var.apiservice_inline) = { ca_bundle = var.ca_pem } }
    reporter    = null
  }

  assert {
    condition     = length(data.kmshealth_kms_plugin_health.this) == 0 && length(kmshealth_reporter.this) == 0
    error_message = "reporter = null: want no reporter and no KMS health read"
  }
  assert {
    condition     = output.rotation_ready == false && length(output.kms_problems) == 1 && strcontains(output.kms_problems[0], "reporter = null")
    error_message = "reporter = null: want rotation_ready = false and one problem saying why, got ${jsonencode(output.kms_problems)}"
  }
}

# Bad input fails at plan, naming the input, before anything is written.
run "bad_socket_path" {
  command = plan
  variables {
    reporter = { kms_sockets = ["unix:///tmp/kms.sock"] }
  }
  expect_failures = [var.reporter]
}

run "unknown_profile_type" {
  command = plan
  variables {
    tls_profiles = { web = { namespace = var.namespace, type = "Strict" } }
  }
  expect_failures = [var.tls_profiles]
}

run "rbac_proxy_listens_on_its_upstream" {
  command = plan
  variables {
    rbac_proxy_sidecars = [{ kind = "Deployment", namespace = var.namespace, name = var.web_deployment, upstream_port = 8443 }]
  }
  expect_failures = [var.rbac_proxy_sidecars]
}

# tls_profile is optional: an entry without it plans (the precondition's
# message is evaluated even when its condition holds, so it must not fail
# on a null).
run "rbac_proxy_without_tls_profile" {
  command = plan
  variables {
    rbac_proxy_sidecars = [{ kind = "Deployment", namespace = var.namespace, name = var.web_deployment, upstream_port = 8080 }]
  }
}

run "two_sources_for_one_ca_bundle" {
  command = plan
  variables {
    apiservices = {
      (var.apiservice_inline) = {
        ca_bundle = var.ca_pem
        source    = { kind = "Secret", namespace = var.namespace, name = var.source_secret, key = "ca.crt" }
      }
    }
  }
  expect_failures = [var.apiservices]
}

run "two_sources_for_one_webhook_ca_bundle" {
  command = plan
  variables {
    webhook_ca_bundles = {
      "ValidatingWebhookConfiguration/hooks" = {
        ca_bundle = var.ca_pem
        source    = { kind = "Secret", namespace = var.namespace, name = var.source_secret, key = "ca.crt" }
      }
    }
  }
  expect_failures = [var.webhook_ca_bundles]
}

run "webhooks_named_for_a_crd" {
  command = plan
  variables {
    webhook_ca_bundles = {
      "CustomResourceDefinition/things.example.com" = { ca_bundle = var.ca_pem, webhooks = ["a.example.com"] }
    }
  }
  expect_failures = [var.webhook_ca_bundles]
}

# Everything on: two caBundles (inline and from a Secret), the reconciler,
# the reporter, the KMS health read-back and a TLS profile rolling a
# Deployment.
run "bootstrap" {
  variables {
    apiservices = {
      (var.apiservice_inline) = { ca_bundle = var.ca_pem }
      (var.apiservice_source) = { source = { kind = "Secret", namespace = var.namespace, name = var.source_secret, key = "ca.crt" } }
    }
    tls_profiles = {
      web = {
        namespace       = var.namespace
        rollout_targets = [{ kind = "Deployment", namespace = var.namespace, name = var.web_deployment }]
      }
    }
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

  assert {
    condition     = length(output.ca_bundles) == 2 && alltrue([for b in values(output.ca_bundles) : length(b.fingerprint_sha256) == 64 && b.certificate_count == 1])
    error_message = "ca_bundles: want a 64-hex fingerprint and one certificate for each of the two APIServices, got ${jsonencode(output.ca_bundles)}"
  }
  assert {
    condition     = output.ca_bundles[var.apiservice_source].source == "Secret/${var.namespace}/${var.source_secret}/ca.crt"
    error_message = "ca_bundles: the Secret-sourced APIService names ${output.ca_bundles[var.apiservice_source].source}"
  }
  assert {
    condition     = output.ca_bundles[var.apiservice_inline].source == "ConfigMap/kube-system/kmshealth-cabundle-${var.apiservice_inline}/ca.crt"
    error_message = "ca_bundles: the inline bundle should be kept in kmshealth's ConfigMap, got ${output.ca_bundles[var.apiservice_inline].source}"
  }
  assert {
    condition     = can(timecmp(output.ca_bundles[var.apiservice_inline].not_after, plantimestamp())) && timecmp(output.ca_bundles[var.apiservice_inline].not_after, plantimestamp()) > 0
    error_message = "ca_bundles: not_after should be an RFC 3339 time in the future, got ${output.ca_bundles[var.apiservice_inline].not_after}"
  }
  assert {
    condition     = output.reconciler_metrics_service == "kmshealth-reconciler-metrics.${var.namespace}.svc"
    error_message = "reconciler_metrics_service: got ${coalesce(output.reconciler_metrics_service, "null")}"
  }
  assert {
    condition     = length(output.tls_profiles.web.hash) == 64 && output.tls_profiles.web.min_tls_version == "VersionTLS12" && output.tls_profiles.web.configmap == "${var.namespace}/tls-profile"
    error_message = "tls_profiles: want an Intermediate profile in ${var.namespace}/tls-profile, got ${jsonencode(output.tls_profiles)}"
  }
  assert {
    condition     = output.kms_target == "kmshealth.io/v1alpha1/kmshealths/cluster"
    error_message = "kms_target: got ${output.kms_target}"
  }
  assert {
    condition     = length(output.rbac_proxy_sidecars["Deployment/${var.namespace}/${var.web_deployment}"].config_hash) == 64 && output.rbac_proxy_sidecars["Deployment/${var.namespace}/${var.web_deployment}"].listen_port == 8443
    error_message = "rbac_proxy_sidecars: want the web Deployment's proxy on 8443 with a config hash, got ${jsonencode(output.rbac_proxy_sidecars)}"
  }
  # The reconciler keeps what the module made: the caBundles, the profile
  # and the sidecar (each recorded, with RBAC on exactly these names).
  assert {
    condition     = length(kmshealth_reconciler.this[0].ca_bundles) == 2 && length(kmshealth_reconciler.this[0].tls_profiles) == 1 && length(kmshealth_reconciler.this[0].rbac_proxy_sidecars) == 1
    error_message = "the reconciler should keep 2 caBundles, 1 TLS profile and 1 rbac proxy sidecar, got ${jsonencode(kmshealth_reconciler.this[0].ca_bundles)}, ${length(kmshealth_reconciler.this[0].tls_profiles)} profiles, ${length(kmshealth_reconciler.this[0].rbac_proxy_sidecars)} sidecars"
  }
  # No reporter pod can run here, so no node has reported: the gate is
  # closed and says why.
  assert {
    condition     = output.rotation_ready == false && output.kms_healthy == false && length(output.kms_problems) > 0 && length(output.kms_nodes) == 0
    error_message = "KMS health with no report: want rotation_ready = false with problems and no nodes, got ready=${output.rotation_ready} problems=${jsonencode(output.kms_problems)} nodes=${jsonencode(output.kms_nodes)}"
  }
}

# The rotation gate stays at plan time when the reporter changes in place,
# as on every provider upgrade (its image tag is the provider's version):
# the health is read during this plan, so a caller's precondition on
# rotation_ready fails the plan. Were the read deferred to the apply (a
# depends_on on the reporter), the outputs would be unknown here and these
# assertions could not be evaluated, which fails the run.
run "gate_at_plan_on_reporter_upgrade" {
  command = plan
  variables {
    reporter = {
      image            = "registry.example.com/kmshealth:upgraded"
      wait_for_rollout = false
    }
    apiservices = {
      (var.apiservice_inline) = { ca_bundle = var.ca_pem }
      (var.apiservice_source) = { source = { kind = "Secret", namespace = var.namespace, name = var.source_secret, key = "ca.crt" } }
    }
    tls_profiles = {
      web = {
        namespace       = var.namespace
        rollout_targets = [{ kind = "Deployment", namespace = var.namespace, name = var.web_deployment }]
      }
    }
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

  assert {
    condition     = kmshealth_reporter.this[0].image == "registry.example.com/kmshealth:upgraded"
    error_message = "the reporter should be planned onto the new image"
  }
  assert {
    condition     = output.rotation_ready == false && output.kms_healthy == false && length(output.kms_problems) > 0
    error_message = "KMS health read at plan: want rotation_ready = false with problems, got ${jsonencode(output.kms_problems)}"
  }
}

# A profile change changes the hash that rolls the rollout targets.
run "profile_change" {
  variables {
    apiservices = {
      (var.apiservice_inline) = { ca_bundle = var.ca_pem }
      (var.apiservice_source) = { source = { kind = "Secret", namespace = var.namespace, name = var.source_secret, key = "ca.crt" } }
    }
    tls_profiles = {
      web = {
        namespace       = var.namespace
        type            = "Modern"
        rollout_targets = [{ kind = "Deployment", namespace = var.namespace, name = var.web_deployment }]
      }
    }
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
    # What the bootstrap run left, to compare with (an assertion cannot
    # refer to another run; a variable can).
    before = run.bootstrap
  }

  assert {
    condition     = output.tls_profiles.web.min_tls_version == "VersionTLS13" && output.tls_profiles.web.hash != var.before.tls_profiles.web.hash
    error_message = "tls_profiles: Modern should be TLS 1.3 with a new hash, got ${jsonencode(output.tls_profiles.web)} (was ${var.before.tls_profiles.web.hash})"
  }
  # The sidecar's listener follows the profile: its arguments change.
  assert {
    condition     = contains(kmshealth_rbac_proxy_sidecar.this["Deployment/${var.namespace}/${var.web_deployment}"].args, "--tls-min-version=VersionTLS13")
    error_message = "the rbac proxy should take the Modern profile's minimum version, got args ${jsonencode(kmshealth_rbac_proxy_sidecar.this["Deployment/${var.namespace}/${var.web_deployment}"].args)}"
  }
  assert {
    condition     = output.ca_bundles == var.before.ca_bundles
    error_message = "ca_bundles changed although the CAs did not: ${jsonencode(output.ca_bundles)}, was ${jsonencode(var.before.ca_bundles)}"
  }
}

# Each pattern is behind its input: turning them off removes them (the
# sidecar is taken out of the Deployment again), the outputs say so, and
# the gate stays closed.
run "patterns_off" {
  variables {
    apiservices         = {}
    tls_profiles        = {}
    rbac_proxy_sidecars = []
    reconciler          = null
    reporter            = null
    kms_health          = null
  }

  assert {
    condition     = length(output.ca_bundles) == 0 && length(output.tls_profiles) == 0 && output.reconciler_metrics_service == null
    error_message = "with every pattern off nothing should be managed, got ca_bundles=${jsonencode(output.ca_bundles)} tls_profiles=${jsonencode(output.tls_profiles)}"
  }
  assert {
    condition     = output.rotation_ready == false && length(output.kms_problems) == 1
    error_message = "kms_health = null: want rotation_ready = false and one problem saying why, got ${jsonencode(output.kms_problems)}"
  }
}
