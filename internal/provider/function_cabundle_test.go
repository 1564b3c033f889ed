package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// TestAccFunction_cabundle: the old and the new CA of a rotation, given in
// any shape (a duplicate, CRLF line ends, a comment, an empty input, a list
// expanded with ...), merge into each certificate once, first seen first,
// re-encoded; a private key in the second input is an error naming the
// input and the block.
func TestAccFunction_cabundle(t *testing.T) {
	ca, leaf := testPEM(t, "ca"), testPEM(t, "leaf")
	// The test files are canonical PEM (64-column base64, no text around),
	// so the expected bundle is their concatenation.
	noisyCA := "# old CA\r\n" + strings.ReplaceAll(ca, "\n", "\r\n")
	key := "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionVersionChecks,
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			Config: functionOutput("merged", fmt.Sprintf("provider::kmshealth::cabundle(%q, %q, \"\")", noisyCA, leaf+ca)) +
				functionOutput("expanded", fmt.Sprintf("provider::kmshealth::cabundle([%q, %q]...)", leaf, ca)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("merged", knownvalue.StringExact(ca+leaf)),
				statecheck.ExpectKnownOutputValue("expanded", knownvalue.StringExact(leaf+ca)),
			},
		}, {
			Config:      functionOutput("merged", fmt.Sprintf("provider::kmshealth::cabundle(%q, %q)", ca, leaf+key)),
			ExpectError: literalRE(`PEM input 2: Not a certificate: PEM block 2 is of type "EC PRIVATE KEY"`),
		}, {
			Config:      functionOutput("merged", `provider::kmshealth::cabundle("", "\n")`),
			ExpectError: literalRE(`no input holds a certificate`),
		}},
	})
}
