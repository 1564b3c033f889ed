// Command tlsserver is the TLS profile's consumer in the node tests: it
// reads profile.json from its mounted ConfigMap, with no API call, and
// serves HTTPS configured by it alone (a throwaway self-signed
// certificate). GET / answers the SHA-256 of the profile.json it loaded, so
// a test can tell which profile a pod serves. A missing or unreadable
// profile is fatal, as it would be for a real consumer.
//
// With $TLS_PROFILE_HASH set (from the pod's own kmshealth.io/tls-profile-hash
// annotation, through the downward API) it serves only a profile.json of
// that hash: a pod created by a profile change can start a moment before
// kubelet's ConfigMap cache has the new document, and would otherwise serve
// the old profile for its whole life. It waits, watching the mount
// (inotify), until kubelet swaps the new document in.
//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

func main() {
	profile := flag.String("profile", "/etc/tls-profile/"+tlsprofile.DocumentKey, "the mounted profile.json")
	addr := flag.String("listen", ":8443", "address to serve HTTPS on")
	flag.Parse()
	doc, err := readProfile(*profile, os.Getenv("TLS_PROFILE_HASH"))
	if err != nil {
		log.Fatalf("tls-server: %v", err)
	}
	cfg, err := tlsprofile.TLSConfigFromJSON(doc)
	if err != nil {
		log.Fatalf("tls-server: %s: %v", *profile, err)
	}
	cert, err := selfSigned()
	if err != nil {
		log.Fatalf("tls-server: %v", err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	hash := tlsprofile.HashJSON(doc)
	srv := &http.Server{
		Addr:              *addr,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = fmt.Fprint(w, hash)
		}),
	}
	log.Printf("tls-server: serving %s with profile %s (hash %s)", *addr, *profile, hash)
	log.Fatal(srv.ListenAndServeTLS("", ""))
}

// readProfile reads path; with want set, it waits until the file's hash is
// want, woken by inotify on its directory (kubelet replaces a ConfigMap
// volume's files by swapping the ..data symlink there).
func readProfile(path, want string) ([]byte, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	defer func() { _ = unix.Close(fd) }()
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		return nil, fmt.Errorf("watch %s: %w", filepath.Dir(path), err)
	}
	buf := make([]byte, 4096)
	for {
		doc, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		got := tlsprofile.HashJSON(doc)
		if want == "" || got == want {
			return doc, nil
		}
		log.Printf("tls-server: %s has hash %s, the pod expects %s: waiting for kubelet to update the volume", path, got, want)
		if _, err := unix.Read(fd, buf); err != nil {
			return nil, fmt.Errorf("inotify: %w", err)
		}
	}
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tls-server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
