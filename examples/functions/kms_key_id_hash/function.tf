# The key_id_hash label kube-apiserver gives a KMS v2 key ID in its
# apiserver_envelope_encryption_key_id_hash_* metrics: a query for the
# API servers that still read data with the old key after a rotation.
variable "old_kek_id" {
  type        = string
  description = "The key ID the KMS v2 plugin's Status returned before the rotation."
  default     = "kek-2026-05"
}

output "old_key_reads_query" {
  value = "sum by (apiserver_id_hash) (rate(apiserver_envelope_encryption_key_id_hash_total{transformation_type=\"from_storage\",key_id_hash=\"${provider::kmshealth::kms_key_id_hash(var.old_kek_id)}\"}[1h]))"
}
