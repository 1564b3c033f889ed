package tlsprofile

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

const wireServerName = "tlsprofile.test"

// serverCerts returns an ECDSA and an RSA certificate (so both ECDSA and RSA
// suites can be negotiated) and a pool that trusts them.
func serverCerts(t *testing.T) ([]tls.Certificate, *x509.CertPool) {
	t.Helper()
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	var certs []tls.Certificate
	for i, key := range []crypto.Signer{ecKey, rsaKey} {
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(int64(i + 1)),
			Subject:               pkix.Name{CommonName: wireServerName},
			DNSNames:              []string{wireServerName},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		pool.AddCert(leaf)
		certs = append(certs, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf})
	}
	return certs, pool
}

// handshake runs one TLS handshake over loopback TCP (TLS needs a buffered
// transport: net.Pipe deadlocks when both sides write, as in a TLS 1.3
// HelloRetryRequest) and returns the client's view of it, or its error.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	done := make(chan error, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = raw.Close() }()
		done <- tls.Server(raw, server).HandshakeContext(ctx)
	}()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.Close() }()
	cli := tls.Client(raw, client)
	err = cli.HandshakeContext(ctx)
	if err != nil {
		_ = raw.Close() // unblock a server still waiting for us
	}
	serverErr := <-done
	if (err == nil) != (serverErr == nil) {
		t.Errorf("client and server disagree: client %v, server %v", err, serverErr)
	}
	return cli.ConnectionState(), err
}

// serverFromComponentArgs configures a server's TLS the way a Kubernetes
// component does from its secure-serving flags: the flags registered as
// k8s.io/apiserver's SecureServingOptions registers them (a string, a
// string slice, an int32 slice), the version and suites converted by
// k8s.io/component-base/cli/flag's TLSVersion and TLSCipherSuites. The
// component-base this module pins (v0.35) predates TLSCurvePreferences
// (v0.36, kubernetes/kubernetes#137115), so the curve IDs get its checks
// here: each in 1–65535, no duplicates, one this Go implements.
func serverFromComponentArgs(t *testing.T, args []string) *tls.Config {
	t.Helper()
	fs := pflag.NewFlagSet("component", pflag.ContinueOnError)
	var (
		minVersion string
		suites     []string
		curves     []int32
	)
	fs.StringVar(&minVersion, strings.TrimPrefix(FlagTLSMinVersion, "--"), "", "")
	fs.StringSliceVar(&suites, strings.TrimPrefix(FlagTLSCipherSuites, "--"), nil, "")
	fs.Int32SliceVar(&curves, strings.TrimPrefix(FlagTLSCurvePreferences, "--"), nil, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		t.Fatalf("a component refuses %q: %v (left over: %q)", args, err, fs.Args())
	}
	cfg := &tls.Config{}
	var err error
	if cfg.MinVersion, err = cliflag.TLSVersion(minVersion); err != nil {
		t.Fatalf("%s=%s: %v", FlagTLSMinVersion, minVersion, err)
	}
	if cfg.CipherSuites, err = cliflag.TLSCipherSuites(suites); err != nil {
		t.Fatalf("%s: %v", FlagTLSCipherSuites, err)
	}
	seen := map[int32]bool{}
	for _, c := range curves {
		id := tls.CurveID(c)
		if c < 1 || c > 65535 || seen[c] || !goKnows(id) {
			t.Fatalf("%s: %d is out of range, repeated or unknown to Go", FlagTLSCurvePreferences, c)
		}
		seen[c] = true
		cfg.CurvePreferences = append(cfg.CurvePreferences, id)
	}
	return cfg
}

// The profile means what it says on the wire: a TLS server configured only
// from the resolved profile.json — and one configured only from its
// componentArgs, as a Kubernetes component would be — accepts clients the
// profile allows and rejects the others: a lower version, a suite not in
// it, a group not in it.
func TestProfilesOnTheWire(t *testing.T) {
	certs, pool := serverCerts(t)
	permissive := &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS10}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		permissive.CipherSuites = append(permissive.CipherSuites, s.ID)
	}
	type client struct {
		name   string
		min    uint16 // 0: Go's client default (TLS 1.2)
		max    uint16 // 0: TLS 1.3
		suites []uint16
		curves []tls.CurveID
		// expectations; accept == false means the handshake must fail
		accept  bool
		version uint16
		suite   uint16 // 0: do not check
		curve   tls.CurveID
	}
	tests := []struct {
		name    string
		spec    Spec
		clients []client
	}{
		{"Old", Spec{Type: ProfileOld}, []client{
			{name: "TLS 1.0, ECDHE-ECDSA-AES128-SHA", min: tls.VersionTLS10, max: tls.VersionTLS10, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA},
				accept: true, version: tls.VersionTLS10, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, curve: tls.X25519},
			{name: "TLS 1.0, DES-CBC3-SHA (listed explicitly, so honoured although Go's defaults drop 3DES)", min: tls.VersionTLS10, max: tls.VersionTLS10, suites: []uint16{tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA},
				accept: true, version: tls.VersionTLS10, suite: tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA},
			{name: "TLS 1.3 default client", accept: true, version: tls.VersionTLS13, curve: tls.X25519MLKEM768},
			{name: "TLS 1.2, only RC4 (not in the profile)", min: tls.VersionTLS12, max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_RC4_128_SHA}},
			{name: "TLS 1.2, only secp521r1 (a group not in the profile)", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, curves: []tls.CurveID{tls.CurveP521}},
			{name: "TLS 1.2, only secp384r1", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, curves: []tls.CurveID{tls.CurveP384},
				accept: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, curve: tls.CurveP384},
		}},
		{"Intermediate", Spec{Type: ProfileIntermediate}, []client{
			{name: "TLS 1.2, ECDHE-ECDSA-AES128-GCM-SHA256", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
				accept: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, curve: tls.X25519},
			{name: "TLS 1.2, ECDHE-RSA-CHACHA20-POLY1305", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
				accept: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
			{name: "TLS 1.3 default client", accept: true, version: tls.VersionTLS13, curve: tls.X25519MLKEM768},
			{name: "TLS 1.3, only secp256r1", curves: []tls.CurveID{tls.CurveP256}, accept: true, version: tls.VersionTLS13, curve: tls.CurveP256},
			{name: "TLS 1.1, below the minimum", min: tls.VersionTLS10, max: tls.VersionTLS11, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}},
			{name: "TLS 1.2, only ECDHE-ECDSA-AES128-SHA (a Go default the profile leaves out)", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}},
			{name: "TLS 1.2, only AES128-GCM-SHA256 (RSA key exchange, left out)", max: tls.VersionTLS12, suites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256}},
			{name: "TLS 1.3, only secp521r1 (a Go default the profile leaves out)", curves: []tls.CurveID{tls.CurveP521}},
			{name: "TLS 1.3, only SecP256r1MLKEM768 (a Go default the profile leaves out)", curves: []tls.CurveID{tls.SecP256r1MLKEM768}},
		}},
		{"Intermediate with fips", Spec{Type: ProfileIntermediate, FIPS: true}, []client{
			{name: "TLS 1.2, ECDHE-RSA-AES256-GCM-SHA384 over secp256r1", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
				accept: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, curve: tls.CurveP256},
			{name: "TLS 1.3 default client gets secp256r1", accept: true, version: tls.VersionTLS13, curve: tls.CurveP256},
			{name: "TLS 1.2, only ECDHE-RSA-CHACHA20-POLY1305 (not FIPS-approved)", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}},
			{name: "TLS 1.3, only X25519 (not FIPS-approved)", curves: []tls.CurveID{tls.X25519}},
			{name: "TLS 1.3, only X25519MLKEM768 (not FIPS-approved)", curves: []tls.CurveID{tls.X25519MLKEM768}},
		}},
		{"Modern", Spec{Type: ProfileModern}, []client{
			{name: "TLS 1.3 default client", accept: true, version: tls.VersionTLS13, curve: tls.X25519MLKEM768},
			{name: "TLS 1.3, X25519 only", curves: []tls.CurveID{tls.X25519}, accept: true, version: tls.VersionTLS13, curve: tls.X25519},
			{name: "TLS 1.3, secp384r1 only", curves: []tls.CurveID{tls.CurveP384}, accept: true, version: tls.VersionTLS13, curve: tls.CurveP384},
			{name: "TLS 1.2, below the minimum", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
			{name: "TLS 1.3, only SecP256r1MLKEM768 (a Go default the profile leaves out)", curves: []tls.CurveID{tls.SecP256r1MLKEM768}},
			{name: "TLS 1.3, only secp521r1 (a Go default the profile leaves out)", curves: []tls.CurveID{tls.CurveP521}},
		}},
		{"Custom", Spec{Type: ProfileCustom, MinTLSVersion: VersionTLS12, Ciphers: []string{"ECDHE-ECDSA-AES256-GCM-SHA384"}, Groups: []string{"secp384r1"}}, []client{
			{name: "TLS 1.2, the one cipher and group", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
				accept: true, version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, curve: tls.CurveP384},
			{name: "TLS 1.3 default client gets secp384r1", accept: true, version: tls.VersionTLS13, curve: tls.CurveP384},
			{name: "TLS 1.2, another cipher", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
			{name: "TLS 1.2, another group", max: tls.VersionTLS12, suites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}, curves: []tls.CurveID{tls.X25519}},
			{name: "TLS 1.3, another group", curves: []tls.CurveID{tls.X25519MLKEM768, tls.X25519}},
			{name: "TLS 1.1, below the minimum", min: tls.VersionTLS10, max: tls.VersionTLS11},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, err := Resolve(tt.spec, AdherenceNoOpinion)
			if err != nil {
				t.Fatal(err)
			}
			servers := map[string]func(t *testing.T) *tls.Config{
				// What a consuming workload does: the mounted bytes only.
				"profile.json": func(t *testing.T) *tls.Config {
					cfg, err := TLSConfigFromJSON(r.JSON)
					if err != nil {
						t.Fatal(err)
					}
					return cfg
				},
				// What a Kubernetes component does with componentArgs.
				"componentArgs": func(t *testing.T) *tls.Config {
					d, err := ParseDocument(r.JSON)
					if err != nil {
						t.Fatal(err)
					}
					return serverFromComponentArgs(t, d.ComponentArgs)
				},
			}
			for _, serverKind := range []string{"profile.json", "componentArgs"} {
				for _, c := range tt.clients {
					t.Run(serverKind+"/"+c.name, func(t *testing.T) {
						server := servers[serverKind](t)
						server.Certificates = certs
						client := &tls.Config{
							ServerName: wireServerName, RootCAs: pool,
							MinVersion: c.min, MaxVersion: c.max,
							CipherSuites: c.suites, CurvePreferences: c.curves,
						}
						state, err := handshake(t, server, client)
						if !c.accept {
							if err == nil {
								t.Fatalf("handshake succeeded (%s, %s, %v); the profile should reject this client", versionString(state.Version), tls.CipherSuiteName(state.CipherSuite), state.CurveID)
							}
							// Control: the same client is fine with a permissive
							// server, so the profile is what refused it.
							if _, err := handshake(t, permissive, client.Clone()); err != nil {
								t.Fatalf("control: a permissive server refuses this client too (%v), so the test proves nothing", err)
							}
							return
						}
						if err != nil {
							t.Fatalf("handshake refused: %v", err)
						}
						if state.Version != c.version {
							t.Errorf("version %s, want %s", versionString(state.Version), versionString(c.version))
						}
						if c.suite != 0 && state.CipherSuite != c.suite {
							t.Errorf("suite %s, want %s", tls.CipherSuiteName(state.CipherSuite), tls.CipherSuiteName(c.suite))
						}
						if c.curve != 0 && state.CurveID != c.curve {
							t.Errorf("curve %v, want %v", state.CurveID, c.curve)
						}
					})
				}
			}
		})
	}
}

func versionString(v uint16) string {
	for _, name := range ValidTLSVersions() {
		if id, _ := TLSVersion(name).ID(); id == v {
			return name
		}
	}
	return tls.VersionName(v)
}
