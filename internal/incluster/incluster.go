// Package incluster holds what the two in-cluster modes of the provider
// binary (reconcile and report) share: how they find the API server and how
// they serve their probe and metrics endpoints.
package incluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

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
