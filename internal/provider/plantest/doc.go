// Package plantest holds the provider's tests that need a Terraform or
// OpenTofu CLI and no cluster: bad input rejected at plan time (attribute
// validators, config validators, ModifyPlan), and the provider's own
// configuration errors. They run as resource.UnitTest, so they need neither
// TF_ACC nor an API server nor root: `make unit` runs them under Terraform
// 1.5.7 and scripts/test-acc.sh under every CLI it is given.
//
// The provider is configured with a host where nothing listens: a plan
// that contacted the cluster would fail with "connection refused", so these
// tests also prove that the plan-time checks need no cluster. The tests
// that need one are beside the resources, in package provider, whose
// TestMain starts a control plane.
package plantest
