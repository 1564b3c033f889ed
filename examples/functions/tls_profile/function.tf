# The flags of a Go component under OpenShift's Intermediate profile,
# resolved at plan time by the same code kmshealth_tls_profile_configmap
# uses, so they match the profile.json a ConfigMap of that profile holds.
locals {
  intermediate = provider::kmshealth::tls_profile("Intermediate")

  custom = provider::kmshealth::tls_profile("Custom", {
    min_tls_version = "VersionTLS12"
    ciphers         = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"]
    groups          = ["X25519", "secp256r1"]
  })

  # The same profile, keeping only what FIPS approves.
  intermediate_fips = provider::kmshealth::tls_profile("Intermediate", { fips = true })
}

# --tls-min-version, --tls-cipher-suites and --tls-curve-preferences, in the
# spellings Kubernetes components take.
output "component_flags" {
  value = local.intermediate.component_args
}

output "fips_dropped" {
  value = local.intermediate_fips.fips_dropped
}

# The rollout annotation's value, for a workload that mounts a profile.json
# of this profile.
output "custom_profile_hash" {
  value = local.custom.hash
}
