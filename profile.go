//go:build !pprof && !incluster && !reportonly

package main

// startProfile profiles nothing: only a build with -tags pprof writes the
// provider's CPU profile (profile_pprof.go).
func startProfile() (stop func()) { return func() {} }
