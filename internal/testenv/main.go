package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Main is a TestMain body: it starts one Env for the whole package, hands it
// to set, runs the tests and stops the Env. A control plane that cannot start
// fails the package; it never skips.
func Main(m *testing.M, set func(*Env)) {
	env, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: start control plane:", err)
		os.Exit(1)
	}
	set(env)
	code := m.Run()
	env.Stop()
	os.Exit(code)
}
