package cabundle

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMerge(t *testing.T) {
	expiry := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	oldCA := newCertPEM(t, certSpec{cn: "old-ca", notAfter: expiry})
	newCA := newCertPEM(t, certSpec{cn: "new-ca", notAfter: expiry})
	expired := newCertPEM(t, certSpec{cn: "expired", notAfter: time.Now().Add(-time.Hour).Truncate(time.Second)})
	key := []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	garbled := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	// The same certificate with CRLF, a header comment and blank lines:
	// the same DER, so one certificate.
	noisyOld := append([]byte("# the old CA\r\n\r\n"), bytes.ReplaceAll(oldCA, []byte("\n"), []byte("\r\n"))...)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

	tests := []struct {
		name      string
		inputs    [][]byte
		want      []byte
		wantInput int    // from 0; -1: no InputError
		wantErr   string // substring
	}{
		{name: "one input", inputs: [][]byte{oldCA}, want: oldCA},
		{name: "order first seen", inputs: [][]byte{newCA, oldCA}, want: cat(newCA, oldCA)},
		{name: "duplicates across inputs by DER", inputs: [][]byte{cat(oldCA, newCA), noisyOld, newCA}, want: cat(oldCA, newCA)},
		{name: "duplicate within one input", inputs: [][]byte{cat(oldCA, oldCA)}, want: oldCA},
		{name: "empty inputs skipped", inputs: [][]byte{nil, []byte(" \n"), newCA}, want: newCA},
		{name: "expired kept", inputs: [][]byte{expired, newCA}, want: cat(expired, newCA)},
		{name: "all empty", inputs: [][]byte{nil, []byte("\n")}, wantInput: -1, wantErr: "no input holds a certificate"},
		{name: "no inputs", inputs: nil, wantInput: -1, wantErr: "no input holds a certificate"},
		{name: "private key in input 2", inputs: [][]byte{oldCA, cat(newCA, key)}, wantInput: 1, wantErr: `PEM input 2: Not a certificate: PEM block 2 is of type "PRIVATE KEY"`},
		{name: "garbled certificate", inputs: [][]byte{garbled}, wantInput: 0, wantErr: `PEM input 1: Unparsable certificate: PEM block 1 is not a valid X.509 certificate (type "CERTIFICATE")`},
		{name: "text after the last block", inputs: [][]byte{oldCA, cat(newCA, []byte("trailing"))}, wantInput: 1, wantErr: "PEM input 2: Unparsable PEM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.inputs)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Merge: %v", err)
				}
				if !bytes.Equal(got, tt.want) {
					t.Fatalf("Merge =\n%s\nwant\n%s", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Merge error = %v, want it to contain %q", err, tt.wantErr)
			}
			var ie *InputError
			switch {
			case tt.wantInput < 0 && errors.As(err, &ie):
				t.Fatalf("error %v names input %d, want none", err, ie.Index)
			case tt.wantInput >= 0 && (!errors.As(err, &ie) || ie.Index != tt.wantInput):
				t.Fatalf("error %v (%T), want an *InputError for input %d", err, err, tt.wantInput)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	expiry := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	ca := newCertPEM(t, certSpec{cn: "ca", notAfter: expiry})
	leaf := newCertPEM(t, certSpec{cn: "leaf", notAfter: expiry.Add(-time.Hour), notCA: true})
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	expired := newCertPEM(t, certSpec{cn: "expired", notAfter: past})

	certs, err := Describe(bytes.Join([][]byte{ca, leaf, expired}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 3 {
		t.Fatalf("%d certificates, want 3", len(certs))
	}
	for i, want := range []struct {
		subject  string
		isCA     bool
		notAfter time.Time
	}{{"CN=ca", true, expiry}, {"CN=leaf", false, expiry.Add(-time.Hour)}, {"CN=expired", true, past}} {
		c := certs[i]
		if c.Subject != want.subject || c.Issuer != want.subject || c.IsCA != want.isCA {
			t.Errorf("certificate %d: subject %q issuer %q is_ca %v, want %q, %q, %v", i, c.Subject, c.Issuer, c.IsCA, want.subject, want.subject, want.isCA)
		}
		if !c.NotAfter.Equal(want.notAfter) {
			t.Errorf("certificate %d: not_after %s, want %s", i, c.NotAfter, want.notAfter)
		}
		if !c.NotBefore.Equal(c.NotAfter.Add(-2 * 365 * 24 * time.Hour)) {
			t.Errorf("certificate %d: not_before %s, want two years before %s", i, c.NotBefore, c.NotAfter)
		}
		if c.SHA256Fingerprint != OpenSSLFingerprint(c.DER) {
			t.Errorf("certificate %d: fingerprint %s is not of its DER", i, c.SHA256Fingerprint)
		}
	}

	for _, tt := range []struct {
		name, pem, want string
	}{
		{"empty", " \n", "the PEM is empty"},
		{"no PEM at all", "hello", "Unparsable PEM"},
		{"private key", string(ca) + "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n", `PEM block 2 is of type "EC PRIVATE KEY"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Describe([]byte(tt.pem)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Describe error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
