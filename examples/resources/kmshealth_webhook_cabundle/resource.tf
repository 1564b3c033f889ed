# The caBundle of every webhook of cert-manager's own validating webhook
# configuration, from the Secret that holds its CA: when the CA rotates, the
# next plan shows the new fingerprint and the apply carries it to every
# webhook. Webhooks the configuration gains later are covered too.
resource "kmshealth_webhook_cabundle" "cert_manager" {
  kind = "ValidatingWebhookConfiguration"
  name = "cert-manager-webhook"

  source {
    kind      = "Secret"
    namespace = "cert-manager"
    name      = "cert-manager-webhook-ca"
    key       = "ca.crt"
  }
}

# Only the named webhooks of a mutating configuration; the others keep
# whatever their installer wrote.
resource "kmshealth_webhook_cabundle" "sidecar_injector" {
  kind     = "MutatingWebhookConfiguration"
  name     = "sidecar-injector"
  webhooks = ["inject.sidecar.example.com"]

  source {
    kind      = "ConfigMap"
    namespace = "sidecar-system"
    name      = "injector-ca"
    key       = "ca.crt"
  }
}

# A CRD's conversion webhook (its spec.conversion.strategy must be Webhook).
resource "kmshealth_webhook_cabundle" "widgets" {
  kind = "CustomResourceDefinition"
  name = "widgets.example.com"

  source {
    kind      = "Secret"
    namespace = "widgets-system"
    name      = "widgets-conversion-tls"
    key       = "ca.crt"
  }
}

# The reconciler keeps all three between applies.
resource "kmshealth_reconciler" "this" {
  namespace = "kmshealth-system"
  webhook_ca_bundles = {
    for r in [kmshealth_webhook_cabundle.cert_manager, kmshealth_webhook_cabundle.sidecar_injector, kmshealth_webhook_cabundle.widgets] :
    r.id => { source = r.ca_bundle_source, webhooks = r.webhooks }
  }
}

# Alert before the CA expires.
output "cert_manager_webhook_ca_not_after" {
  value = kmshealth_webhook_cabundle.cert_manager.not_after
}
