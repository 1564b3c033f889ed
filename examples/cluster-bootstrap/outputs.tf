output "ca_bundle_fingerprint_sha256" {
  description = "SHA-256 of the live caBundle."
  value       = kmshealth_apiservice_cabundle.this.fingerprint_sha256
}

output "ca_bundle_not_after" {
  description = "Earliest certificate expiry in the live caBundle."
  value       = kmshealth_apiservice_cabundle.this.not_after
}

output "ca_bundle_source" {
  description = "The authoritative object the reconciler restores the caBundle from."
  value       = kmshealth_apiservice_cabundle.this.ca_bundle_source
}

output "reconciler_metrics_service" {
  description = "Service that exposes the reconciler's Prometheus metrics on port 8080."
  value       = "${kmshealth_reconciler.this.metrics_service}.${kmshealth_reconciler.this.namespace}.svc"
}

output "kms_plugin_health" {
  description = "KMS v2 plugin health as the data source reads it: the gate, and one line per node (keyID:status:kekID per plugin)."
  value = {
    healthy         = data.kmshealth_kms_plugin_health.this.healthy
    rotation_ready  = data.kmshealth_kms_plugin_health.this.rotation_ready
    degraded_reason = data.kmshealth_kms_plugin_health.this.degraded_reason
    active_kek_ids  = data.kmshealth_kms_plugin_health.this.active_kek_ids
    nodes = [
      for n in data.kmshealth_kms_plugin_health.this.nodes :
      format("%-12s %-9s %s", n.name, n.status, join(" ", [for p in n.plugins : "kms-${p.key_id}:${p.status}:${coalesce(p.kek_id, "-")}"]))
    ]
  }
}

output "tls_profile" {
  description = "The TLS profile workloads take as values: its hash (on their pod templates), minimum version, Go cipher suites and whether the cluster is OpenShift."
  value = var.tls_profile == null ? null : {
    hash            = kmshealth_tls_profile_configmap.this[0].hash
    min_tls_version = kmshealth_tls_profile_configmap.this[0].min_tls_version
    cipher_suites   = kmshealth_tls_profile_configmap.this[0].cipher_suites
    is_openshift    = kmshealth_tls_profile_configmap.this[0].is_openshift
  }
}
