package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// MainN is Main for a package that needs n separate control planes, e.g. a
// Terraform configuration that manages two clusters through two provider
// aliases. They are started one after the other (each picks its free ports
// only once the one before listens on its own), handed to set in that
// order, and all stopped after the tests. One that cannot start fails the
// package; it never skips.
func MainN(m *testing.M, n int, set func([]*Env)) {
	envs, err := StartN(context.Background(), n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	set(envs)
	code := m.Run()
	for _, e := range envs {
		e.report(os.Stderr, code != 0)
		e.Stop()
	}
	os.Exit(code)
}

// StartN starts n control planes, each as Start does. On error the ones
// already started are stopped.
func StartN(ctx context.Context, n int) ([]*Env, error) {
	envs := make([]*Env, 0, n)
	for i := range n {
		e, err := Start(ctx)
		if err != nil {
			for _, started := range envs {
				started.Stop()
			}
			return nil, fmt.Errorf("start control plane %d of %d: %w", i+1, n, err)
		}
		envs = append(envs, e)
	}
	return envs, nil
}
