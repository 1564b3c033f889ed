package reconcilerinstall

import (
	"maps"

	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
)

// Pattern is everything the installer knows of one pattern the reconciler
// keeps: how its part of a Config is checked, the RBAC naming each object
// it touches, its entries of the record, its reconciler flags and the
// admission policies that narrow its writes to its own fields. Build,
// Declare, Args and Live.Config loop over Patterns; nothing else in this
// package names a pattern. Each pattern declares itself in its own file
// (cabundle.go, webhookcabundle.go, kmsaggregator.go, tlsprofile.go,
// rbacproxy.go), beside the policy it installs; its controller is in
// internal/reconciler, registered the same way (reconciler.Patterns).
//
// Every function may be nil when the pattern has nothing of that sort.
// Each must be pure and, given a names-only Config (Namespace and Name,
// nothing kept), still name what it would install, so Observe and Delete
// find it.
type Pattern struct {
	// Name names the pattern ("tls-profiles"); errors and tests use it.
	Name string
	// Validate checks the pattern's part of c; each error names the
	// kmshealth_reconciler attribute ("tls_profiles[0].name …").
	Validate func(c Config) []error
	// ClusterRules are its ClusterRole rules, each naming the objects
	// (resourceNames) unless the kind cannot be named (Nodes).
	ClusterRules func(c Config) []*rbacv1ac.PolicyRuleApplyConfiguration
	// Role is its Role per namespace, when it reads or writes namespaced
	// objects other than the record.
	Role *PatternRole
	// Record is its entries of the record ConfigMap (<name>-record);
	// ReadRecord puts what it finds there back into c, for import and
	// drift. Keys must start with the pattern's own prefix.
	Record     func(c Config) map[string]string
	ReadRecord func(c *Config, data map[string]string)
	// Args are its flags of the reconcile mode; ReadArgs reads them back
	// from the Deployment's arguments, parsed by the mode itself. What to
	// keep is never a flag but a record entry (ARCHITECTURE.md, "How a
	// pattern flows"): a flag is a setting of the controller
	// (--field-manager, --kms-target), and changing one rolls the
	// Deployment.
	Args     func(c Config) []string
	ReadArgs func(c *Config, o reconciler.Options)
	// Policies are its ValidatingAdmissionPolicies. They are installed
	// whether or not the pattern keeps anything, so a later entry never
	// runs unguarded: with nothing kept, each must deny every write.
	Policies func(c Config) []install.Policy
}

// PatternRole is one Role (and its RoleBinding to the reconciler's
// ServiceAccount) in each namespace a pattern needs.
type PatternRole struct {
	Component  string                  // install.ComponentLabel value; tells the Roles apart
	Name       func(c Config) string   // the Role's name, the same in every namespace
	Namespaces func(c Config) []string // sorted, once each
	Rules      func(c Config, ns string) []*rbacv1ac.PolicyRuleApplyConfiguration
}

// Patterns are the patterns the reconciler keeps, in the order their
// flags and ClusterRole rules appear (the order of the Deployment's
// arguments is part of its spec: reordering rolls it). Adding a pattern
// is one line here, one file beside it, one field in Config and one line
// in reconciler.Patterns.
var Patterns = []Pattern{
	kmsAggregatorPattern,
	caBundlePattern,
	webhookCABundlePattern,
	tlsProfilePattern,
	rbacProxyPattern,
}

// validatePatterns runs every pattern's Validate.
func (c Config) validatePatterns() []error {
	var errs []error
	for _, p := range Patterns {
		if p.Validate != nil {
			errs = append(errs, p.Validate(c)...)
		}
	}
	return errs
}

// Policies are the admission policies of every pattern, in Patterns order.
func Policies(c Config) []install.Policy {
	var out []install.Policy
	for _, p := range Patterns {
		if p.Policies != nil {
			out = append(out, p.Policies(c)...)
		}
	}
	return out
}

// patternArgs are every pattern's reconcile flags, in Patterns order.
func patternArgs(c Config) []string {
	var out []string
	for _, p := range Patterns {
		if p.Args != nil {
			out = append(out, p.Args(c)...)
		}
	}
	return out
}

// patternClusterRules are every pattern's ClusterRole rules.
func patternClusterRules(c Config) []*rbacv1ac.PolicyRuleApplyConfiguration {
	var out []*rbacv1ac.PolicyRuleApplyConfiguration
	for _, p := range Patterns {
		if p.ClusterRules != nil {
			out = append(out, p.ClusterRules(c)...)
		}
	}
	return out
}

// patternRecord is every pattern's record entries (each pattern's keys
// carry its own prefix, so they never collide; TestRecordKeysArePerPattern).
func patternRecord(c Config) map[string]string {
	out := map[string]string{}
	for _, p := range Patterns {
		if p.Record != nil {
			maps.Copy(out, p.Record(c))
		}
	}
	return out
}

// readPatternRecords puts every pattern's record entries back into c.
func (c *Config) readPatternRecords(data map[string]string) {
	for _, p := range Patterns {
		if p.ReadRecord != nil {
			p.ReadRecord(c, data)
		}
	}
}

// readPatternArgs puts every pattern's flags back into c.
func (c *Config) readPatternArgs(o reconciler.Options) {
	for _, p := range Patterns {
		if p.ReadArgs != nil {
			p.ReadArgs(c, o)
		}
	}
}

// PatternRoles are the Roles and RoleBindings of every pattern: per
// pattern (Patterns order) one per namespace, sorted.
func PatternRoles(c Config) ([]*rbacv1ac.RoleApplyConfiguration, []*rbacv1ac.RoleBindingApplyConfiguration) {
	var roles []*rbacv1ac.RoleApplyConfiguration
	var bindings []*rbacv1ac.RoleBindingApplyConfiguration
	for _, p := range Patterns {
		r := p.Role
		if r == nil {
			continue
		}
		for _, ns := range r.Namespaces(c) {
			roles = append(roles, rbacv1ac.Role(r.Name(c), ns).WithLabels(c.Labels(r.Component)).WithRules(r.Rules(c, ns)...))
			bindings = append(bindings, c.roleBinding(r.Name(c), ns, r.Component))
		}
	}
	return roles, bindings
}
