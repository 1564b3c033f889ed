# Gate a key rotation on the KMS v2 plugins of every control-plane node:
# the plan stops unless each node reported recently, each plugin is healthy
# and all nodes agree on the active key encryption key (kekID) per keyID.
data "kmshealth_kms_plugin_health" "this" {
  # Defaults: the KMSHealth object "cluster" that kmshealth_reporter installs,
  # max_staleness = "2m" (4 × the reporter's 30s interval), and every node that
  # has reported. Listing the nodes also catches one whose reporter is not running.
  expected_nodes = ["cp-1", "cp-2", "cp-3"]

  # Give a rotation still in progress time to converge (watched, not polled):
  # wait_timeout = "5m"

  # Or fail right here, naming each failing node, plugin and keyID:
  # require_healthy = true
}

# Stands in for whatever rotates the key encryption key (a new cloud KMS key
# version, an EncryptionConfiguration rollout, ...): give that resource the
# same precondition.
resource "terraform_data" "rotate_kek" {
  input = "kek-2026-05"

  lifecycle {
    precondition {
      condition     = data.kmshealth_kms_plugin_health.this.rotation_ready
      error_message = "KMS plugins are not ready for key rotation: ${join("; ", data.kmshealth_kms_plugin_health.this.problems)}"
    }
  }
}

# The key each keyID encrypts with, as every node reports it.
output "active_kek_ids" {
  value = data.kmshealth_kms_plugin_health.this.active_kek_ids
}
