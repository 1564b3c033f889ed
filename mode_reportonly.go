//go:build reportonly

package main

import (
	"fmt"
	"os"
)

// reconcile refuses: the reporter's build (-tags reportonly) leaves the
// reconciler out, so a node agent maps only what probing and one write per
// interval need.
func reconcile([]string) int {
	fmt.Fprintf(os.Stderr, "terraform-provider-kmshealth %s: this build (-tags reportonly) runs only the report mode; the reconciler is in the image's other build (-tags incluster)\n", version)
	return 2
}
