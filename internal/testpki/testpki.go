// Package testpki makes throw-away self-signed certificates for tests,
// benchmarks and the demo.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"
)

// Options shape a certificate; the zero value is a CA valid for a year.
type Options struct {
	NotAfter time.Time // default: a year from now
	NotCA    bool      // a leaf (basicConstraints CA:FALSE) instead of a CA
}

// CertPEM returns a fresh self-signed ECDSA P-256 certificate with common
// name cn, PEM encoded.
func CertPEM(cn string, o Options) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             o.NotAfter.Add(-2 * 365 * 24 * time.Hour),
		NotAfter:              o.NotAfter,
		IsCA:                  !o.NotCA,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// MustCertPEM is CertPEM for tests and tools, where a failure of the
// system's random source is fatal anyway.
func MustCertPEM(cn string, o Options) []byte {
	b, err := CertPEM(cn, o)
	if err != nil {
		panic(err)
	}
	return b
}
