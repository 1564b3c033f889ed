# The metrics API of the "web" Deployment, behind kube-rbac-proxy: only
# callers whose RBAC allows `get` on services/proxy "web" in "shop" reach it,
# over HTTPS with the cluster's TLS profile. The app listens on
# 127.0.0.1:8080 only; the proxy serves port 8443 of the pod.
resource "kmshealth_tls_profile_configmap" "shop" {
  namespace = "shop"
  name      = "tls-profile"
}

resource "kmshealth_rbac_proxy_sidecar" "web" {
  target {
    kind      = "Deployment" # Deployment | StatefulSet | DaemonSet
    namespace = "shop"
    name      = "web"
  }

  upstream_port = 8080 # http://127.0.0.1:8080/ inside the pod
  listen_port   = 8443

  # The whole TLS profile resource: its min_tls_version and cipher_suites.
  tls_profile     = kmshealth_tls_profile_configmap.shop
  tls_secret_name = "web-metrics-tls" # a kubernetes.io/tls Secret, e.g. from cert-manager

  authorization {
    resource_attributes {
      namespace   = "shop"
      api_group   = "" # the core group
      resource    = "services"
      subresource = "proxy"
      name        = "web"
    }
  }
  allow_paths = ["/metrics"]

  # Adds port 8443 ("kmshealth-rbac-proxy") to this Service, nothing else.
  service_name = "web"

  network_policy {
    enabled                 = true
    from_namespace_selector = { match_labels = { "kubernetes.io/metadata.name" = "monitoring" } }
    from_pod_selector       = { match_labels = { "app.kubernetes.io/name" = "prometheus" } }
  }

  resources {
    requests = { cpu = "5m", memory = "32Mi" }
    limits   = { memory = "64Mi" }
  }

  wait_for_rollout = true
  timeouts {
    create = "5m"
  }
}

# One query parameter selects the namespace the caller must be allowed in:
# GET /metrics?namespace=a is authorized as `get` on pods in "a".
resource "kmshealth_rbac_proxy_sidecar" "tenant_metrics" {
  target {
    kind      = "StatefulSet"
    namespace = "observability"
    name      = "tenant-metrics"
  }
  upstream_port = 9090

  authorization {
    resource_attributes {
      namespace = "{{ .Value }}"
      resource  = "pods"
    }
    rewrites {
      by_query_parameter = "namespace"
    }
  }
  ignore_paths = ["/healthz"]
}
