package reconciler

import (
	"github.com/spf13/pflag"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/controller"
)

// Pattern is everything reconcile mode knows of one pattern: its flags
// and their validation, when it runs, how its controller is built, and
// the Event reasons it records. Options, Validate and Run loop over
// Patterns; nothing else in this package names a pattern. Each pattern
// declares itself beside its controller (cabundle.go, webhookcabundle.go,
// kmsaggregator.go, tlsprofile.go, rbacproxy.go); what its installation
// needs (RBAC, record, policies, the flags' values) is its entry in
// reconcilerinstall.Patterns.
type Pattern struct {
	// Name names the controller in logs, metrics and Events; it is the
	// controller.Pattern's Name.
	Name string
	// AddFlags registers its flags on fs, with defaults; Validate checks
	// them, each error naming its flag. Either may be nil.
	AddFlags func(o *Options, fs *pflag.FlagSet)
	Validate func(o *Options) []error
	// Enabled reports whether o asks for the controller; EnabledBy names
	// the flag that turns it on, for the "nothing to reconcile" error.
	Enabled   func(o Options) bool
	EnabledBy string
	// New builds its controller from the clients and valid options.
	New func(c *Clients, o Options) (*controller.Controller, error)
	// Reasons are the reasons of the Events it records, documented for
	// alerting (templates/resources/reconciler.md.tmpl).
	Reasons []string
}

// Patterns are the controllers of reconcile mode, in the order they
// start. Adding one is one line here, one file beside it, and — for a
// pattern with flags — its options struct in patternOptions.
var Patterns = []Pattern{
	caBundlePatternReg,
	webhookCABundlePatternReg,
	kmsAggregatorPatternReg,
	tlsProfilePatternReg,
	rbacProxyPatternReg,
}

// patternOptions are the options of the patterns that take flags; each
// struct is declared beside its controller. Embedded, so Options reads as
// one flat set of flags.
type patternOptions struct {
	KMSAggregatorOptions
}

// newController wraps a built pattern, for Pattern.New.
func newController[O, D any](p controller.Pattern[O, D], err error) (*controller.Controller, error) {
	if err != nil {
		return nil, err
	}
	return controller.New(p), nil
}
