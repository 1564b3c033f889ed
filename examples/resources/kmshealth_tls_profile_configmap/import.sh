# A profile ConfigMap is imported by <namespace>/<name>; the profile (as an
# explicit profile block, or source = "cluster") and the rollout targets are
# read back from the ConfigMap.
terraform import kmshealth_tls_profile_configmap.web web/tls-profile
