//go:build (!pprof || !unix) && !reportonly

package main

// startProfile profiles nothing: only a build with -tags pprof (on a Unix)
// writes the CPU profile of the provider or of reconcile mode
// (profile_pprof.go).
func startProfile(string) (stop func()) { return func() {} }
