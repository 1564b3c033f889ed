# An object whose caBundle kmshealth already manages (it carries the
# kmshealth.io/ca-bundle-source annotation) is imported by <kind>/<name>;
# the source (or the inline bundle) and the webhooks whose caBundle
# kmshealth owns are read back from the cluster.
terraform import kmshealth_webhook_cabundle.cert_manager ValidatingWebhookConfiguration/cert-manager-webhook
