# The flags of a Go component under OpenShift's Intermediate profile,
# resolved at plan time by the same code kmshealth_tls_profile_configmap
# uses, so they match the profile.json a ConfigMap of that profile holds.
locals {
  intermediate = provider::kmshealth::tls_profile("Intermediate")

  custom = provider::kmshealth::tls_profile("Custom", {
    min_tls_version = "VersionTLS12"
    ciphers         = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"]
    curves          = ["X25519", "secp256r1"]
  })
}

output "component_flags" {
  value = [
    "--tls-min-version=${local.intermediate.min_tls_version}",
    "--tls-cipher-suites=${join(",", local.intermediate.cipher_suites)}",
  ]
}

# The rollout annotation's value, for a workload that mounts a profile.json
# of this profile.
output "custom_profile_hash" {
  value = local.custom.hash
}
