//go:build !incluster && !reportonly

package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/provider"
)

// address is where Terraform finds the provider.
const address = "registry.terraform.io/kmshealth/kmshealth"

// serveHint tells how to serve the provider with this build.
const serveHint = "run without arguments to serve the provider"

// serveProvider serves the provider to Terraform or OpenTofu until they stop
// it; -debug serves for a debugger (prints TF_REATTACH_PROVIDERS).
func serveProvider() int {
	debug := flag.Bool("debug", false, "serve for a debugger (prints TF_REATTACH_PROVIDERS)")
	flag.Parse()
	defer startProfile()()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: address,
		Debug:   *debug,
	})
	if err != nil {
		log.Print(err)
		return 1
	}
	return 0
}
