# With Terraform 1.5 or later, or OpenTofu: the next plan shows the import
# (and any difference from this configuration); apply records it in state.
import {
  to = kmshealth_kms_reencryption.this
  id = "kube-system/kms"
}
