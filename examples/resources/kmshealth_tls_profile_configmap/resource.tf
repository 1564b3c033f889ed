# The cluster's TLS profile, resolved once into a ConfigMap the web
# workload mounts; the workload rolls when, and only when, the profile
# changes.
resource "kmshealth_tls_profile_configmap" "web" {
  namespace = "web"
  name      = "tls-profile"

  profile {
    type = "Intermediate" # Old | Intermediate | Modern | Custom
  }

  rollout_targets = [
    { kind = "Deployment", namespace = "web", name = "frontend" },
  ]
}

# A Custom profile: OpenSSL or IANA cipher names, and the key-exchange
# groups (as OpenShift names them) Go may use; with fips, only what FIPS
# approves is kept, and fips_dropped says what went.
resource "kmshealth_tls_profile_configmap" "strict" {
  namespace = "payments"
  name      = "tls-profile"

  profile {
    type = "Custom"
    custom {
      min_tls_version = "VersionTLS12"
      ciphers         = ["ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384"]
      groups          = ["secp384r1", "secp256r1"]
    }
  }

  fips = true
}

# On OpenShift: follow the cluster's APIServer profile (and tlsAdherence);
# a change there shows in the next plan and rolls the targets on apply.
resource "kmshealth_tls_profile_configmap" "cluster" {
  namespace = "operators"
  name      = "tls-profile"
  source    = "cluster"
}

# What a workload takes as environment values instead of API calls.
output "web_tls" {
  value = {
    hash            = kmshealth_tls_profile_configmap.web.hash
    min_tls_version = kmshealth_tls_profile_configmap.web.min_tls_version
    groups          = kmshealth_tls_profile_configmap.web.groups
    is_openshift    = kmshealth_tls_profile_configmap.web.is_openshift
  }
}

# A Kubernetes component (or anything built on k8s.io/apiserver) takes the
# profile as its own flags: --tls-min-version, --tls-cipher-suites and
# --tls-curve-preferences, ready to append to its container args.
output "web_component_args" {
  value = kmshealth_tls_profile_configmap.web.component_args
}
