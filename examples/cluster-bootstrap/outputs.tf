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
