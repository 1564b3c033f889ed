//go:build pprof && incluster && !reportonly

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// In an in-cluster build with -tags pprof (never the image's), the
// reconciler serves net/http/pprof on $KMSHEALTH_PPROF_ADDR (a loopback
// address) while it runs, for the heap and goroutine profiles of a kept
// record (BENCHMARKS.md "Reconciler memory per kept object"):
//
//	CGO_ENABLED=0 go build -trimpath -tags incluster,pprof -o /tmp/r-pprof .
//	KMSHEALTH_PPROF_ADDR=127.0.0.1:6060 go run ./internal/cmd/bench reconcile -bin /tmp/r-pprof …
//	go tool pprof -sample_index=inuse_space -top http://127.0.0.1:6060/debug/pprof/heap
//
// The bench's child inherits the variable; a GC before each heap profile
// is pprof's own (?gc=1).
func init() {
	addr := os.Getenv("KMSHEALTH_PPROF_ADDR")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "KMSHEALTH_PPROF_ADDR=%s: %v\n", addr, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go func() { _ = http.Serve(ln, mux) }() //nolint:gosec // a profiling build on loopback, for the bench alone
}
