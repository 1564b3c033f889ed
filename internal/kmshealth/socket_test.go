package kmshealth

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseSocket(t *testing.T) {
	tests := []struct {
		endpoint string
		want     Socket // zero when the endpoint must be rejected
	}{
		{"unix:///var/run/kmsplugin/kms-1.sock", Socket{KeyID: "1", Endpoint: "unix:///var/run/kmsplugin/kms-1.sock", Path: "/var/run/kmsplugin/kms-1.sock"}},
		{"unix:///var/run/kmsplugin/kms-12.sock", Socket{KeyID: "12", Endpoint: "unix:///var/run/kmsplugin/kms-12.sock", Path: "/var/run/kmsplugin/kms-12.sock"}},
		{"unix:///var/run/kmsplugin/kms-01.sock", Socket{KeyID: "1", Endpoint: "unix:///var/run/kmsplugin/kms-01.sock", Path: "/var/run/kmsplugin/kms-01.sock"}},
		{"unix:///var/run/kmsplugin/kms-0.sock", Socket{KeyID: "0", Endpoint: "unix:///var/run/kmsplugin/kms-0.sock", Path: "/var/run/kmsplugin/kms-0.sock"}},
		{"unix:///var/run/kmsplugin/kms-000.sock", Socket{KeyID: "0", Endpoint: "unix:///var/run/kmsplugin/kms-000.sock", Path: "/var/run/kmsplugin/kms-000.sock"}},

		{endpoint: ""},
		{endpoint: "unix:///run/kmsplugin/kms-1.sock"},           // other directory
		{endpoint: "unix:///var/run/kmsplugin/sub/kms-1.sock"},   // sub directory
		{endpoint: "unix:///tmp/kms-1.sock"},                     // other directory
		{endpoint: "unix://var/run/kmsplugin/kms-1.sock"},        // relative path
		{endpoint: "unix://kms-1.sock"},                          // relative path
		{endpoint: "/var/run/kmsplugin/kms-1.sock"},              // no unix://
		{endpoint: "var/run/kmsplugin/kms-1.sock"},               // no scheme, relative
		{endpoint: "tcp:///var/run/kmsplugin/kms-1.sock"},        // other scheme
		{endpoint: "UNIX:///var/run/kmsplugin/kms-1.sock"},       // scheme is case sensitive
		{endpoint: "unix:///var/run/kmsplugin/kms-a.sock"},       // not a number
		{endpoint: "unix:///var/run/kmsplugin/kms-.sock"},        // no number
		{endpoint: "unix:///var/run/kmsplugin/kms--1.sock"},      // negative
		{endpoint: "unix:///var/run/kmsplugin/kms-1.socket"},     // other suffix
		{endpoint: "unix:///var/run/kmsplugin/kms-1.sock.bak"},   // trailing junk
		{endpoint: "unix:///var/run/kmsplugin/kms-1.sock\n"},     // trailing newline
		{endpoint: "unix:///var/run/kmsplugin/kms-1.sock "},      // trailing space
		{endpoint: " unix:///var/run/kmsplugin/kms-1.sock"},      // leading space
		{endpoint: "unix:///var/run/kmsplugin/kms-1xsock"},       // the dot is literal
		{endpoint: "unix:///var/run/kmsplugin/kms-١.sock"},       // non-ASCII digit
		{endpoint: "unix:///var/run/kmsplugin/../kms-1.sock"},    // escapes the directory
		{endpoint: "xunix:///var/run/kmsplugin/kms-1.sock"},      // leading junk
		{endpoint: "unix:///var/run/kmsplugin/kms-1.sock?x=1"},   // query
		{endpoint: "unix:///var/run/kmsplugin/kms-1.sock/kms-2"}, // more path
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			got, err := ParseSocket(tt.endpoint)
			if tt.want == (Socket{}) {
				if err == nil {
					t.Fatalf("ParseSocket(%q) = %+v, want an error", tt.endpoint, got)
				}
				for _, want := range []string{SocketPattern.String(), "must match", "unix:///var/run/kmsplugin/kms-1.sock"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				if got != (Socket{}) {
					t.Errorf("ParseSocket(%q) returned %+v with its error, want the zero Socket", tt.endpoint, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSocket(%q): %v", tt.endpoint, err)
			}
			if got != tt.want {
				t.Errorf("ParseSocket(%q) = %+v, want %+v", tt.endpoint, got, tt.want)
			}
		})
	}
}

func TestSocketPatternIsDesigns(t *testing.T) {
	// ARCHITECTURE.md ("KMS health wire format") fixes the pattern; a
	// change must be deliberate.
	const design = `^unix:///var/run/kmsplugin/kms-(\d+)\.sock$`
	if SocketPattern.String() != design {
		t.Errorf("SocketPattern = %s, want %s", SocketPattern, design)
	}
	if !strings.HasPrefix(design[len("^unix://"):], SocketDir+"/") {
		t.Errorf("SocketDir %q is not the pattern's directory", SocketDir)
	}
}

func TestSocketsInDir(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Plain files stand in for sockets: SocketsInDir only lists names.
	for _, name := range []string{"kms-10.sock", "kms-2.sock", "kms-1.sock", "kms-003.sock"} {
		touch(name)
	}
	for _, name := range []string{"kms-a.sock", "kms-4.sock.bak", "kms-5.socket", "other.sock", "kms-.sock", "README", "kms-6.sock~", "xkms-7.sock"} {
		touch(name)
	}
	if err := os.Mkdir(filepath.Join(dir, "kms-8.sock"), 0o700); err != nil { // a directory with a socket's name
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "kms-9.sock"), nil, 0o600); err != nil { // not recursed into
		t.Fatal(err)
	}

	got, err := SocketsInDir(dir)
	if err != nil {
		t.Fatalf("SocketsInDir: %v", err)
	}
	sock := func(keyID, name string) Socket {
		p := filepath.Join(dir, name)
		return Socket{KeyID: keyID, Endpoint: "unix://" + p, Path: p}
	}
	want := []Socket{sock("1", "kms-1.sock"), sock("2", "kms-2.sock"), sock("3", "kms-003.sock"), sock("10", "kms-10.sock")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SocketsInDir =\n%+v\nwant\n%+v", got, want)
	}
}

func TestSocketsInDirEmpty(t *testing.T) {
	got, err := SocketsInDir(t.TempDir())
	if err != nil {
		t.Fatalf("SocketsInDir: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("SocketsInDir of an empty directory = %+v, want none", got)
	}
}

func TestSocketsInDirMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	got, err := SocketsInDir(dir)
	if err == nil {
		t.Fatalf("SocketsInDir(%s) = %+v, want an error", dir, got)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory %s", err, dir)
	}
}

func TestSortSockets(t *testing.T) {
	s := []Socket{{KeyID: "10"}, {KeyID: "9"}, {KeyID: "100"}, {KeyID: "2"}, {KeyID: "1"}}
	SortSockets(s)
	var got []string
	for _, x := range s {
		got = append(got, x.KeyID)
	}
	if want := []string{"1", "2", "9", "10", "100"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SortSockets order = %v, want %v", got, want)
	}
}

func TestKeyIDLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"1", "2", true},
		{"2", "1", false},
		{"2", "10", true},
		{"10", "2", false},
		{"7", "7", false},
		{"01", "1", false}, // numerically equal
		{"1", "01", false},
		{"9", "18446744073709551616", true}, // over uint64: longer is larger
		{"18446744073709551616", "9", false},
		{"a", "b", true}, // not numbers: text order
	}
	for _, tt := range tests {
		if got := keyIDLess(tt.a, tt.b); got != tt.want {
			t.Errorf("keyIDLess(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestParseSocketRejectsHugeKeyNumber(t *testing.T) {
	if _, err := ParseSocket("unix:///var/run/kmsplugin/kms-99999999999999999999.sock"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("ParseSocket of a key number over uint64: %v, want a too-large error", err)
	}
}
