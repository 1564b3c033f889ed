variable "apiservices" {
  description = <<-EOT
    The aggregated APIServices whose `spec.caBundle` must not drift, keyed by APIService name (`<version>.<group>`, e.g. `v1beta1.metrics.k8s.io`). Each must already exist with `spec.service` set. Give each exactly one CA source:

    - `source`: the Secret or ConfigMap key that holds the PEM (e.g. the `ca.crt` of a Secret cert-manager keeps), never modified; or
    - `ca_bundle`: inline PEM, kept in a ConfigMap `kmshealth-cabundle-<name>` in `bundle_namespace` (default `kube-system`);
    - `force_conflicts = true` takes `spec.caBundle` over from another field manager (an installer) on create; by default such a conflict stops the apply and names the manager.
  EOT
  type = map(object({
    ca_bundle = optional(string)
    source = optional(object({
      kind      = string
      namespace = string
      name      = string
      key       = string
    }))
    bundle_namespace = optional(string)
    force_conflicts  = optional(bool, false)
  }))
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for name in keys(var.apiservices) : can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$", name))])
    error_message = "apiservices: each key must be an APIService name, <version>.<group> such as v1beta1.metrics.k8s.io; not: ${join(", ", [for name in keys(var.apiservices) : name if !can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$", name))])}."
  }
  validation {
    condition     = alltrue([for a in values(var.apiservices) : (a.ca_bundle == null) != (a.source == null)])
    error_message = "apiservices: each APIService takes its CA from exactly one source: set either ca_bundle (inline PEM) or source (a Secret or ConfigMap key), not both and not neither. Fix: ${join(", ", [for name, a in var.apiservices : "apiservices[\"${name}\"] (${a.ca_bundle == null ? "neither is set" : "both are set"})" if(a.ca_bundle == null) == (a.source == null)])}."
  }
  validation {
    condition     = alltrue([for a in values(var.apiservices) : a.source == null || contains(["Secret", "ConfigMap"], try(a.source.kind, ""))])
    error_message = "apiservices: source.kind must be \"Secret\" or \"ConfigMap\". Fix: ${join(", ", [for name, a in var.apiservices : "apiservices[\"${name}\"].source.kind = \"${a.source.kind}\"" if a.source != null && !contains(["Secret", "ConfigMap"], try(a.source.kind, ""))])}."
  }
  validation {
    condition     = alltrue([for a in values(var.apiservices) : a.ca_bundle == null || can(regex("-----BEGIN CERTIFICATE-----", a.ca_bundle))])
    error_message = "apiservices: ca_bundle must be PEM holding at least one \"-----BEGIN CERTIFICATE-----\" block (the CA that signs the aggregated API server's serving certificate). Fix: ${join(", ", [for name, a in var.apiservices : "apiservices[\"${name}\"].ca_bundle" if a.ca_bundle != null && !can(regex("-----BEGIN CERTIFICATE-----", a.ca_bundle))])}."
  }
}

variable "webhook_ca_bundles" {
  description = <<-EOT
    The webhook configurations and CRD conversion webhooks whose caBundle must not drift, keyed by `<kind>/<name>`: `ValidatingWebhookConfiguration/<name>`, `MutatingWebhookConfiguration/<name>` or `CustomResourceDefinition/<plural>.<group>` (its `spec.conversion.strategy` must be `Webhook`). Each object must already exist. Give each exactly one CA source, as for `apiservices`:

    - `source`: the Secret or ConfigMap key that holds the PEM, never modified; or
    - `ca_bundle`: inline PEM, kept in a ConfigMap `kmshealth-cabundle-<validating|mutating|crd>-<name>` in `bundle_namespace` (default `kube-system`);
    - `webhooks`: the webhooks of a configuration whose caBundle to keep (default: every webhook); not for a CRD;
    - `force_conflicts = true` takes a caBundle over from another field manager on create.

    The reconciler, when installed, keeps them too, and its admission policy lets it change nothing of these objects but their caBundles.
  EOT
  type = map(object({
    ca_bundle = optional(string)
    source = optional(object({
      kind      = string
      namespace = string
      name      = string
      key       = string
    }))
    webhooks         = optional(set(string))
    bundle_namespace = optional(string)
    force_conflicts  = optional(bool, false)
  }))
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for k in keys(var.webhook_ca_bundles) : can(regex("^(ValidatingWebhookConfiguration|MutatingWebhookConfiguration|CustomResourceDefinition)/[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", k))])
    error_message = "webhook_ca_bundles: each key must be <kind>/<name> with kind ValidatingWebhookConfiguration, MutatingWebhookConfiguration or CustomResourceDefinition, e.g. ValidatingWebhookConfiguration/cert-manager-webhook; not: ${join(", ", [for k in keys(var.webhook_ca_bundles) : k if !can(regex("^(ValidatingWebhookConfiguration|MutatingWebhookConfiguration|CustomResourceDefinition)/[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", k))])}."
  }
  validation {
    condition     = alltrue([for w in values(var.webhook_ca_bundles) : (w.ca_bundle == null) != (w.source == null)])
    error_message = "webhook_ca_bundles: each entry takes its CA from exactly one source: set either ca_bundle (inline PEM) or source (a Secret or ConfigMap key), not both and not neither. Fix: ${join(", ", [for k, w in var.webhook_ca_bundles : "webhook_ca_bundles[\"${k}\"] (${w.ca_bundle == null ? "neither is set" : "both are set"})" if(w.ca_bundle == null) == (w.source == null)])}."
  }
  validation {
    condition     = alltrue([for w in values(var.webhook_ca_bundles) : w.source == null || contains(["Secret", "ConfigMap"], try(w.source.kind, ""))])
    error_message = "webhook_ca_bundles: source.kind must be \"Secret\" or \"ConfigMap\"."
  }
  validation {
    condition     = alltrue([for w in values(var.webhook_ca_bundles) : w.ca_bundle == null || can(regex("-----BEGIN CERTIFICATE-----", w.ca_bundle))])
    error_message = "webhook_ca_bundles: ca_bundle must be PEM holding at least one \"-----BEGIN CERTIFICATE-----\" block (the CA that signs the webhook server's serving certificate). Fix: ${join(", ", [for k, w in var.webhook_ca_bundles : "webhook_ca_bundles[\"${k}\"].ca_bundle" if w.ca_bundle != null && !can(regex("-----BEGIN CERTIFICATE-----", w.ca_bundle))])}."
  }
  validation {
    condition     = alltrue([for k, w in var.webhook_ca_bundles : w.webhooks == null || !startswith(k, "CustomResourceDefinition/")])
    error_message = "webhook_ca_bundles: webhooks may be set only for a webhook configuration; a CustomResourceDefinition has one conversion webhook. Fix: ${join(", ", [for k, w in var.webhook_ca_bundles : "webhook_ca_bundles[\"${k}\"].webhooks" if w.webhooks != null && startswith(k, "CustomResourceDefinition/")])}."
  }
}

variable "field_manager" {
  description = "Server-side apply field manager of the caBundles, and the one the reconciler writes them as. Keep the default `kmshealth` unless another kmshealth installation already manages these APIServices."
  type        = string
  default     = "kmshealth"
  nullable    = false

  validation {
    condition     = length(var.field_manager) > 0 && length(var.field_manager) <= 128
    error_message = "field_manager: must be 1 to 128 characters; the default is \"kmshealth\"."
  }
}

variable "reconciler" {
  description = <<-EOT
    The in-cluster reconciler that restores every caBundle of `apiservices` within milliseconds of an out-of-band overwrite, keeps every ConfigMap of `tls_profiles` (and the hash on its rollout targets) and every sidecar of `rbac_proxy_sidecars` between applies, and rolls the KMS health reports up into `KMSPluginsDegraded`. Installed by default, because a caBundle that only the next apply restores can drift; `null`: not installed (the caBundles, profiles and sidecars are then only restored by the next apply, and nothing rolls up KMS health).

    - `namespace` (default `kube-system`, which every cluster has) and `create_namespace` (default `false`, as on `kmshealth_reconciler`): the module creates no namespace unless asked. With `create_namespace = true` it creates `namespace` and deletes it on destroy; that delete waits until the namespace is gone, which never happens while any aggregated API of the cluster is unavailable.
    - `name` (default `kmshealth-reconciler`): also its leader-election Lease, so two module calls with different names can share a namespace.
    - `image`: null runs the image whose tag is the provider's version (a release build); set it for a mirror, pinned by digest.
    - `replicas` (default 2, one leads), `wait_for_rollout` (default `true`: the apply waits until the pods run and fails with a pod's own reason; set `false` while no node can run them), `admission_policy` (default `true`), `timeout` for create, update and delete (Go duration; default the resource's, 10m).
    - `monitoring` (default `null`, as on `kmshealth_reconciler`: off): with prometheus-operator installed, a PodMonitor for the reconciler pods, a scraper allowed nothing but `get` on `/metrics`, and with `rules` (default `true`) the reconciler's alerts as a PrometheusRule (caBundle expiring within 30 and 7 days, restore storm, no reconciler leading, reconcile errors); `labels` go on the PodMonitor and the PrometheusRule for your Prometheus' selectors. Without prometheus-operator the plan warns and nothing is written.
  EOT
  type = object({
    namespace        = optional(string, "kube-system")
    create_namespace = optional(bool, false)
    name             = optional(string)
    image            = optional(string)
    replicas         = optional(number)
    wait_for_rollout = optional(bool, true)
    admission_policy = optional(bool, true)
    timeout          = optional(string)
    monitoring = optional(object({
      labels = optional(map(string))
      rules  = optional(bool, true)
    }))
  })
  default = {}

  validation {
    condition     = var.reconciler == null || can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", var.reconciler.namespace)) && length(try(var.reconciler.namespace, "")) <= 63
    error_message = "reconciler.namespace: must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters), e.g. \"kmshealth-system\"."
  }
  validation {
    condition     = try(var.reconciler.replicas, null) == null || try(var.reconciler.replicas >= 1 && floor(var.reconciler.replicas) == var.reconciler.replicas, false)
    error_message = "reconciler.replicas: must be a whole number of at least 1 (default 2: one leads, the other takes over within the 15 s lease)."
  }
  validation {
    condition     = try(var.reconciler.timeout, null) == null || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$", var.reconciler.timeout))
    error_message = "reconciler.timeout: must be a Go duration such as \"10m\" or \"1h30m\"."
  }
}

variable "reporter" {
  description = <<-EOT
    The KMS v2 plugin health reporter: a DaemonSet on every control-plane node that probes each local plugin socket and writes one condition per node on the `KMSHealth` object `cluster` (by default also installing its CRD). Default `null`, not installed: it runs as root with a hostPath volume on the control-plane nodes, which only a cluster whose API server encrypts with KMS v2 plugins needs. `{}` installs it with the defaults below, and `kms_health` then reads its reports back.

    - `namespace` (default `kube-system`, where hostPath volumes are allowed; the resource has no default) must allow hostPath volumes (Pod Security `privileged`).
    - `kms_sockets`: the plugin endpoints of the API server's EncryptionConfiguration, each `unix:///var/run/kmsplugin/kms-<keyID>.sock`; or `socket_dir`, a node directory whose `kms-<keyID>.sock` are listed on every probe. Neither: every socket in `/var/run/kmsplugin`.
    - `probe_interval` (Go duration, at least 5s, default 30s): a report older than 4 times it is stale, so set `kms_health.max_staleness` to 4 times it.
    - `target`: another object the reports go to (`<group>/<version>/<resource>/<name>`, e.g. an OpenShift operator CR; then `install_crd = false`).
    - `wait_for_rollout` (default `true`), `admission_policy` (default `true`), `timeout` for create, update and delete (Go duration; default the resource's, 2m, which bounds the wait for the CRD to be served and the rollout).
    - `monitoring` (default `null`: off): as the reconciler's, for the reporter pods (series labelled with the pod's `node`), and with `rules` the KMS health alerts (KMS degraded, a node's report stale, plugins disagreeing on the key). Those read the reconciler's KMS aggregator series, so turn on `reconciler.monitoring` too; each alert is defined once with both on.
  EOT
  type = object({
    namespace        = optional(string, "kube-system")
    name             = optional(string)
    image            = optional(string)
    kms_sockets      = optional(list(string))
    socket_dir       = optional(string)
    probe_interval   = optional(string)
    node_selector    = optional(map(string))
    target           = optional(string)
    install_crd      = optional(bool)
    wait_for_rollout = optional(bool, true)
    admission_policy = optional(bool, true)
    timeout          = optional(string)
    monitoring = optional(object({
      labels = optional(map(string))
      rules  = optional(bool, true)
    }))
  })
  default = null

  validation {
    condition     = alltrue([for s in coalesce(try(var.reporter.kms_sockets, null), []) : can(regex("^unix:///var/run/kmsplugin/kms-[0-9]+\\.sock$", s))])
    error_message = "reporter.kms_sockets: each entry must be unix:///var/run/kmsplugin/kms-<keyID>.sock (the endpoint in the API server's EncryptionConfiguration, <keyID> a number); not: ${join(", ", [for s in coalesce(try(var.reporter.kms_sockets, null), []) : jsonencode(s) if !can(regex("^unix:///var/run/kmsplugin/kms-[0-9]+\\.sock$", s))])}."
  }
  validation {
    condition     = try(var.reporter.kms_sockets, null) == null || try(var.reporter.socket_dir, null) == null
    error_message = "reporter: set kms_sockets (the plugin endpoints) or socket_dir (a directory listed on every probe), not both."
  }
  validation {
    condition     = try(var.reporter.socket_dir, null) == null || can(regex("^/(var/)?run/kmsplugin(/.*)?$", var.reporter.socket_dir))
    error_message = "reporter.socket_dir: must be /var/run/kmsplugin or /run/kmsplugin, or a directory below them: the directory is mounted into pods that run as root."
  }
  validation {
    condition     = try(var.reporter.probe_interval, null) == null || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$", var.reporter.probe_interval))
    error_message = "reporter.probe_interval: must be a Go duration of at least 5s, such as \"30s\"."
  }
  validation {
    condition     = try(var.reporter.target, null) == null || can(regex("^[^/]*/[^/]+/[^/]+/[^/]+$", var.reporter.target))
    error_message = "reporter.target: must be <group>/<version>/<resource>/<name>, e.g. \"kmshealth.io/v1alpha1/kmshealths/cluster\"."
  }
  validation {
    condition     = try(var.reporter.timeout, null) == null || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$", var.reporter.timeout))
    error_message = "reporter.timeout: must be a Go duration such as \"10m\"."
  }
}

variable "kms_health" {
  description = <<-EOT
    How the module reads KMS v2 plugin health back (the `rotation_ready`, `kms_problems` and `kms_nodes` outputs): from the target of the reporter this call installs (`reporter.target`, else the `KMSHealth` object `cluster`), or, with `reporter = null`, from the object `target` names here (reporters installed elsewhere). With `reporter = null` and no `target`, or with `kms_health = null`, nothing is read and `rotation_ready` is `false`: turning the reporter off is one input.

    The read happens at plan time (the gate a key rotation's precondition checks fails the plan, not the apply), also when the reporter is updated, e.g. to the new image of a provider upgrade; only in the plan that creates the reporter (its target object does not exist yet), changes its `target`, or turns `kms_health` on is it deferred to the apply.

    - `max_staleness` (Go duration, default 2m = 4 times the reporter's default 30s interval): an older report makes its node stale; the reconciler's rollup uses the same value.
    - `expected_nodes`: the control-plane nodes that must report; null accepts every node that has reported, so a node whose reporter never started goes unnoticed. List them for a key-rotation gate.
    - `wait_timeout` (default none): when not ready, wait up to this long for the cluster to become ready.
  EOT
  type = object({
    target         = optional(string)
    max_staleness  = optional(string, "2m")
    expected_nodes = optional(list(string))
    wait_timeout   = optional(string)
  })
  default = {}

  validation {
    condition     = var.kms_health == null || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$", var.kms_health.max_staleness))
    error_message = "kms_health.max_staleness: must be a Go duration such as \"2m\" (4 times the reporter's probe_interval)."
  }
  validation {
    condition     = try(var.kms_health.wait_timeout, null) == null || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$", var.kms_health.wait_timeout))
    error_message = "kms_health.wait_timeout: must be a Go duration such as \"5m\"."
  }
  validation {
    condition     = try(var.kms_health.target, null) == null || can(regex("^[^/]*/[^/]+/[^/]+/[^/]+$", var.kms_health.target))
    error_message = "kms_health.target: must be <group>/<version>/<resource>/<name>, e.g. \"operator.openshift.io/v1/kubeapiservers/cluster\"."
  }
}

variable "tls_profiles" {
  description = <<-EOT
    TLS security profile ConfigMaps (`profile.json`) that workloads mount instead of calling the API server at startup, keyed by a name of your choice. Each:

    - `namespace` (required, must exist: the consuming workloads run there) and `name` (default `tls-profile`, a module convenience: the resource has no default);
    - `source`: `static` (default) uses `type`; `cluster` follows OpenShift's `APIServer` profile;
    - `type`: `Old`, `Intermediate` (default), `Modern` or `Custom` (then `custom = { min_tls_version, ciphers, groups }`);
    - `fips`: keep only what FIPS approves (NIST P-curves, AES-GCM suites);
    - `rollout_targets`: existing Deployments, StatefulSets or DaemonSets (`{ kind, namespace, name }`) whose pod template gets the profile's hash, so they roll when it changes.
  EOT
  type = map(object({
    namespace = string
    name      = optional(string, "tls-profile")
    source    = optional(string, "static")
    type      = optional(string, "Intermediate")
    custom = optional(object({
      min_tls_version = string
      ciphers         = optional(list(string))
      groups          = optional(list(string))
    }))
    fips = optional(bool)
    rollout_targets = optional(list(object({
      kind      = string
      namespace = string
      name      = string
    })), [])
  }))
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for p in values(var.tls_profiles) : contains(["Old", "Intermediate", "Modern", "Custom"], p.type)])
    error_message = "tls_profiles: type must be Old, Intermediate, Modern or Custom. Fix: ${join(", ", [for k, p in var.tls_profiles : "tls_profiles[\"${k}\"].type = \"${p.type}\"" if !contains(["Old", "Intermediate", "Modern", "Custom"], p.type)])}."
  }
  validation {
    condition     = alltrue([for p in values(var.tls_profiles) : contains(["static", "cluster"], p.source)])
    error_message = "tls_profiles: source must be \"static\" (the profile given by type) or \"cluster\" (OpenShift's APIServer profile). Fix: ${join(", ", [for k, p in var.tls_profiles : "tls_profiles[\"${k}\"].source = \"${p.source}\"" if !contains(["static", "cluster"], p.source)])}."
  }
  validation {
    condition     = alltrue([for p in values(var.tls_profiles) : (p.type == "Custom") == (p.custom != null) || p.source == "cluster"])
    error_message = "tls_profiles: custom settings go with type = \"Custom\", and type = \"Custom\" needs custom = { min_tls_version = \"VersionTLS12\", ... }. Fix: ${join(", ", [for k, p in var.tls_profiles : "tls_profiles[\"${k}\"]" if(p.type == "Custom") != (p.custom != null) && p.source != "cluster"])}."
  }
  validation {
    condition     = alltrue([for p in values(var.tls_profiles) : p.custom == null || contains(["VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13"], try(p.custom.min_tls_version, ""))])
    error_message = "tls_profiles: custom.min_tls_version must be VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13."
  }
  validation {
    condition     = alltrue(flatten([for p in values(var.tls_profiles) : [for t in p.rollout_targets : contains(["Deployment", "StatefulSet", "DaemonSet"], t.kind)]]))
    error_message = "tls_profiles: rollout_targets[].kind must be Deployment, StatefulSet or DaemonSet (apps/v1)."
  }
  validation {
    condition     = length(distinct([for p in values(var.tls_profiles) : "${p.namespace}/${p.name}"])) == length(var.tls_profiles)
    error_message = "tls_profiles: two entries name the same ConfigMap <namespace>/<name>; give each its own name."
  }
}

variable "rbac_proxy_sidecars" {
  description = <<-EOT
    kube-rbac-proxy in front of the HTTP API of existing workloads, one native sidecar each: every caller is authenticated with a TokenReview and authorized with a SubjectAccessReview; the config ConfigMap, the `system:auth-delegator` binding, an optional Service port and NetworkPolicy come with it. Each entry:

    - `kind` (`Deployment`, `StatefulSet` or `DaemonSet`), `namespace` and `name` of the workload, which must exist;
    - `upstream_port`: the port the workload serves on `127.0.0.1` (make it listen there only, or callers can bypass the proxy); `listen_port` (default 8443) and `health_port` (default 8643) of the proxy;
    - `authorization`: `resource_attributes` (`namespace`, `api_group` — empty for the core group —, `api_version`, `resource`, `subresource`, `name`) a caller's RBAC must allow, and `rewrites` (`by_query_parameter` or `by_http_header`) for `{{ .Value }}` in them; none: a non-resource check of the request path;
    - `allow_paths` (only these are served) or `ignore_paths` (served without any check);
    - `tls_secret_name`: a `kubernetes.io/tls` Secret whose certificate the proxy serves (default: self-signed); `tls_profile`: the key of an entry of `tls_profiles` whose minimum TLS version and cipher suites the listener takes;
    - `service_name` (an existing Service that gets the proxy's port), `network_policy` (`enabled`, `from_namespace_selector`, `from_pod_selector`: `{ match_labels = {...} }`), `resources` (`requests`, `limits`), `image` (default kube-rbac-proxy v0.22.1) and `proxy_version` (the kube-rbac-proxy release an image whose tag does not name one is built from; its flags are what the arguments are checked against), `wait_for_rollout` (default `false`), `insecure_listen` (plain HTTP, warned about), `timeout` for create, update and delete (Go duration; default the resource's, 10m).
    - `network_policy.enabled` defaults to `true` here, unlike the resource's `false`: the resource has the block whether or not a policy is wanted, whereas here giving `network_policy` at all is asking for one. Set `enabled = false` to remove it and keep the selectors written down.
  EOT
  type = list(object({
    kind          = string
    namespace     = string
    name          = string
    upstream_port = number
    listen_port   = optional(number)
    health_port   = optional(number)
    image         = optional(string)
    proxy_version = optional(string)
    authorization = optional(object({
      resource_attributes = optional(object({
        namespace   = optional(string)
        api_group   = optional(string)
        api_version = optional(string)
        resource    = optional(string)
        subresource = optional(string)
        name        = optional(string)
      }))
      rewrites = optional(object({
        by_query_parameter = optional(string)
        by_http_header     = optional(string)
      }))
    }))
    allow_paths     = optional(list(string))
    ignore_paths    = optional(list(string))
    tls_secret_name = optional(string)
    tls_profile     = optional(string)
    insecure_listen = optional(bool)
    service_name    = optional(string)
    network_policy = optional(object({
      enabled = optional(bool, true)
      from_namespace_selector = optional(object({
        match_labels      = optional(map(string))
        match_expressions = optional(list(object({ key = string, operator = string, values = optional(list(string)) })))
      }))
      from_pod_selector = optional(object({
        match_labels      = optional(map(string))
        match_expressions = optional(list(object({ key = string, operator = string, values = optional(list(string)) })))
      }))
    }))
    resources = optional(object({
      requests = optional(map(string))
      limits   = optional(map(string))
    }))
    wait_for_rollout = optional(bool)
    timeout          = optional(string)
  }))
  default  = []
  nullable = false

  validation {
    condition     = alltrue([for s in var.rbac_proxy_sidecars : contains(["Deployment", "StatefulSet", "DaemonSet"], s.kind)])
    error_message = "rbac_proxy_sidecars: kind must be Deployment, StatefulSet or DaemonSet (apps/v1). Fix: ${join(", ", [for i, s in var.rbac_proxy_sidecars : "rbac_proxy_sidecars[${i}].kind = \"${s.kind}\"" if !contains(["Deployment", "StatefulSet", "DaemonSet"], s.kind)])}."
  }
  validation {
    condition     = length(distinct([for s in var.rbac_proxy_sidecars : "${s.kind}/${s.namespace}/${s.name}"])) == length(var.rbac_proxy_sidecars)
    error_message = "rbac_proxy_sidecars: a workload is listed twice; give each <kind>/<namespace>/<name> one entry."
  }
  validation {
    condition = alltrue(flatten([for s in var.rbac_proxy_sidecars : [
      for p in [s.upstream_port, s.listen_port, s.health_port] : p == null || try(p >= 1 && p <= 65535 && floor(p) == p, false)
    ]]))
    error_message = "rbac_proxy_sidecars: upstream_port, listen_port and health_port must be whole numbers from 1 to 65535."
  }
  validation {
    condition     = alltrue([for s in var.rbac_proxy_sidecars : s.upstream_port != coalesce(s.listen_port, 8443)])
    error_message = "rbac_proxy_sidecars: listen_port (default 8443) must differ from upstream_port, the port the workload serves on 127.0.0.1. Fix: ${join(", ", [for i, s in var.rbac_proxy_sidecars : "rbac_proxy_sidecars[${i}] (${s.kind}/${s.namespace}/${s.name})" if s.upstream_port == coalesce(s.listen_port, 8443)])}."
  }
  validation {
    condition     = alltrue([for s in var.rbac_proxy_sidecars : s.allow_paths == null || s.ignore_paths == null])
    error_message = "rbac_proxy_sidecars: set allow_paths (only these paths are served) or ignore_paths (these are served unchecked), not both."
  }
  validation {
    condition     = alltrue([for s in var.rbac_proxy_sidecars : s.timeout == null || can(regex("^([0-9]+(\\.[0-9]+)?(h|m|s|ms))+$", s.timeout))])
    error_message = "rbac_proxy_sidecars: timeout must be a Go duration such as \"10m\"."
  }
}

variable "kms_reencryption" {
  description = <<-EOT
    The re-encrypt step of a KMS key rotation (gate → rotate → re-encrypt → retire): a `kmshealth_kms_reencryption` that rewrites every object of `resources` so each is stored under `key_id`, by StorageVersionMigration where the cluster runs it, else by a resumable rewrite. Its apply refuses unless the KMS health gate (the reporter's target) is green and kube-apiserver writes with `key_id`. Null (the default) installs none.

    - `name`: the run's name; its record is the ConfigMap `kmshealth-reencryption-<name>` in `namespace` (default `kube-system`).
    - `key_id`: the key to re-encrypt under, the new `kekID` (e.g. from the `kms_plugins` output once `rotation_ready` is true); a new value runs again.
    - `resources`: default `["secrets"]`: list what your EncryptionConfiguration encrypts (the API does not say).
    - `method`: `auto` (default), `storage_version_migration` or `rewrite`.

    `kms_retire.reencryption` defaults to this run.
  EOT
  type = object({
    name      = string
    namespace = optional(string, "kube-system")
    key_id    = string
    resources = optional(list(string), ["secrets"])
    method    = optional(string, "auto")
  })
  default = null

  validation {
    condition     = var.kms_reencryption == null || contains(["auto", "storage_version_migration", "rewrite"], try(var.kms_reencryption.method, "auto"))
    error_message = "kms_reencryption.method: must be auto, storage_version_migration or rewrite."
  }
}

variable "kms_retire" {
  description = <<-EOT
    The last step of a KMS key rotation (gate → rotate → re-encrypt → retire): whether the old key encryption key may be destroyed, read with `kmshealth_kms_key_usage` into the `kms_retire_ready`, `kms_retire_reason` and `kms_key_usage` outputs. Null (the default) reads nothing.

    - `key_id`: the old key ID to retire (the `kekID` the plugins reported before the rotation).
    - `reencryption`: `<namespace>/<name>` of the `kmshealth_kms_reencryption` that re-encrypted under the new key (its `id`); default: the run of `kms_reencryption`.

    The answer is one kube-apiserver's (the one the provider reaches), and it turns true only once that kube-apiserver restarted after the re-encryption finished: see the key rotation guide.
  EOT
  type = object({
    key_id       = string
    reencryption = optional(string)
  })
  default = null

  validation {
    condition     = try(var.kms_retire.reencryption, null) == null || can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[^/]+$", var.kms_retire.reencryption))
    error_message = "kms_retire.reencryption: must be <namespace>/<name> of a kmshealth_kms_reencryption, e.g. \"kube-system/rotate\" (its id)."
  }
}
