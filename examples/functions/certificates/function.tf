# Stop the plan before a CA bundle that expires within 30 days, or holds a
# certificate that is not a CA, reaches the cluster.
variable "ca_bundle" {
  type        = string
  description = "PEM of the CA that signs the aggregated API server's serving certificate."
}

locals {
  certificates = provider::kmshealth::certificates(var.ca_bundle)
}

resource "terraform_data" "ca_bundle" {
  input = var.ca_bundle

  lifecycle {
    precondition {
      condition     = alltrue([for c in local.certificates : timecmp(c.not_after, timeadd(plantimestamp(), "720h")) > 0])
      error_message = "A certificate expires within 30 days: ${join(", ", [for c in local.certificates : "${c.subject} (${c.not_after})"])}."
    }
    precondition {
      condition     = alltrue([for c in local.certificates : c.is_ca])
      error_message = "Only CA certificates belong in a CA bundle."
    }
  }
}

# What `openssl x509 -noout -fingerprint -sha256` prints, e.g.
# "4E:3B:1D:...:9F:18", to compare with a fingerprint published elsewhere.
output "ca_fingerprints" {
  value = [for c in local.certificates : c.sha256_fingerprint]
}
