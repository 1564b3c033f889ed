# An installation is imported by <namespace>/<name>; image, replicas,
# resources, create_namespace and the CA bundle sources are read back from
# the Deployment, the namespace's labels and the sources Roles.
terraform import kmshealth_reconciler.this kmshealth-system/kmshealth-reconciler
