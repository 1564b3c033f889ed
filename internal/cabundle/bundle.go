// Package cabundle keeps an APIService's spec.caBundle equal to the PEM held
// by one authoritative object (a Secret or ConfigMap key). It is shared by
// the kmshealth_apiservice_cabundle resource and the in-cluster reconciler:
// the same inspection, the same comparison and the same server-side apply
// under the same field manager, so the two never fight.
package cabundle

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"time"
)

// ExpiryWarningWindow is how close to expiry a certificate may be before
// Inspect warns about it.
const ExpiryWarningWindow = 30 * 24 * time.Hour

// Severity ranks a Finding.
type Severity int

const (
	// Warning findings are reported but do not stop a write.
	Warning Severity = iota
	// Error findings mean the bundle must not be written.
	Error
)

// Finding is one problem Inspect found in a bundle.
type Finding struct {
	Severity Severity
	Summary  string
	Detail   string
}

// Info describes a bundle that parsed.
type Info struct {
	// CertificateCount is the number of CERTIFICATE blocks.
	CertificateCount int
	// FingerprintSHA256 is the hex SHA-256 of the bundle's exact bytes, so
	// any change, even in whitespace, shows.
	FingerprintSHA256 string
	// NotAfter is the earliest expiry among the certificates (zero when
	// there are none).
	NotAfter time.Time
	// Canonical is what is written to spec.caBundle: the certificates
	// alone, each re-encoded as PEM, without headers or any text around
	// them; nil when the bundle is not certificates alone. It does not
	// depend on now: an expired certificate still has a canonical form.
	Canonical []byte
	// Certificates describes each certificate, in bundle order.
	Certificates []Certificate
}

// Certificate is what a user can check one certificate of a bundle by.
type Certificate struct {
	Subject   string
	Issuer    string
	NotBefore time.Time
	NotAfter  time.Time
	// IsCA is the basicConstraints CA flag.
	IsCA bool
	// DER is the certificate's exact DER encoding, what identifies it.
	DER []byte
	// SHA256Fingerprint is the SHA-256 of the certificate's DER in the form
	// `openssl x509 -noout -fingerprint -sha256` prints after
	// "sha256 Fingerprint=": upper-case hex pairs joined by colons.
	SHA256Fingerprint string
}

// OpenSSLFingerprint is the SHA-256 of der as openssl prints it.
func OpenSSLFingerprint(der []byte) string {
	const digits = "0123456789ABCDEF"
	sum := sha256.Sum256(der)
	// Every certificate of every bundle on every plan comes through here:
	// one buffer, no formatting per byte.
	out := make([]byte, 0, 3*len(sum)-1)
	for i, b := range sum {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, digits[b>>4], digits[b&0x0f])
	}
	return string(out)
}

// Fingerprint returns the hex SHA-256 of b.
func Fingerprint(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Inspect parses a PEM bundle and reports what is wrong with it, judged at
// now. Any Error finding means the bundle must not be written.
func Inspect(bundle []byte, now time.Time) (Info, []Finding) {
	info := Info{FingerprintSHA256: Fingerprint(bundle)}
	var findings []Finding
	structural := false // anything but certificates: no canonical form
	expired := func(summary, format string, args ...any) {
		findings = append(findings, Finding{Severity: Error, Summary: summary, Detail: fmt.Sprintf(format, args...)})
	}
	fail := func(summary, format string, args ...any) {
		structural = true
		expired(summary, format, args...)
	}
	warn := func(summary, format string, args ...any) {
		findings = append(findings, Finding{Severity: Warning, Summary: summary, Detail: fmt.Sprintf(format, args...)})
	}

	if len(bytes.TrimSpace(bundle)) == 0 {
		fail("Empty CA bundle", "The CA bundle is empty. Provide one or more PEM \"CERTIFICATE\" blocks of the CA that signs the aggregated API server's serving certificate.")
		return info, findings
	}
	rest := bundle
	var canonical []byte
	for n := 1; ; n++ {
		// pem.Decode skips text before a block (comments, `openssl x509
		// -text` output): harmless, since only Canonical is ever written.
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			fail("Not a certificate", "PEM block %d is of type %q; a CA bundle may hold only \"CERTIFICATE\" blocks. Remove it (a private key never belongs in a caBundle).", n, block.Type)
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			fail("Unparsable certificate", "PEM block %d is not a valid X.509 certificate (type %q): %v.", n, block.Type, err)
			continue
		}
		info.CertificateCount++
		subject := cert.Subject.String()
		info.Certificates = append(info.Certificates, Certificate{Subject: subject, Issuer: cert.Issuer.String(),
			NotBefore: cert.NotBefore, NotAfter: cert.NotAfter, IsCA: cert.IsCA, DER: cert.Raw, SHA256Fingerprint: OpenSSLFingerprint(cert.Raw)})
		canonical = append(canonical, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
		if info.NotAfter.IsZero() || cert.NotAfter.Before(info.NotAfter) {
			info.NotAfter = cert.NotAfter
		}
		switch {
		case !now.Before(cert.NotAfter):
			expired("Expired certificate", "Certificate %d (%s) expired at %s. Replace it with the current CA certificate.", n, subject, cert.NotAfter.UTC().Format(time.RFC3339))
		case cert.NotAfter.Sub(now) < ExpiryWarningWindow:
			warn("Certificate expires soon", "Certificate %d (%s) expires at %s, in less than 30 days. Rotate the CA and update the bundle before then.", n, subject, cert.NotAfter.UTC().Format(time.RFC3339))
		}
		if !cert.IsCA {
			warn("Certificate is not a CA", "Certificate %d (%s) is not a CA certificate (basicConstraints CA:FALSE or missing). A caBundle should hold the CA that signed the serving certificate, not the serving certificate itself.", n, subject)
		}
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		fail("Unparsable PEM", "The CA bundle holds %d bytes that are not PEM after the last valid block. Provide only PEM \"CERTIFICATE\" blocks.", len(bytes.TrimSpace(rest)))
	}
	if info.CertificateCount == 0 && !HasErrors(findings) {
		fail("No certificate in CA bundle", "The CA bundle holds no PEM \"CERTIFICATE\" block.")
	}
	if !structural {
		info.Canonical = canonical
	}
	return info, findings
}

// Canonical is bundle as written to spec.caBundle (Info.Canonical), or
// bundle itself when it is not certificates alone.
func Canonical(bundle []byte) []byte {
	// The zero time judges no certificate expired: only the structure counts.
	if info, _ := Inspect(bundle, time.Time{}); info.Canonical != nil {
		return info.Canonical
	}
	return bundle
}

// Equivalent tells whether two bundles write the same spec.caBundle: the
// same certificates in the same order, whatever the text, headers, line
// endings or blank lines around them.
// The same bytes are equivalent without parsing either (the common case on
// refresh: what was written is what is read back).
func Equivalent(a, b []byte) bool {
	return bytes.Equal(a, b) || bytes.Equal(Canonical(a), Canonical(b))
}

// HasErrors reports whether any finding is an Error.
func HasErrors(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity == Error {
			return true
		}
	}
	return false
}

// FirstError returns the first Error finding as an error, or nil.
func FirstError(findings []Finding) error {
	for _, f := range findings {
		if f.Severity == Error {
			return fmt.Errorf("%s: %s", f.Summary, f.Detail)
		}
	}
	return nil
}
