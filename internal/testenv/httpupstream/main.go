// Command httpupstream is the workload behind the rbac proxy sidecar in the
// node tests: a plain HTTP server that listens on loopback only, so nothing
// outside its pod reaches it but through the proxy, and answers every
// request with 200 and a body naming its method and path. With -probe it
// is instead its own readiness check (kubelet cannot reach a pod's
// loopback, and the image has no shell): it connects to the listen address
// and exits 0 when something accepts.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:8080", "address to serve HTTP on: loopback, so only the pod's own containers reach it")
	probe := flag.Bool("probe", false, "connect to -listen and exit 0 if it accepts, 1 if not (an exec readiness probe)")
	flag.Parse()
	if *probe {
		conn, err := net.DialTimeout("tcp", *addr, time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "http-upstream probe:", err)
			os.Exit(1)
		}
		_ = conn.Close()
		return
	}
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprintf(w, "upstream saw %s %s", r.Method, r.URL.Path)
		}),
	}
	log.Printf("http-upstream: serving %s", *addr)
	log.Fatal(srv.ListenAndServe())
}
