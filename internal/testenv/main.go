package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/devenv"
)

// Main is a TestMain body: it starts one Env for the whole package, hands it
// to set, runs the tests and stops the Env. A control plane that cannot start
// fails the package; it never skips.
func Main(m *testing.M, set func(*Env)) {
	mainWith(m, set, false)
}

// MainWithProvider is Main for a package whose tests run the provider
// binary as a process: it also builds the provider from this checkout
// (devenv.BuildProvider, version "test") into the Env's scratch directory,
// which goes with the Env, and hands set its path.
func MainWithProvider(m *testing.M, set func(e *Env, binary string)) {
	mainWith(m, func(e *Env) {
		binary, err := devenv.BuildProvider(context.Background(), e.Dir, "test")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv:", err)
			e.Stop()
			os.Exit(1)
		}
		set(e, binary)
	}, false)
}

// MainWithNode is Main for a package with node tests: the whole test binary
// runs again inside namespaces of its own (see isolate; Linux and root
// only), the control plane listens where pods reach it, and Env.Node starts
// the node on first use. Leaving anything behind on the host fails the
// package.
func MainWithNode(m *testing.M, set func(*Env)) {
	if err := isolate(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	mainWith(m, set, true)
}

func mainWith(m *testing.M, set func(*Env), forNode bool) {
	env, err := start(context.Background(), forNode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: start control plane:", err)
		os.Exit(1)
	}
	set(env)
	code := m.Run()
	env.report(os.Stderr, code != 0)
	env.Stop()
	os.Exit(code)
}

// Isolate is MainWithNode's first step for a program (the bench): the
// program runs again inside the node's namespaces and only that copy
// returns; the original exits with its status after tear-down.
func Isolate() error { return isolate() }

// StartForNode starts a control plane that a node's pods can reach; call
// Isolate first.
func StartForNode(ctx context.Context) (*Env, error) { return start(ctx, true) }
