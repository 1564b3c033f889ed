package devenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRoot holds in both kinds of build: make test links with -trimpath,
// where Root finds the checkout from the working directory; a plain go
// test records this file's directory.
func TestRoot(t *testing.T) {
	root := Root()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("Root() = %s: %v", root, err)
	}
	if got := modulePath(b); got != Module {
		t.Fatalf("Root() = %s, whose go.mod declares %q, want %q", root, got, Module)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "install.sh")); err != nil {
		t.Fatalf("Root() = %s has no tools/install.sh: %v", root, err)
	}
}

func TestModulePath(t *testing.T) {
	for in, want := range map[string]string{
		"module " + Module + "\n\ngo 1.26\n":     Module,
		"// comment\nmodule \"example.com/x\"\n": "example.com/x",
		"go 1.26\n":                              "",
		"":                                       "",
	} {
		if got := modulePath([]byte(in)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", in, got, want)
		}
	}
}
