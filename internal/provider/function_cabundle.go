package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

var _ function.Function = (*cabundleFunction)(nil)

// NewCABundleFunction is the factory of provider::kmshealth::cabundle.
func NewCABundleFunction() function.Function { return &cabundleFunction{} }

type cabundleFunction struct{}

func (f *cabundleFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "cabundle"
}

func (f *cabundleFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Merges PEM inputs into one de-duplicated CA bundle",
		MarkdownDescription: "Joins one or more PEM inputs into one bundle, as a CA rotation needs (trust the old CA and the new " +
			"one until every serving certificate is re-issued, then drop the old): each certificate once, identified by its " +
			"DER encoding, in the order first seen, re-encoded as PEM without headers or any text around it — the form the " +
			"caBundle resources write, so the result compares equal to what a cluster holds. Takes the inputs as arguments " +
			"(`cabundle(local.old_ca, local.new_ca)`) or a list expanded with `...` (`cabundle(local.cas...)`). An empty input " +
			"(`\"\"`) is skipped, so a CA that does not exist yet can be passed as `\"\"`; every input empty is an error. An input " +
			"holding anything but certificates (a private key, a certificate that does not parse, text that is not PEM after the " +
			"last block) is an error naming the input (from 1) and its PEM block (number from 1, and type). Expired " +
			"certificates are kept: check them with `certificates()`. Needs Terraform 1.8 or later, or OpenTofu 1.7 or later.",
		VariadicParameter: function.StringParameter{Name: "pems",
			MarkdownDescription: "PEM inputs, each holding zero or more `CERTIFICATE` blocks."},
		Return: function.StringReturn{},
	}
}

func (f *cabundleFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var pems []string
	resp.Error = req.Arguments.Get(ctx, &pems)
	if resp.Error != nil {
		return
	}
	inputs := make([][]byte, len(pems))
	for i, p := range pems {
		inputs[i] = []byte(p)
	}
	merged, err := cabundle.Merge(inputs)
	if err != nil {
		var ie *cabundle.InputError
		if errors.As(err, &ie) {
			resp.Error = function.NewArgumentFuncError(int64(ie.Index), err.Error())
		} else {
			resp.Error = function.NewFuncError(err.Error())
		}
		return
	}
	resp.Error = resp.Result.Set(ctx, string(merged))
}
