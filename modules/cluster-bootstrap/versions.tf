terraform {
  # Optional object attributes with defaults, and validation messages that
  # name the offending value: Terraform 1.5 or later, or OpenTofu.
  required_version = ">= 1.5.0"

  required_providers {
    kmshealth = {
      source  = "kmshealth/kmshealth"
      version = "~> 0.1"
    }
  }
}
