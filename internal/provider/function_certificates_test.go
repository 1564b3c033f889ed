package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// The fixed certificates of testdata/functions, made once with openssl (a
// P-256 CA, and a leaf it signed), and what
// `openssl x509 -noout -subject -issuer -startdate -enddate -fingerprint -sha256 -nameopt RFC2253`
// prints for them.
const (
	testCASubject     = "CN=kmshealth functions test CA,O=kmshealth test"
	testCANotBefore   = "2026-11-25T18:58:21Z"
	testCANotAfter    = "2036-11-22T18:58:21Z"
	testCAFingerprint = "4E:3B:1D:F7:B8:B5:E1:08:06:6B:74:77:9D:F7:A4:85:A7:A4:C1:37:90:42:57:BC:01:5A:5B:88:7D:4A:9F:18"

	testLeafSubject     = "CN=webhook.kmshealth.svc"
	testLeafNotBefore   = "2026-11-25T18:58:21Z"
	testLeafNotAfter    = "2029-02-27T18:58:21Z"
	testLeafFingerprint = "76:B9:0E:44:E6:CB:70:DF:08:C3:F8:CB:AB:08:0B:8F:DB:AC:A5:A1:C4:75:68:C4:C7:18:8A:2B:0E:30:A6:C6"
)

// testPEM reads testdata/functions/<name>.pem.
func testPEM(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "functions", name+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAccFunction_certificates: each certificate described exactly as
// openssl describes it, in bundle order, through the CLI; a private key in
// the bundle and a garbled certificate are errors naming the block.
func TestAccFunction_certificates(t *testing.T) {
	ca, leaf := testPEM(t, "ca"), testPEM(t, "leaf")
	key := "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
	garbled := "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	call := func(pem string) string {
		return functionOutput("certs", fmt.Sprintf("provider::kmshealth::certificates(%q)", pem))
	}
	cert := func(subject, notBefore, notAfter, fingerprint string, isCA bool) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"subject": knownvalue.StringExact(subject), "issuer": knownvalue.StringExact(testCASubject),
			"not_before": knownvalue.StringExact(notBefore), "not_after": knownvalue.StringExact(notAfter),
			"sha256_fingerprint": knownvalue.StringExact(fingerprint), "is_ca": knownvalue.Bool(isCA),
		})
	}
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionVersionChecks,
		ProtoV6ProviderFactories: protoV6,
		Steps: []resource.TestStep{{
			// Text before a block (a comment) is ignored, as in a CA file.
			Config: call(leaf + "# the CA\n" + ca),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("certs", knownvalue.ListExact([]knownvalue.Check{
					cert(testLeafSubject, testLeafNotBefore, testLeafNotAfter, testLeafFingerprint, false),
					cert(testCASubject, testCANotBefore, testCANotAfter, testCAFingerprint, true),
				})),
			},
		}, {
			Config:      call(ca + key),
			ExpectError: literalRE(`Invalid value for "pem" parameter: Not a certificate: PEM block 2 is of type "PRIVATE KEY"`),
		}, {
			Config:      call(garbled),
			ExpectError: literalRE(`Unparsable certificate: PEM block 1 is not a valid X.509 certificate (type "CERTIFICATE")`),
		}, {
			Config:      call(""),
			ExpectError: literalRE(`Invalid value for "pem" parameter: the PEM is empty`),
		}},
	})
}
