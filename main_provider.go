//go:build !incluster && !reportonly

package main

import (
	"context"
	"flag"
	"log"
	"os"
	"runtime/debug"
	"strings"

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
	quietSDKLogs()
	lessGC()
	defer startProfile("provider")()
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

// sdkLogLevels are the plugin SDKs' own log levels (terraform-plugin-go,
// its protocol logger, terraform-plugin-framework), and that of the
// provider's per-request Kubernetes log (a logger built per request: 2% of
// a no-op plan's provider CPU, for entries Terraform drops).
var sdkLogLevels = []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", provider.RequestLogLevelEnv}

// quietSDKLogs turns the plugin SDKs' logs off when no TF_LOG* variable
// asks for logs. Left alone, the SDKs log every step of every RPC at TRACE
// as JSON on stderr, which Terraform and OpenTofu then drop unless TF_LOG
// is set: a quarter of the provider's CPU in a no-op plan of 200 resources
// (BENCHMARKS.md). With any TF_LOG* set (the user is debugging) nothing
// changes; the provider's own logs (tflog) are not the SDKs' and stay.
func quietSDKLogs() {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_LOG") {
			return
		}
	}
	for _, v := range sdkLogLevels {
		_ = os.Setenv(v, "OFF")
	}
}

// lessGC lets the provider process's heap grow to 5× the live heap between
// collections (GOGC=400) under a 1 GiB soft limit, unless GOGC or
// GOMEMLIMIT says otherwise. A provider process lives for one command and
// its live heap is small (the schema, one request's values), but a plan
// allocates per resource at a rate that kept the collector marking for
// 14% of the provider's CPU in a no-op plan of 200 resources
// (BENCHMARKS.md, "Where a no-op plan's provider CPU goes").
func lessGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
}
