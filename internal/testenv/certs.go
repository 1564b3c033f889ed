package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a PEM certificate and key.
type keyPair struct {
	cert, key []byte
	parsed    *x509.Certificate
	signer    *ecdsa.PrivateKey
}

func newCA(cn string) (*keyPair, error) {
	return newCert(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
}

func newCert(ca *keyPair, tmpl *x509.Certificate) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.parsed, ca.signer
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		parsed: parsed,
		signer: key,
	}, nil
}

// pki is everything the control plane needs, written under dir.
type pki struct {
	ca, serving, admin *keyPair
	saKeyFile          string
	adminToken         string
}

func writePKI(dir string) (*pki, error) {
	ca, err := newCA("kmshealth-test-ca")
	if err != nil {
		return nil, err
	}
	serving, err := newCert(ca, &x509.Certificate{
		Subject:  pkix.Name{CommonName: "kube-apiserver"},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		// loopback for host clients; for pods, the bridge address the API
		// server advertises and the `kubernetes` Service's cluster IP.
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(BridgeAddress), net.ParseIP(KubernetesServiceIP)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	admin, err := newCert(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kmshealth-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p := &pki{ca: ca, serving: serving, admin: admin, saKeyFile: filepath.Join(dir, "sa.key"), adminToken: fmt.Sprintf("%x", tok)}
	files := map[string][]byte{
		"ca.crt":      ca.cert,
		"serving.crt": serving.cert,
		"serving.key": serving.key,
		"sa.key":      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saDER}),
		// token,user,uid,"group1,group2"
		"tokens.csv": []byte(p.adminToken + ",kmshealth-token-admin,kmshealth-token-admin,\"system:masters\"\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}
