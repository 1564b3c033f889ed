# During a CA rotation, trust the old and the new CA at once: one bundle,
# each certificate once, old first. Pass "" for the new CA until it exists.
variable "old_ca" {
  type = string
}

variable "new_ca" {
  type    = string
  default = ""
}

resource "kmshealth_apiservice_cabundle" "metrics" {
  apiservice_name = "v1beta1.metrics.k8s.io"
  ca_bundle       = provider::kmshealth::cabundle(var.old_ca, var.new_ca)
}
