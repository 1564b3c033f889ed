package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

var _ function.Function = (*kmsKeyIDHashFunction)(nil)

// NewKMSKeyIDHashFunction is the factory of provider::kmshealth::kms_key_id_hash.
func NewKMSKeyIDHashFunction() function.Function { return &kmsKeyIDHashFunction{} }

type kmsKeyIDHashFunction struct{}

func (f *kmsKeyIDHashFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "kms_key_id_hash"
}

func (f *kmsKeyIDHashFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The key_id_hash label kube-apiserver reports for a KMS v2 key ID",
		MarkdownDescription: "Returns the value kube-apiserver puts in the `key_id_hash` label of its " +
			"`apiserver_envelope_encryption_key_id_hash_total`, `apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds` " +
			"and `apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds` metrics for a KMS v2 key ID: " +
			"`sha256:` followed by the lower-case hex SHA-256 of the key ID's bytes, as `k8s.io/apiserver` computes it. " +
			"Use it to find, in your metrics, which API servers read or write with a key: for example, after a rotation, " +
			"that no `from_storage` series of the old key's hash still grows before the old key is retired. The key ID is the " +
			"one the plugin's `Status` returns (the `kek_id` of `kmshealth_kms_plugin_health`), not the EncryptionConfiguration's " +
			"provider name. An empty key ID, or one longer than 1024 bytes, is an error: kube-apiserver refuses such IDs, so no " +
			"metric ever carries their hash. Needs Terraform 1.8 or later, or OpenTofu 1.7 or later.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "key_id", MarkdownDescription: "The KMS v2 key ID, as the plugin's `Status` RPC returns it."},
		},
		Return: function.StringReturn{},
	}
}

func (f *kmsKeyIDHashFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var keyID string
	resp.Error = req.Arguments.Get(ctx, &keyID)
	if resp.Error != nil {
		return
	}
	hash, err := kmshealth.KeyIDHash(keyID)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, err.Error())
		return
	}
	resp.Error = resp.Result.Set(ctx, hash)
}
