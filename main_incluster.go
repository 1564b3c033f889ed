//go:build incluster

package main

import (
	"fmt"
	"os"
)

// Leaving the provider server out drops terraform-plugin-framework, -go and
// their gRPC server from the image's binary. Measured at a654e48 (Go 1.26.8,
// linux/amd64, CGO_ENABLED=0 -trimpath -ldflags "-s -w"): the provider
// build is 68.4 MB, this one 60.8 MB (11% less). RSS is measured on the node.

// serveHint tells how to serve the provider: not with this build.
const serveHint = "this in-cluster build does not serve the provider (use the release archive's binary, or build without -tags incluster)"

// serveProvider refuses: the in-cluster build (the image's binary, built
// with -tags incluster) leaves the provider server out.
func serveProvider() int {
	fmt.Fprintf(os.Stderr, "terraform-provider-kmshealth %s: %s; the modes here are reconcile, report and version\n", version, serveHint)
	return 2
}
