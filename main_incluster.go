//go:build incluster || reportonly

package main

import (
	"fmt"
	"os"
)

// Leaving the provider server out drops terraform-plugin-framework, -go and
// their gRPC server from the image's binary; leaving the reconciler out too
// (-tags reportonly) leaves the reporter's. Measured on branch slim2 (Go
// 1.26.8, linux/amd64, CGO_ENABLED=0 -trimpath -ldflags "-s -w"): the
// provider build is 67.9 MiB, -tags incluster 53.0 MiB, -tags
// reportonly,grpcnotrace 16.1 MiB; `go run ./internal/cmd/bench reporter`
// measures a report process of each, `bench peer -bin` a reconciler.

// serveHint tells how to serve the provider: not with this build.
const serveHint = "this in-cluster build does not serve the provider (use the release archive's binary, or build without -tags incluster)"

// serveProvider refuses: the in-cluster build (the image's binary, built
// with -tags incluster) leaves the provider server out.
func serveProvider() int {
	fmt.Fprintf(os.Stderr, "terraform-provider-kmshealth %s: %s; the modes here are reconcile, report and version\n", version, serveHint)
	return 2
}
