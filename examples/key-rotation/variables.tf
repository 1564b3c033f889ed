variable "kubeconfig_path" {
  description = "Kubeconfig of the cluster whose KMS key is rotated."
  type        = string
  default     = "~/.kube/config"
}

variable "kms_sockets" {
  description = "The KMS v2 plugin sockets on each control-plane node, as the EncryptionConfiguration names them."
  type        = list(string)
  default     = ["unix:///var/run/kmsplugin/kms-1.sock"]
}

variable "control_plane_nodes" {
  description = "Every control-plane node, so that one whose reporter is not running fails the gate."
  type        = list(string)
  default     = ["cp-1", "cp-2", "cp-3"]
}

variable "new_kek_id" {
  description = "Step 2: the key encryption key to rotate to (stands in for your KMS's key version)."
  type        = string
  default     = "kek-2026-11"
}

variable "write_plugin_key_id" {
  description = "The keyID (socket number) of the plugin kube-apiserver writes with: the first KMS provider of the EncryptionConfiguration."
  type        = string
  default     = "1"
}

variable "encrypted_resources" {
  description = "Step 3: every resource the EncryptionConfiguration encrypts, as it spells them."
  type        = list(string)
  default     = ["secrets", "configmaps"]
}

variable "retire_key_id" {
  description = "Step 4: the old key encryption key to destroy, once the re-encryption has finished; null until then."
  type        = string
  default     = null
}
