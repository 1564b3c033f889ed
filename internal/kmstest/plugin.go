// Package kmstest is a real KMS v2 plugin for tests and the demo: a gRPC
// server on a unix socket (k8s.io/kms/pkg/service) that encrypts with
// AES-GCM under a key derived from its current key id. A test can switch its
// health and key id while it runs, the way a real KMS misbehaves or rotates.
package kmstest

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"k8s.io/kms/pkg/service"
)

// Plugin is one running KMS v2 plugin.
type Plugin struct {
	socket string
	grpc   *service.GRPCService
	done   chan error

	mu      sync.RWMutex
	healthz string
	keyID   string
	version string
	// wrapped holds, per key ID, a channel closed on the first Encrypt
	// under that key since SetKeyID made it current (see Encrypted).
	wrapped map[string]chan struct{}
}

// Start serves a plugin on the unix socket path (not a unix:// URL) with the
// given key id, healthy, and returns once the socket accepts connections.
func Start(socketPath, keyID string) (*Plugin, error) {
	if err := os.Remove(socketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", socketPath, err)
	}
	p := &Plugin{
		socket: socketPath, healthz: "ok", keyID: keyID, version: "v2", done: make(chan error, 1),
		wrapped: map[string]chan struct{}{keyID: make(chan struct{})},
	}
	p.grpc = service.NewGRPCService(socketPath, 5*time.Second, p)
	go func() { p.done <- p.grpc.ListenAndServe() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("unix", socketPath)
		if err == nil {
			_ = conn.Close()
			return p, nil
		}
		select {
		case err := <-p.done:
			return nil, fmt.Errorf("kms plugin on %s: %w", socketPath, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kms plugin on %s did not start listening within 10s", socketPath)
		}
	}
}

// Socket is the plugin's unix socket path.
func (p *Plugin) Socket() string { return p.socket }

// Endpoint is the socket as a unix:// URL, as EncryptionConfiguration and the
// reporter take it.
func (p *Plugin) Endpoint() string { return "unix://" + p.socket }

// SetHealthz sets what Status reports as healthz ("ok" is healthy).
func (p *Plugin) SetHealthz(h string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healthz = h
}

// SetKeyID switches the key new data is encrypted under, as a KEK rotation
// does. kube-apiserver learns of it from its next Status call; see
// Encrypted and testenv's Env.WaitKeyInUse.
func (p *Plugin) SetKeyID(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != p.keyID {
		p.wrapped[id] = make(chan struct{})
	}
	p.keyID = id
}

// Encrypted returns a channel that is closed once the plugin has encrypted
// under keyID since it last became the current key. kube-apiserver calls
// Encrypt only to wrap a new data key (seed), which it does when a Status
// response names a key ID other than the one of its current data key: so
// after SetKeyID(keyID), the channel closes when the API server has taken
// the new key (it stores its new data key right after Encrypt returns).
func (p *Plugin) Encrypted(keyID string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.wrapped[keyID]
	if !ok {
		ch = make(chan struct{})
		p.wrapped[keyID] = ch
	}
	return ch
}

// KeyID returns the current key id.
func (p *Plugin) KeyID() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.keyID
}

// Stop closes the socket and every open connection.
func (p *Plugin) Stop() {
	p.grpc.Close()
	_ = os.Remove(p.socket)
}

// Status implements service.Service.
func (p *Plugin) Status(context.Context) (*service.StatusResponse, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return &service.StatusResponse{Version: p.version, Healthz: p.healthz, KeyID: p.keyID}, nil
}

// Encrypt implements service.Service.
func (p *Plugin) Encrypt(_ context.Context, _ string, data []byte) (*service.EncryptResponse, error) {
	keyID := p.encrypting()
	aead, err := aeadFor(keyID)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &service.EncryptResponse{Ciphertext: aead.Seal(nonce, nonce, data, nil), KeyID: keyID}, nil
}

// encrypting returns the current key ID and marks it as used for Encrypted.
func (p *Plugin) encrypting() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.wrapped[p.keyID]
	if !ok {
		ch = make(chan struct{})
		p.wrapped[p.keyID] = ch
	}
	select {
	case <-ch:
	default:
		close(ch)
	}
	return p.keyID
}

// Decrypt implements service.Service; data written under an older key id
// stays readable after SetKeyID, as with a real KMS.
func (p *Plugin) Decrypt(_ context.Context, _ string, req *service.DecryptRequest) ([]byte, error) {
	aead, err := aeadFor(req.KeyID)
	if err != nil {
		return nil, err
	}
	if len(req.Ciphertext) < aead.NonceSize() {
		return nil, errors.New("ciphertext shorter than the nonce")
	}
	nonce, sealed := req.Ciphertext[:aead.NonceSize()], req.Ciphertext[aead.NonceSize():]
	return aead.Open(nil, nonce, sealed, nil)
}

// aeadFor derives a deterministic test key from the key id: good enough for a
// test KMS, never for a real one.
func aeadFor(keyID string) (cipher.AEAD, error) {
	key := sha256.Sum256([]byte("kmshealth-test-kek/" + keyID))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
