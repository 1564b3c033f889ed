# The rotation gate: read during the plan, it fails the plan unless every
# control-plane node's KMS plugins are healthy, fresh and agree on the key.
data "kmshealth_kms_plugin_health" "this" {
  require_healthy = true
}

# After the plugins moved to a new key encryption key, re-encrypt every
# Secret and ConfigMap under it. key_id is the trigger: the kekID every node
# reports for plugin 1 (kms-1.sock), so the next rotation plans the next run.
resource "kmshealth_kms_reencryption" "this" {
  name      = "kms"
  key_id    = data.kmshealth_kms_plugin_health.this.active_kek_ids["1"]
  resources = ["secrets", "configmaps"] # what your EncryptionConfiguration encrypts

  timeouts {
    create = "2h"
    update = "2h"
  }
}

output "reencrypted" {
  value = kmshealth_kms_reencryption.this.objects
}
