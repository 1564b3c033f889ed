# After a rotation from kek-2026-05 to kek-2026-11 and a complete
# re-encryption run under the new key: may the old key be destroyed?
data "kmshealth_kms_key_usage" "this" {
  # The key to retire, and the kmshealth_kms_reencryption (namespace/name,
  # its id) that re-encrypted everything under the new key.
  retire_key_id = "kek-2026-05"
  reencryption  = "kube-system/rotate"
}

# Stands in for whatever destroys the old key (a cloud KMS key version
# scheduled for deletion, ...): it waits until kube-apiserver proves that
# no stored object needs the key.
resource "terraform_data" "destroy_old_kek" {
  input = "kek-2026-05"

  lifecycle {
    precondition {
      condition     = data.kmshealth_kms_key_usage.this.retire_ready
      error_message = "The old key is still needed: ${data.kmshealth_kms_key_usage.this.retire_reason}"
    }
  }
}

# Per key the plugins report: is it the one kube-apiserver writes with, and
# how often it decrypted with it since it started.
output "key_usage" {
  value = {
    for k in data.kmshealth_kms_key_usage.this.keys : k.key_id => {
      active       = k.active
      in_use       = k.in_use
      from_storage = k.from_storage
    }
  }
}
