variable "kubeconfig_path" {
  description = "Path of the kubeconfig for the cluster to harden."
  type        = string
}

variable "apiservice_name" {
  description = "The aggregated APIService whose caBundle must not drift, e.g. v1beta1.metrics.k8s.io."
  type        = string
}

variable "ca_bundle" {
  description = "Inline PEM CA bundle. Ignored when ca_source is set."
  type        = string
  default     = null
}

variable "ca_source" {
  description = "The Secret or ConfigMap key that holds the CA bundle, e.g. one cert-manager keeps."
  type = object({
    kind      = string
    namespace = string
    name      = string
    key       = string
  })
  default = null

  validation {
    condition     = var.ca_source == null || contains(["Secret", "ConfigMap"], try(var.ca_source.kind, ""))
    error_message = "ca_source.kind must be \"Secret\" or \"ConfigMap\"."
  }
}

variable "reconciler_namespace" {
  description = "Namespace of the in-cluster reconciler."
  type        = string
  default     = "kmshealth-system"
}

variable "create_reconciler_namespace" {
  description = "Create (and on destroy delete) the reconciler's namespace."
  type        = bool
  default     = true
}

variable "reconciler_image" {
  description = "Reconciler image; null means the image whose tag is the provider's version."
  type        = string
  default     = null
}
