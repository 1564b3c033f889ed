//go:build !reportonly

package main

import "github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"

// reconcile runs the reconcile mode (profiled in a -tags pprof build:
// profile_pprof.go).
func reconcile(args []string) int {
	defer startProfile("reconcile")()
	return reconciler.Main(version, args)
}
