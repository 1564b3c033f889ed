//go:build pprof && unix && !reportonly

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
)

// startProfile, in a build with -tags pprof (never a release), writes a
// CPU profile of this process to $KMSHEALTH_CPUPROFILE_DIR/
// <mode>-<pid>.pprof until the mode returns: mode is "provider" (the
// provider server) or "reconcile" (reconcile mode, also in a -tags
// incluster,pprof build, until it is stopped). Terraform and OpenTofu
// start the provider several times per command, so each process gets its
// own file. `go tool pprof -top <binary> <dir>/*.pprof` sums them.
// Beside it, <mode>-<pid>.allocs holds its allocation profile, and
// <mode>-<pid>.rusage the process's user and system
// CPU seconds and peak RSS (KiB on Linux) when it stops, package
// initialisation and start-up included, which the profile does not see:
//
//	awk '{u+=$1; s+=$2} END {print u, s}' <dir>/*.rusage
//
//	GOFLAGS=-tags=pprof KMSHEALTH_CPUPROFILE_DIR=/tmp/prof go run ./internal/cmd/bench plan -resources=200 -runs=1 -cli=terraform
//	go build -tags incluster,pprof -o /tmp/rec . && KMSHEALTH_CPUPROFILE_DIR=/tmp/prof go run ./internal/cmd/bench peer -bin /tmp/rec
func startProfile(mode string) (stop func()) {
	dir := os.Getenv("KMSHEALTH_CPUPROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", mode, os.Getpid())))
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
		writeAllocs(filepath.Join(dir, fmt.Sprintf("%s-%d.allocs", mode, os.Getpid())))
		writeRusage(filepath.Join(dir, fmt.Sprintf("%s-%d.rusage", mode, os.Getpid())))
	}
}

// writeAllocs writes the allocation profile (every allocation since the
// start, sampled) to name: `go tool pprof -sample_index=alloc_space`.
func writeAllocs(name string) {
	f, err := os.Create(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "allocation profile:", err)
		return
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "allocation profile:", err)
	}
}

// writeRusage writes "<user seconds> <system seconds> <max RSS>" of
// this process to name.
func writeRusage(name string) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		return
	}
	line := fmt.Sprintf("%.6f %.6f %d\n", seconds(ru.Utime), seconds(ru.Stime), ru.Maxrss)
	if err := os.WriteFile(name, []byte(line), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
	}
}

func seconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
