package reconciler

import (
	"os"
	"path/filepath"
	"strings"
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

// TestPatternReasonsAreDocumented: the reconciler's page lists every
// registered Event reason beside its controller, so an alert can be
// written from the docs.
func TestPatternReasonsAreDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "templates", "resources", "reconciler.md.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // controller name → its table row
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(name), "`")] = cells[2]
		}
	}
	for _, p := range Patterns {
		row, ok := rows[p.Name]
		if !ok {
			t.Errorf("templates/resources/reconciler.md.tmpl: no row for controller %s in \"Events to alert on\"", p.Name)
			continue
		}
		for _, r := range p.Reasons {
			if !strings.Contains(row, "`"+r+"`") {
				t.Errorf("templates/resources/reconciler.md.tmpl: reason %s of controller %s is not documented", r, p.Name)
			}
		}
	}
}
