// Package moduletest tests modules/cluster-bootstrap the way its callers use
// it, with the real Terraform or OpenTofu CLI against real API servers: a
// root module that calls it once per cluster through two provider aliases
// (TestAccModule_twoClusters, under the CLI that TF_ACC_TERRAFORM_PATH
// names, so scripts/test-acc.sh runs it under Terraform 1.5.7 and OpenTofu),
// and the module's own `tofu test` suite (TestAccModule_tofuTest). The CLI
// reaches the provider built from this checkout through dev_overrides and
// the module through a relative local path: nothing is downloaded.
package moduletest
