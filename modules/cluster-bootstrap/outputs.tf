output "rotation_ready" {
  description = "Whether a KMS key encryption key may be rotated now: every node reported recently, every plugin is healthy and all nodes agree on the active key per keyID. `false` when the module reads no KMS health (`kms_health = null`, or `reporter = null` without `kms_health.target`). Put it in the `lifecycle.precondition` of whatever rotates the key, with `kms_problems` as the message."
  value       = try(data.kmshealth_kms_plugin_health.this[0].rotation_ready, false)
}

output "kms_problems" {
  description = "Why `rotation_ready` is false: one line per failing node (with its failing plugins) and per keyID the nodes disagree on; empty when ready. Use it as the precondition's `error_message`."
  value = (local.read_kms_health ? data.kmshealth_kms_plugin_health.this[0].problems
    : var.kms_health == null ? ["KMS health is not read by this module call (kms_health = null)"]
  : ["KMS health is not read by this module call: it installs no reporter (reporter = null) and kms_health.target names no object to read"])
}

output "kms_healthy" {
  description = "Every expected node reported recently with all its plugins healthy (`rotation_ready` also needs them to agree on the active key). `false` when the module reads no KMS health."
  value       = try(data.kmshealth_kms_plugin_health.this[0].healthy, false)
}

output "kms_degraded_reason" {
  description = "Why the cluster is not healthy, by its worst node: Stale, Error, Unhealthy, InvalidReport or Missing; empty when healthy; null when the module reads no KMS health."
  value       = try(data.kmshealth_kms_plugin_health.this[0].degraded_reason, null)
}

output "kms_active_kek_ids" {
  description = "keyID => kekID (the key encryption key each plugin reports) for every keyID on which all nodes agree; empty when the module reads no KMS health."
  value       = try(data.kmshealth_kms_plugin_health.this[0].active_kek_ids, {})
}

output "kms_nodes" {
  description = "Per-node KMS health, by node name: `status` (healthy, stale, error, unhealthy, invalid or missing), `stale`, `problem` (empty when healthy) and `plugins` (`key_id`, `kek_id`, `status`, `detail`, by keyID). Probe times are left out so that an unchanged cluster plans no output change; read them from the `kmshealth_kms_plugin_health` data source."
  value = !local.read_kms_health ? {} : {
    for n in data.kmshealth_kms_plugin_health.this[0].nodes : n.name => {
      status  = n.status
      stale   = n.stale
      problem = n.problem
      plugins = [for p in n.plugins : { key_id = p.key_id, kek_id = p.kek_id, status = p.status, detail = p.detail }]
    }
  }
}

output "webhook_ca_bundles" {
  description = "Per entry of `webhook_ca_bundles` (its `<kind>/<name>` key): `fingerprint_sha256` (hex SHA-256 of the live caBundle: a change between plans means drift or a rotated source), `not_after` (earliest certificate expiry, RFC 3339: alert on it), `certificate_count`, and `source`, the authoritative `<Kind>/<namespace>/<name>/<key>` the reconciler restores it from."
  value = {
    for key, r in kmshealth_webhook_cabundle.this : key => {
      fingerprint_sha256 = r.fingerprint_sha256
      not_after          = r.not_after
      certificate_count  = r.certificate_count
      source             = r.ca_bundle_source
    }
  }
}

output "ca_bundles" {
  description = "Per APIService (the keys of `apiservices`): `fingerprint_sha256` (hex SHA-256 of the live caBundle: a change between plans means drift or a rotated source), `not_after` (earliest certificate expiry, RFC 3339: alert on it), `certificate_count`, and `source`, the authoritative `<Kind>/<namespace>/<name>/<key>` the reconciler restores it from."
  value = {
    for name, r in kmshealth_apiservice_cabundle.this : name => {
      fingerprint_sha256 = r.fingerprint_sha256
      not_after          = r.not_after
      certificate_count  = r.certificate_count
      source             = r.ca_bundle_source
    }
  }
}

output "tls_profiles" {
  description = "Per entry of `tls_profiles`: `hash` (SHA-256 of profile.json, the value of the kmshealth.io/tls-profile-hash pod-template annotation on its rollout targets), `configmap` (`<namespace>/<name>` to mount), `min_tls_version`, `cipher_suites` (IANA), `groups`, `component_args` (the `--tls-*` flags of a Kubernetes component) and `is_openshift`, for workloads that take them as values instead of API calls."
  value = {
    for k, p in kmshealth_tls_profile_configmap.this : k => {
      hash            = p.hash
      configmap       = "${p.namespace}/${p.name}"
      min_tls_version = p.min_tls_version
      cipher_suites   = p.cipher_suites
      groups          = p.groups
      component_args  = p.component_args
      is_openshift    = p.is_openshift
    }
  }
}

output "reconciler_metrics_service" {
  description = "DNS name of the Service in front of the reconciler's Prometheus `/metrics` (HTTPS port 8443; the scraper's token needs `get` on the `/metrics` non-resource URL); null when `reconciler = null`."
  value       = var.reconciler == null ? null : "${kmshealth_reconciler.this[0].metrics_service}.${kmshealth_reconciler.this[0].namespace}.svc"
}

output "reconciler_service_account" {
  description = "`<namespace>/<name>` of the reconciler's ServiceAccount; null when `reconciler = null`."
  value       = var.reconciler == null ? null : "${kmshealth_reconciler.this[0].namespace}/${kmshealth_reconciler.this[0].service_account}"
}

output "kms_target" {
  description = "The object the reporters write to, the reconciler rolls up on and the health is read from, `<group>/<version>/<resource>/<name>`."
  value       = var.reporter == null ? coalesce(local.kms_target, "kmshealth.io/v1alpha1/kmshealths/cluster") : kmshealth_reporter.this[0].target
}

output "rbac_proxy_sidecars" {
  description = "Per workload of `rbac_proxy_sidecars`, by `<kind>/<namespace>/<name>`: `service_account` (bound to `system:auth-delegator`: the sidecar reviews tokens with it), `config_hash` (the proxy config's SHA-256, on the pod template) and `listen_port` callers reach the workload's API on."
  value = {
    for k, s in kmshealth_rbac_proxy_sidecar.this : k => {
      service_account = s.service_account_name
      config_hash     = s.config_hash
      listen_port     = s.listen_port
    }
  }
}

output "kms_reencryption" {
  description = "The re-encryption of `kms_reencryption`: its `id` (`<namespace>/<name>`, what `kms_retire.reencryption` takes), the `path` it took (`StorageVersionMigration` or `Rewrite`), `finished_at` (null until every resource is done) and `objects` rewritten per resource. Null when `kms_reencryption = null`."
  value = var.kms_reencryption == null ? null : {
    id          = kmshealth_kms_reencryption.this[0].id
    path        = kmshealth_kms_reencryption.this[0].path
    finished_at = kmshealth_kms_reencryption.this[0].finished_at
    objects     = kmshealth_kms_reencryption.this[0].objects
  }
}

output "kms_retire_ready" {
  description = "Whether the old key of `kms_retire` may be destroyed, as far as the kube-apiserver the provider reaches can prove: the re-encryption finished under the key it writes with, it started after that, and it decrypted nothing with the old key since. `false` when `kms_retire = null`. With several kube-apiservers, check each (see the key rotation guide)."
  value       = try(data.kmshealth_kms_key_usage.this[0].retire_ready, false)
}

output "kms_retire_reason" {
  description = "Why `kms_retire_ready` is what it is, and what to do next (e.g. restart kube-apiserver, re-encrypt again); use it as the `error_message` of the precondition that guards destroying the key."
  value       = try(data.kmshealth_kms_key_usage.this[0].retire_reason, "kms_retire is not set: nothing is judged")
}

output "kms_key_usage" {
  description = "Per key ID the plugins report (and the key to retire, and the re-encryption's key): `active` (kube-apiserver writes with it), `in_use` (it decrypted an object with it since it started) and `from_storage` (how many). Empty when `kms_retire = null`. Counts are since the kube-apiserver's start, so they change between plans; read them for a runbook, not as a trigger."
  value = var.kms_retire == null ? {} : {
    for k in data.kmshealth_kms_key_usage.this[0].keys : k.key_id => {
      active       = k.active
      in_use       = k.in_use
      from_storage = k.from_storage
    }
  }
}
