output "rotation_ready" {
  description = "Step 1: whether the key may be rotated now."
  value       = module.cluster_bootstrap.rotation_ready
}

output "reencryption" {
  description = "Step 3: the run's path and when it finished (null while unfinished)."
  value = {
    key_id      = kmshealth_kms_reencryption.this.key_id
    path        = kmshealth_kms_reencryption.this.path
    finished_at = kmshealth_kms_reencryption.this.finished_at
  }
}

output "retire" {
  description = "Step 4: whether the old key may be destroyed, why, and per key what kube-apiserver still reads with it."
  value = {
    ready  = module.cluster_bootstrap.kms_retire_ready
    reason = module.cluster_bootstrap.kms_retire_reason
    keys   = module.cluster_bootstrap.kms_key_usage
  }
}
