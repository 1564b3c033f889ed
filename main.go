// Command terraform-provider-kmshealth serves the Terraform provider when run
// without arguments (as Terraform and OpenTofu run it) and runs the
// in-cluster modes when given one: `reconcile` and `report`.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/provider"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporter"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3". The
// provider deploys the in-cluster image with this same tag.
var version = "dev"

// Address is where Terraform finds the provider.
const address = "registry.terraform.io/kmshealth/kmshealth"

func main() {
	if len(os.Args) > 1 && os.Args[1] != "-debug" && os.Args[1] != "--debug" {
		os.Exit(runMode(os.Args[1], os.Args[2:]))
	}
	debug := flag.Bool("debug", false, "serve for a debugger (prints TF_REATTACH_PROVIDERS)")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: address,
		Debug:   *debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}

// runMode dispatches the in-cluster modes.
func runMode(mode string, args []string) int {
	switch mode {
	case "version", "--version":
		fmt.Println(version)
		return 0
	case "reconcile":
		return reconciler.Main(version, args)
	case "report":
		return reporter.Main(version, args)
	default:
		fmt.Fprintf(os.Stderr, "terraform-provider-kmshealth: unknown mode %q; run without arguments to serve the provider, or use reconcile, report or version\n", mode)
		return 2
	}
}
