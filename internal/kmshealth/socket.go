package kmshealth

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

// SocketDir is where KMS v2 plugins listen on a control-plane node.
const SocketDir = "/var/run/kmsplugin"

// SocketPattern is the only form of --kms-socket the reporter accepts; the
// number is the plugin's keyID in the wire format.
var SocketPattern = regexp.MustCompile(`^unix:///var/run/kmsplugin/kms-(\d+)\.sock$`)

var socketFile = regexp.MustCompile(`^kms-(\d+)\.sock$`)

// Socket is one plugin endpoint to probe.
type Socket struct {
	KeyID    string // the socket's sequence number, e.g. "1" for kms-1.sock
	Endpoint string // unix:// URL
	Path     string // file system path
}

// ParseSocket checks an endpoint against SocketPattern.
func ParseSocket(endpoint string) (Socket, error) {
	m := SocketPattern.FindStringSubmatch(endpoint)
	if m == nil {
		return Socket{}, fmt.Errorf("KMS socket %q: must match %s, e.g. unix://%s/kms-1.sock", endpoint, SocketPattern, SocketDir)
	}
	if _, err := strconv.ParseUint(m[1], 10, 64); err != nil {
		return Socket{}, fmt.Errorf("KMS socket %q: the key number %s is too large", endpoint, m[1])
	}
	return Socket{KeyID: normalizeKeyID(m[1]), Endpoint: endpoint, Path: endpoint[len("unix://"):]}, nil
}

// SocketsInDir lists the kms-<n>.sock files in dir, ordered by keyID. Files
// with other names are ignored; a missing directory is an error.
func SocketsInDir(dir string) ([]Socket, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list KMS sockets: %w", err)
	}
	var out []Socket
	for _, e := range entries {
		m := socketFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		if _, err := strconv.ParseUint(m[1], 10, 64); err != nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		out = append(out, Socket{KeyID: normalizeKeyID(m[1]), Endpoint: "unix://" + p, Path: p})
	}
	SortSockets(out)
	return out, nil
}

// SortSockets orders sockets by numeric keyID.
func SortSockets(s []Socket) {
	sort.SliceStable(s, func(i, j int) bool { return keyIDLess(s[i].KeyID, s[j].KeyID) })
}

// normalizeKeyID drops leading zeros so kms-01.sock and kms-1.sock name the
// same key, as the API server's own numbering does not pad.
func normalizeKeyID(n string) string {
	for len(n) > 1 && n[0] == '0' {
		n = n[1:]
	}
	return n
}

// keyIDLess compares decimal key ids numerically, falling back to text.
func keyIDLess(a, b string) bool {
	ai, aerr := strconv.ParseUint(a, 10, 64)
	bi, berr := strconv.ParseUint(b, 10, 64)
	if aerr == nil && berr == nil {
		return ai < bi
	}
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
