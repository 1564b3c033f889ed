package reconciler

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestPatternsAreWellFormed: every registration names its controller
// once, can be turned on by a flag that exists, builds a controller and
// documents its Event reasons.
func TestPatternsAreWellFormed(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("reconcile", pflag.ContinueOnError)
	o.AddFlags(fs)
	seen := map[string]bool{}
	for _, p := range Patterns {
		if p.Name == "" || seen[p.Name] {
			t.Errorf("pattern %q: names must be set and unique", p.Name)
		}
		seen[p.Name] = true
		if p.Enabled == nil || p.New == nil {
			t.Errorf("pattern %s: Enabled and New must be set", p.Name)
		}
		if len(p.EnabledBy) < 3 || fs.Lookup(p.EnabledBy[2:]) == nil {
			t.Errorf("pattern %s: EnabledBy %q is not a flag of reconcile", p.Name, p.EnabledBy)
		}
		if len(p.Reasons) == 0 {
			t.Errorf("pattern %s: no Event reasons documented", p.Name)
		}
	}
}
