output "ca_bundle_fingerprint_sha256" {
  description = "SHA-256 of the live caBundle."
  value       = module.cluster_bootstrap.ca_bundles[var.apiservice_name].fingerprint_sha256
}

output "ca_bundle_not_after" {
  description = "Earliest certificate expiry in the live caBundle."
  value       = module.cluster_bootstrap.ca_bundles[var.apiservice_name].not_after
}

output "ca_bundle_source" {
  description = "The authoritative object the reconciler restores the caBundle from."
  value       = module.cluster_bootstrap.ca_bundles[var.apiservice_name].source
}

output "reconciler_metrics_service" {
  description = "Service that exposes the reconciler's Prometheus metrics on port 8443."
  value       = module.cluster_bootstrap.reconciler_metrics_service
}

output "kms_plugin_health" {
  description = "KMS v2 plugin health as the module reads it: the gate, and one line per node (keyID:status:kekID per plugin)."
  value = {
    healthy         = module.cluster_bootstrap.kms_healthy
    rotation_ready  = module.cluster_bootstrap.rotation_ready
    degraded_reason = module.cluster_bootstrap.kms_degraded_reason
    active_kek_ids  = module.cluster_bootstrap.kms_active_kek_ids
    nodes = [
      for name, n in module.cluster_bootstrap.kms_nodes :
      format("%-12s %-9s %s", name, n.status, join(" ", [for p in n.plugins : "kms-${p.key_id}:${p.status}:${coalesce(p.kek_id, "-")}"]))
    ]
  }
}

output "tls_profile" {
  description = "The TLS profile workloads take as values: its hash (on their pod templates), minimum version, Go cipher suites and whether the cluster is OpenShift."
  value = var.tls_profile == null ? null : {
    hash            = module.cluster_bootstrap.tls_profiles["default"].hash
    min_tls_version = module.cluster_bootstrap.tls_profiles["default"].min_tls_version
    cipher_suites   = module.cluster_bootstrap.tls_profiles["default"].cipher_suites
    is_openshift    = module.cluster_bootstrap.tls_profiles["default"].is_openshift
  }
}

output "protected_api" {
  description = "The kube-rbac-proxy in front of protected_api: the ServiceAccount it reviews tokens as and the port callers reach the API on."
  value       = var.protected_api == null ? null : one(values(module.cluster_bootstrap.rbac_proxy_sidecars))
}
