//go:build (!pprof || !unix) && !incluster && !reportonly

package main

// startProfile profiles nothing: only a build with -tags pprof (on a Unix)
// writes the provider's CPU profile (profile_pprof.go).
func startProfile() (stop func()) { return func() {} }
