// Command terraform-provider-kmshealth serves the Terraform provider when run
// without arguments (as Terraform and OpenTofu run it) and runs the
// in-cluster modes when given one: `reconcile` and `report`.
//
// Built with the tag incluster (as `make image` builds it for the in-cluster
// image), the same source leaves the provider server out: the binary keeps
// its version and its modes, and refuses to serve the provider. Built with
// the tag reportonly (the image's second binary, which the reporter
// DaemonSet runs), it also leaves the reconciler out and serves the report
// mode alone: a node agent then maps a third of the code.
package main

import (
	"fmt"
	"os"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporter"
)

// version is set at build time: -ldflags "-X main.version=1.2.3" (the
// release tag without its v, as in the registries' archive names). The
// provider deploys the in-cluster image with this same tag, and the image
// carries a binary built from the same source with the same version.
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] != "-debug" && os.Args[1] != "--debug" {
		os.Exit(runMode(os.Args[1], os.Args[2:]))
	}
	os.Exit(serveProvider())
}

// runMode dispatches the in-cluster modes.
func runMode(mode string, args []string) int {
	switch mode {
	case "version", "--version":
		fmt.Println(version)
		return 0
	case "reconcile":
		return reconcile(args)
	case "report":
		return reporter.Main(version, args)
	default:
		fmt.Fprintf(os.Stderr, "terraform-provider-kmshealth: unknown mode %q; %s, or use reconcile, report or version\n", mode, serveHint)
		return 2
	}
}
