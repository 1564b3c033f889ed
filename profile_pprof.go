//go:build pprof && !incluster && !reportonly

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// startProfile, in a build with -tags pprof (never a release), writes a
// CPU profile of this provider process to $KMSHEALTH_CPUPROFILE_DIR/
// provider-<pid>.pprof until the provider server stops: Terraform and
// OpenTofu start the provider several times per command, so each process
// gets its own file. `go tool pprof -top <binary> <dir>/*.pprof` sums them.
//
//	GOFLAGS=-tags=pprof KMSHEALTH_CPUPROFILE_DIR=/tmp/prof go run ./internal/cmd/bench plan -resources=200 -runs=1 -cli=terraform
func startProfile() (stop func()) {
	dir := os.Getenv("KMSHEALTH_CPUPROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("provider-%d.pprof", os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpu profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "cpu profile:", err)
		_ = f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
