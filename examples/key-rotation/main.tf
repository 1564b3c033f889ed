# A KMS v2 key rotation carried to the end, in four steps a platform repo
# applies in order (see the "Key rotation" guide):
#
#   1. gate      the plugins on every control-plane node are healthy and agree
#                on the key (module output rotation_ready);
#   2. rotate    your KMS (or the plugin's configuration) switches to the new
#                key encryption key; the plugins report it as their kekID;
#   3. re-encrypt every stored object under the new key
#                (kmshealth_kms_reencryption, triggered by the new kekID);
#   4. retire    destroy the old key only when kube-apiserver proves that no
#                stored object needs it any more (module output
#                kms_retire_ready, from kmshealth_kms_key_usage).

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    kmshealth = {
      source = "kmshealth/kmshealth"
    }
  }
}

provider "kmshealth" {
  config_path = var.kubeconfig_path
}

module "cluster_bootstrap" {
  # In a platform repo:
  # source = "git::https://github.com/kmshealth/terraform-provider-kmshealth.git//modules/cluster-bootstrap?ref=v0.1.0"
  source = "../../modules/cluster-bootstrap"

  # A reporter on every control-plane node probes each local KMS v2 plugin.
  reporter = {
    kms_sockets = var.kms_sockets
  }

  kms_health = {
    expected_nodes = var.control_plane_nodes
  }

  # Step 4: set retire_key_id once the re-encryption has finished.
  kms_retire = var.retire_key_id == null ? null : {
    key_id       = var.retire_key_id
    reencryption = kmshealth_kms_reencryption.this.id
  }
}

# Step 2 stands in here: whatever rotates the key encryption key (a new
# cloud KMS key version, the plugin's configuration, ...) gets this
# precondition, so the plan stops unless the gate is green.
resource "terraform_data" "rotate_kek" {
  input = var.new_kek_id

  lifecycle {
    precondition {
      condition     = module.cluster_bootstrap.rotation_ready
      error_message = "KMS plugins are not ready for key rotation: ${join("; ", module.cluster_bootstrap.kms_problems)}"
    }
  }
}

# Step 3: re-encrypt under the key the write plugin reports now. A new kekID
# plans a new run; an interrupted apply resumes where it stopped. Apply
# refuses to write while the health gate is not green.
resource "kmshealth_kms_reencryption" "this" {
  name      = "rotate"
  namespace = "kube-system"
  key_id    = module.cluster_bootstrap.kms_active_kek_ids[var.write_plugin_key_id]
  resources = var.encrypted_resources

  lifecycle {
    precondition {
      condition     = contains(keys(module.cluster_bootstrap.kms_active_kek_ids), var.write_plugin_key_id)
      error_message = "The nodes do not agree on the key of plugin ${var.write_plugin_key_id} yet: ${join("; ", module.cluster_bootstrap.kms_problems)}"
    }
  }
}

# Step 4 stands in here: whatever destroys the old key (schedules the cloud
# KMS key version for deletion, removes it from the plugin) gets this
# precondition. kms_retire_ready turns true only after kube-apiserver
# restarted after the re-encryption finished and read nothing with the old
# key; with several kube-apiservers, check each one (see the guide).
resource "terraform_data" "retire_old_kek" {
  count = var.retire_key_id == null ? 0 : 1

  input = var.retire_key_id

  lifecycle {
    precondition {
      condition     = module.cluster_bootstrap.kms_retire_ready
      error_message = "Key ${coalesce(var.retire_key_id, "-")} may not be destroyed yet: ${module.cluster_bootstrap.kms_retire_reason}"
    }
  }
}
