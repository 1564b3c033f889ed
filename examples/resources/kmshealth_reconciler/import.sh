# An installation is imported by <namespace>/<name>; image, replicas and
# resources are read back from the Deployment, create_namespace from the
# namespace's labels, and what it keeps (ca_bundles, webhook_ca_bundles,
# tls_profiles, rbac_proxy_sidecars) from its record ConfigMap.
terraform import kmshealth_reconciler.this kmshealth-system/kmshealth-reconciler
