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

variable "reporter_namespace" {
  description = "Namespace of the KMS health reporter DaemonSet (it mounts the plugin socket directory from the host)."
  type        = string
  default     = "kube-system"
}

variable "kms_sockets" {
  description = "KMS v2 plugin endpoints on each control-plane node, unix:///var/run/kmsplugin/kms-<keyID>.sock; null probes every socket in /var/run/kmsplugin."
  type        = list(string)
  default     = null
}

variable "kms_max_staleness" {
  description = "How old a node's last KMS check may be before it counts as stale (4 × the reporter's probe interval)."
  type        = string
  default     = "2m"
}

variable "control_plane_nodes" {
  description = "Nodes that must report KMS health; null means every node that has reported."
  type        = list(string)
  default     = null
}

variable "rotate_kek_to" {
  description = "Set to rotate the key encryption key; the plan fails unless every node is ready for rotation."
  type        = string
  default     = null
}

variable "wait_for_rollout" {
  description = "Wait until the reconciler's and the reporters' pods run, failing at once with a pod's own reason when one cannot start. Set false where no node can run them yet (e.g. while the control plane is being bootstrapped)."
  type        = bool
  default     = true
}

variable "tls_profile" {
  description = "Where the TLS security profile ConfigMap (profile.json) goes, and the workloads (Deployment, StatefulSet or DaemonSet, each existing) rolled when the profile changes; null: no profile ConfigMap."
  type = object({
    namespace       = string
    name            = optional(string, "tls-profile")
    source          = optional(string, "static")
    rollout_targets = optional(list(object({ kind = string, namespace = string, name = string })), [])
  })
  default = null
}

variable "tls_profile_type" {
  description = "With tls_profile.source = \"static\": Old, Intermediate or Modern."
  type        = string
  default     = "Intermediate"
}

variable "protected_api" {
  description = "A workload (Deployment, StatefulSet or DaemonSet, existing) whose HTTP API, served on 127.0.0.1:upstream_port, gets kube-rbac-proxy in front: callers need RBAC get on services/proxy <name> in <namespace>, except on ignore_paths; null: none."
  type = object({
    kind          = optional(string, "Deployment")
    namespace     = string
    name          = string
    upstream_port = optional(number, 8080)
    listen_port   = optional(number, 8443)
    health_port   = optional(number, 8444)
    ignore_paths  = optional(list(string), ["/healthz"])
  })
  default = null
}
