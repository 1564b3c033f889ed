package gobuild

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// freshOutput returns the module's directory for a Binary call under name,
// with no output of that name left from an earlier run, and removes the
// output and its lock after the test.
func freshOutput(t *testing.T, name string) string {
	t.Helper()
	wd, err := os.Getwd() // go test runs a test in its package's directory
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..")
	out := filepath.Join(root, Dir, name)
	t.Cleanup(func() { _ = os.Remove(out); _ = os.Remove(out + ".lock") })
	_ = os.Remove(out)
	return root
}

// TestBinaryLinksOncePerChange builds a small main package three times
// under one name: the second build, with nothing changed, must leave the
// file as it was (the go command found it up to date and did not link);
// the third, with other flags, must replace it.
func TestBinaryLinksOncePerChange(t *testing.T) {
	name := "gobuild-test-pause"
	root := freshOutput(t, name)
	ctx := context.Background()
	build := func(version string) os.FileInfo {
		t.Helper()
		var fi os.FileInfo
		err := Binary(ctx, root, name, "./internal/testenv/pause", []string{"CGO_ENABLED=0"},
			[]string{"-trimpath", "-ldflags=-s -w -X main.version=" + version}, func(path string) error {
				var err error
				fi, err = os.Stat(path)
				return err
			})
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	first := build("a")
	// The go command renames a new link into place (a new file) and only
	// touches an output that is up to date: the file tells them apart.
	// Forgetting what this process built makes the second call ask the go
	// command, as another test process would.
	built.Clear()
	second := build("a")
	if !os.SameFile(first, second) {
		t.Error("the unchanged build replaced its output: it linked again")
	}
	third := build("b")
	if again := build("b"); !os.SameFile(third, again) {
		t.Error("a second call in one process replaced the output")
	}
	if os.SameFile(first, third) {
		t.Error("the build with other flags left the old output in place")
	}
}

// TestBinaryConcurrent runs builds of one name at once, as the CLI passes
// do; each use must see a whole binary (a Go binary ends with its build
// info, so a truncated copy differs in size from the finished one).
func TestBinaryConcurrent(t *testing.T) {
	name := "gobuild-test-concurrent"
	root := freshOutput(t, name)
	var wg sync.WaitGroup
	sizes := make([]int, 4)
	errs := make([]error, 4)
	for i := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := filepath.Join(t.TempDir(), "not-yet", "pause") // a folder CopyTo makes
			errs[i] = Binary(context.Background(), root, name, "./internal/testenv/pause", []string{"CGO_ENABLED=0"},
				[]string{"-trimpath"}, CopyTo(dst))
			if errs[i] == nil {
				b, err := os.ReadFile(dst)
				errs[i], sizes[i] = err, len(b)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if sizes[i] == 0 || sizes[i] != sizes[0] {
			t.Errorf("build %d copied %d bytes, build 0 %d", i, sizes[i], sizes[0])
		}
	}
}
