// Package incluster holds what the two in-cluster modes of the provider
// binary (reconcile and report) share: how they read and check their flags,
// run until they are told to stop, find the API server and serve their
// probe and metrics endpoints.
package incluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Options are a mode's flags, all in one struct: Bind declares them,
// Validate checks them before anything starts.
type Options interface {
	Bind(fs *flag.FlagSet)
	Validate() error
}

// ParseFlags parses args into o with the flag set of the mode command
// ("report") and validates o. It reports false, having said why on stderr,
// when the process must exit with code 2.
func ParseFlags(command string, args []string, o Options) bool {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	o.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return false // the flag set has printed the error and the usage
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: invalid flags:\n%v\n", command, err)
		return false
	}
	return true
}

// RunUntilSignal runs run with a context that ends on SIGTERM or an
// interrupt, and returns the process exit code: 0, or 1 when run failed,
// which is logged as "<name> stopped".
func RunUntilSignal(log *slog.Logger, name string, run func(context.Context) error) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Error(name+" stopped", "error", err.Error())
		return 1
	}
	return 0
}

// RESTConfig is the in-cluster configuration when kubeconfig is empty, else
// the kubeconfig file's current context.
func RESTConfig(kubeconfig, userAgent string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration (pass --kubeconfig when running outside a pod): %w", err)
		}
		cfg.UserAgent, cfg.QPS, cfg.Burst = userAgent, 50, 100
		return cfg, nil
	}
	return kube.Config{ConfigPath: kubeconfig}.RESTConfig(userAgent)
}

// Serve listens on addr now, so a bad address fails at start, and serves h
// until ctx ends. "0" disables it.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	if addr == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "address", addr, "error", err.Error())
		}
	}()
	log.Info("serving", "address", l.Addr().String())
	return nil
}
