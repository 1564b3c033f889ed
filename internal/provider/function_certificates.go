package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

var _ function.Function = (*certificatesFunction)(nil)

// NewCertificatesFunction is the factory of provider::kmshealth::certificates.
func NewCertificatesFunction() function.Function { return &certificatesFunction{} }

type certificatesFunction struct{}

// functionCertificateType is one element of certificates()'s result.
var functionCertificateType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"subject": types.StringType, "issuer": types.StringType,
	"not_before": types.StringType, "not_after": types.StringType,
	"sha256_fingerprint": types.StringType, "is_ca": types.BoolType,
}}

func (f *certificatesFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "certificates"
}

func (f *certificatesFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Describes each certificate of a PEM bundle, without a cluster",
		MarkdownDescription: "Parses a PEM bundle (one or more `CERTIFICATE` blocks, e.g. a CA bundle) and returns one object per " +
			"certificate, in bundle order: `subject` and `issuer` (RFC 2253 form), `not_before` and `not_after` (RFC 3339, UTC), " +
			"`sha256_fingerprint` (the SHA-256 of the certificate's DER as `openssl x509 -noout -fingerprint -sha256` prints it: " +
			"upper-case hex pairs joined by colons) and `is_ca` (the basicConstraints CA flag). Use it in a `precondition` or a " +
			"`check` block to stop a plan that would install an expired or unexpected certificate, e.g. " +
			"`timecmp(c.not_after, plantimestamp()) > 0`. These are the same descriptions the caBundle resources compute. " +
			"An expired certificate is described, not refused. A block that is not a certificate (a private key, say), " +
			"a certificate that does not parse, text that is not PEM after the last block, or an empty string is an error naming " +
			"the PEM block by its number (from 1) and type. Needs Terraform 1.8 or later, or OpenTofu 1.7 or later.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "pem", MarkdownDescription: "PEM text holding one or more `CERTIFICATE` blocks; text before a block is ignored."},
		},
		Return: function.ListReturn{ElementType: functionCertificateType},
	}
}

func (f *certificatesFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var pem string
	resp.Error = req.Arguments.Get(ctx, &pem)
	if resp.Error != nil {
		return
	}
	certs, err := cabundle.Describe([]byte(pem))
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, err.Error())
		return
	}
	resp.Error = resp.Result.Set(ctx, certificatesValue(certs))
}

// certificatesValue is certificates()'s result for certs.
func certificatesValue(certs []cabundle.Certificate) types.List {
	rfc3339 := func(t time.Time) types.String { return types.StringValue(t.UTC().Format(time.RFC3339)) }
	vals := make([]attr.Value, len(certs))
	for i, c := range certs {
		vals[i] = types.ObjectValueMust(functionCertificateType.AttrTypes, map[string]attr.Value{
			"subject": types.StringValue(c.Subject), "issuer": types.StringValue(c.Issuer),
			"not_before": rfc3339(c.NotBefore), "not_after": rfc3339(c.NotAfter),
			"sha256_fingerprint": types.StringValue(c.SHA256Fingerprint), "is_ca": types.BoolValue(c.IsCA),
		})
	}
	return types.ListValueMust(functionCertificateType, vals)
}
