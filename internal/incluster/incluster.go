// Package incluster holds what the two in-cluster modes of the provider
// binary (reconcile and report) share: their command line (pflag, as every
// Kubernetes component, with component-base's logging flags), running until
// they are told to stop, finding the API server, and serving HTTP with
// timeouts.
package incluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// Options are a mode's flags, all in one struct: AddFlags declares them,
// Validate checks them before anything starts.
type Options interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
}

// Parse parses args into o, with the logging flags (-v, --vmodule,
// --logging-format=text|json) beside them, applies the logging
// configuration and validates o. It returns -1 when the mode may run, else
// the exit code: 0 after --help, 2 after an error, which it has printed.
// Arguments that are not flags are an error naming them: every setting is
// a flag, so `--leader-elect false` cannot silently mean true.
func Parse(command string, args []string, o Options) int {
	fs := pflag.NewFlagSet(command, pflag.ContinueOnError)
	fs.SortFlags = false
	o.AddFlags(fs)
	logging := logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(logging, fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", command, err)
		return 2
	}
	if err := CheckNoArgs(fs); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", command, err)
		return 2
	}
	gate := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(gate); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", command, err)
		return 2
	}
	if err := logsapi.ValidateAndApply(logging, gate); err != nil {
		fmt.Fprintf(os.Stderr, "%s: invalid logging flags: %v\n", command, err)
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: invalid flags:\n%v\n", command, err)
		return 2
	}
	return -1
}

// CheckNoArgs rejects arguments left over after the flags.
func CheckNoArgs(fs *pflag.FlagSet) error {
	if fs.NArg() == 0 {
		return nil
	}
	return fmt.Errorf("unexpected argument(s) %s: every setting is a flag, --name=value (a boolean is --name or --name=false, never --name false)",
		quoteAll(fs.Args()))
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, ", ")
}

// RunUntilSignal runs run with a context that ends on SIGTERM or an
// interrupt, and returns the process exit code: 0, or 1 when run failed,
// which is logged as "<name> stopped".
func RunUntilSignal(name string, run func(context.Context) error) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	defer klog.Flush()
	if err := run(ctx); err != nil {
		klog.ErrorS(err, name+" stopped")
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

// ValidateBindAddress checks a --*-bind-address flag: host:port, :port,
// or "0" to disable.
func ValidateBindAddress(flagName, addr string) error {
	if addr == "0" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--%s=%q: want host:port, :port or 0: %w", flagName, addr, err)
	}
	return nil
}

// Server timeouts of every HTTP server of the modes: probes and scrapes
// are small and quick, so a slow or stuck client is cut off.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 90 * time.Second
)

// Serve listens on addr now, so a bad address fails at start, and serves h
// over plain HTTP until ctx ends. "0" disables it.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	return ServeTLS(ctx, addr, h, nil)
}

// ServeTLS is Serve over TLS with tlsConfig (nil: plain HTTP).
func ServeTLS(ctx context.Context, addr string, h http.Handler, tlsConfig *tls.Config) error {
	if addr == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "HTTP server stopped", "address", addr)
		}
	}()
	klog.InfoS("Serving", "address", l.Addr().String())
	return nil
}

// ParseArgs reads a container's command line, "<mode> --flag=value ...",
// back into o with the mode's own flags, so an installer and the mode can
// never disagree on what the arguments mean. Values are not validated.
func ParseArgs(mode string, args []string, o Options) error {
	if len(args) == 0 || args[0] != mode {
		return fmt.Errorf("arguments %q: want the %s mode", args, mode)
	}
	fs := pflag.NewFlagSet(mode, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("arguments %q: %w", args, err)
	}
	if err := CheckNoArgs(fs); err != nil {
		return fmt.Errorf("arguments %q: %w", args, err)
	}
	return nil
}
