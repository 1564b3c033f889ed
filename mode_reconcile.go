//go:build !reportonly

package main

import "github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"

// reconcile runs the reconcile mode.
func reconcile(args []string) int { return reconciler.Main(version, args) }
