# The caBundles the reconciler keeps true between applies: one resource per
# aggregated API, each taking its CA from the Secret that holds it.
resource "kmshealth_apiservice_cabundle" "this" {
  for_each = {
    "v1beta1.metrics.k8s.io"             = "metrics-server-tls"
    "v1alpha1.data.packaging.carvel.dev" = "packaging-api-tls"
  }

  apiservice_name = each.key

  source {
    kind      = "Secret"
    namespace = "kube-system"
    name      = each.value
    key       = "ca.crt"
  }
}

# The reconciler, in a namespace of its own. It keeps exactly the APIServices
# named above, may patch those and read their Secrets (RBAC resourceNames),
# and nothing else.
resource "kmshealth_reconciler" "this" {
  namespace        = "kmshealth-system"
  create_namespace = true

  ca_bundles = { for r in kmshealth_apiservice_cabundle.this : r.apiservice_name => r.ca_bundle_source }

  # Optional: the defaults are 2 replicas of
  # ghcr.io/kmshealth/terraform-provider-kmshealth:<provider version>.
  # A mirror: the tag is the version without a "v" (releases tag 1.2.3),
  # pinned by digest.
  # image    = "registry.example.com/mirror/terraform-provider-kmshealth:1.2.3@sha256:<digest>"
  # replicas = 3

  # Optional, with prometheus-operator installed: a PodMonitor for the
  # reconciler pods, a scraper allowed nothing but GET /metrics, and the
  # reconciler's alert rules as a PrometheusRule (see the runbooks guide).
  # monitoring = { labels = { release = "kube-prometheus-stack" } }

  # Wait until the pods are available (needs nodes that can run them).
  wait_for_rollout = true
  timeouts {
    create = "5m"
    update = "5m"
  }
}

# Prometheus scrapes https://<metrics_service>.<namespace>.svc:8443/metrics
# with a ServiceAccount token allowed `get` on the /metrics non-resource URL.
output "reconciler_metrics_service" {
  value = "${kmshealth_reconciler.this.metrics_service}.${kmshealth_reconciler.this.namespace}.svc"
}
