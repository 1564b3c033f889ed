package plantest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/provider"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// protoV6 serves the provider in-process to the Terraform or OpenTofu CLI
// that TF_ACC_TERRAFORM_PATH names.
var protoV6 = map[string]func() (tfprotov6.ProviderServer, error){
	"kmshealth": providerserver.NewProtocol6WithError(provider.New("test")()),
}

// providerBlock points the provider at a loopback port where nothing
// listens (port 1 needs root to listen on): any request a plan made would
// fail, so a test that passes made none.
const providerBlock = "provider \"kmshealth\" {\n  host = \"https://127.0.0.1:1\"\n}\n"

// wrappedRE matches pattern across the CLIs' line wrapping: a space
// matches any whitespace.
func wrappedRE(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// literalRE matches the parts in order, literally, across CLI line wrapping.
func literalRE(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = regexp.QuoteMeta(p)
	}
	return wrappedRE("(?s)" + strings.Join(quoted, ".*"))
}

// noWait is wait_for_rollout = false unless body says otherwise, as the
// acceptance tests configure the installers.
func noWait(body string) string {
	if strings.Contains(body, "wait_for_rollout") {
		return ""
	}
	return "\n  wait_for_rollout = false"
}

// newCertPEM returns a fresh self-signed certificate; by default a CA valid
// for a year.
func newCertPEM(t *testing.T, cn string, o testpki.Options) string {
	t.Helper()
	b, err := testpki.CertPEM(cn, o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// resourceBlock is one resource "test" of type with body.
func resourceBlock(typ, body string) string {
	return fmt.Sprintf("\nresource %q \"test\" {\n%s\n}\n", typ, body)
}
