# A re-encryption is imported by <namespace>/<name> of its record (the
# ConfigMap kmshealth-reencryption-<name>); the key, resources and settings
# of the recorded run are read back.
terraform import kmshealth_kms_reencryption.this kube-system/kms
