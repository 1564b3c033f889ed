package incluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// MetricsOptions say how a mode serves /metrics; both modes take the same
// flags (AddFlags).
type MetricsOptions struct {
	// BindAddress is where /metrics listens; "0" disables it.
	BindAddress string
	// Secure serves over HTTPS to callers whose token passes a TokenReview
	// and whose RBAC allows get on the /metrics non-resource URL (a
	// SubjectAccessReview): no token is 401, a caller RBAC does not allow
	// is 403. Without it, plain HTTP to anyone: local debugging only.
	Secure bool
	// CertDir holds tls.crt and tls.key; empty means a self-signed
	// certificate made at start.
	CertDir string
}

// AddFlags registers --metrics-bind-address (default bind), --metrics-secure
// and --metrics-cert-dir.
func (o *MetricsOptions) AddFlags(fs *pflag.FlagSet, bind string) {
	fs.StringVar(&o.BindAddress, "metrics-bind-address", bind, `address for /metrics; "0" disables it`)
	fs.BoolVar(&o.Secure, "metrics-secure", true, "serve /metrics over HTTPS to callers whose token may get the /metrics non-resource URL "+
		"(TokenReview + SubjectAccessReview); false serves plain HTTP to anyone, for local debugging only")
	fs.StringVar(&o.CertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for /metrics; empty means a self-signed certificate made at start")
}

// A MetricsGuard puts /metrics behind the mode's authentication and
// authorization (see MetricsOptions.Secure), sending its reviews with cfg,
// and only when a request arrives, so a mode that must start without the
// API server still does.
type MetricsGuard func(cfg *rest.Config, h http.Handler) (http.Handler, error)

// ReviewGuard is the reporter's MetricsGuard: the two reviews as plain
// JSON requests (see reviewer). The reconciler uses controller-runtime's
// metrics filter instead (controller.metricsGuard), which does the same
// but links k8s.io/apiserver's delegating authentication and authorization
// (CEL, OpenTelemetry, typed informers), which the reporter's own build,
// on every control-plane node, must not carry (BENCHMARKS.md).
func ReviewGuard(cfg *rest.Config, h http.Handler) (http.Handler, error) {
	api, err := NewJSONClient(cfg)
	if err != nil {
		return nil, err
	}
	return newReviewer(api).wrap(h), nil
}

// ServeMetrics serves gatherer on /metrics as o says, with the timeouts of
// Serve, until ctx ends; when o.Secure, behind guard.
func ServeMetrics(ctx context.Context, o MetricsOptions, cfg *rest.Config, gatherer prometheus.Gatherer, guard MetricsGuard) error {
	if o.BindAddress == "0" {
		return nil
	}
	// Uncompressed: a gzip writer holds about 800 KiB of compressor
	// state, allocated per scrape and kept in promhttp's pool between
	// scrapes, to save a few KiB of a page read over the pod network
	// every 30 s (BENCHMARKS.md "Reconciler memory at 1,000 kept").
	h := promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{DisableCompression: true})
	mux := http.NewServeMux()
	if !o.Secure {
		mux.Handle("/metrics", h)
		return Serve(ctx, o.BindAddress, mux)
	}
	guarded, err := guard(cfg, h)
	if err != nil {
		return fmt.Errorf("metrics authentication: %w", err)
	}
	mux.Handle("/metrics", guarded)
	cert, err := metricsCertificate(o.CertDir)
	if err != nil {
		return err
	}
	return ServeTLS(ctx, o.BindAddress, mux, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
}

// metricsCertificate is tls.crt and tls.key from dir, or a self-signed
// certificate made now when dir is empty.
func metricsCertificate(dir string) (tls.Certificate, error) {
	if dir != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("--metrics-cert-dir: %w", err)
		}
		return cert, nil
	}
	host, _ := os.Hostname()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate for /metrics: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
