package reconcilerinstall

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
)

// ComponentRBACProxies labels the rbac proxies Roles, named
// kmshealth-reconciler-<name>-rbac-proxies.
const (
	ComponentRBACProxies  = "rbac-proxies"
	rbacProxiesRoleSuffix = "-rbac-proxies"
)

// rbacProxyPattern is pattern 3 (Config.RBACProxies,
// kmshealth_reconciler.rbac_proxy_sidecars): the record entries (the
// reconciler's input: which config ConfigMaps to follow; no flag, so a new
// entry rolls nothing), a Role per namespace naming the config ConfigMaps
// and protected workloads, and the workloads policy, which pins the sidecar whole and also carries the TLS rollout
// targets' hash annotation (one policy per kind of object: every policy
// matching a request must allow it).
var rbacProxyPattern = Pattern{
	Name:     "rbac-proxy-sidecars",
	Validate: func(c Config) []error { return c.validateRBACProxies() },
	Role: &PatternRole{
		Component:  ComponentRBACProxies,
		Name:       Config.RBACProxyRoleName,
		Namespaces: Config.RBACProxyNamespaces,
		Rules:      rbacProxiesRules,
	},
	Record: func(c Config) map[string]string {
		if len(c.RBACProxies) == 0 {
			return nil
		}
		return rbacproxy.RecordData(c.RBACProxies)
	},
	ReadRecord: func(c *Config, data map[string]string) { c.RBACProxies = rbacproxy.FromRecord(data) },
	Policies:   func(c Config) []install.Policy { return []install.Policy{WorkloadPolicy(c)} },
}

// RBACProxy is one protected workload and the sidecar it carries, as the
// record holds it (its codec is the pattern's own).
//
// The installer learns Pinned from the sidecar resource's pinned_sidecar
// attribute, passed into this entry like image and args, rather than by
// reading the sidecar's record ConfigMap at install time: the attribute
// changes in the same plan as the sidecar (a new resources request, TLS
// Secret or port is a new pin, applied with it), where a record read once
// would leave the policy pinning yesterday's sidecar — and denying the
// reconciler's every restore of today's — until someone re-applied the
// reconciler by hand. Image and Args stay, checked against Pinned, so a
// wiring mistake (one sidecar's pin on another entry) fails at apply.
type RBACProxy = rbacproxy.Kept

// workloadResource is the protected workload's apps/v1 resource.
func workloadResource(p RBACProxy) string { return strings.ToLower(string(p.Target.Kind)) + "s" }

// validateRBACProxies checks the workloads RBAC will name and the pinned
// sidecar; each workload once.
func (c Config) validateRBACProxies() []error {
	var errs []error
	seen := map[rbacproxy.Target]bool{}
	for i, p := range c.RBACProxies {
		at := fmt.Sprintf("rbac_proxy_sidecars[%d]", i)
		if seen[p.Target] {
			errs = append(errs, fmt.Errorf("%s: %s is listed twice: list each protected workload once", at, p.Target))
		}
		seen[p.Target] = true
		if !slices.Contains(rbacproxy.Kinds(), p.Target.Kind) {
			errs = append(errs, fmt.Errorf("%s.target.kind %q: must be one of %q", at, p.Target.Kind, rbacproxy.Kinds()))
		}
		for _, m := range validation.IsDNS1123Label(p.Target.Namespace) {
			errs = append(errs, fmt.Errorf("%s.target.namespace %q: %s", at, p.Target.Namespace, m))
		}
		for _, m := range validation.IsDNS1123Subdomain(p.Target.Name) {
			errs = append(errs, fmt.Errorf("%s.target.name %q: %s", at, p.Target.Name, m))
		}
		if err := install.ValidateImage(p.Image); err != nil {
			errs = append(errs, fmt.Errorf("%s.image: %w", at, err))
		}
		if len(p.Args) == 0 {
			errs = append(errs, fmt.Errorf("%s.args: must not be empty: use the sidecar resource's args", at))
		}
		if p.Pinned == "" {
			errs = append(errs, fmt.Errorf("%s.pinned_sidecar: must be set: pass the sidecar resource's pinned_sidecar (kmshealth_rbac_proxy_sidecar.<name>.pinned_sidecar), which the admission policy pins whole", at))
			continue
		}
		pinned, err := rbacproxy.DecodePinned(p.Pinned)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.pinned_sidecar: %w", at, err))
			continue
		}
		if pinned.Container.Image != p.Image || !slices.Equal(pinned.Container.Args, p.Args) {
			errs = append(errs, fmt.Errorf("%s.pinned_sidecar: its image and args are not this entry's: pass image, args and pinned_sidecar of the same kmshealth_rbac_proxy_sidecar", at))
		}
	}
	return errs
}

// RBACProxyNamespaces are the namespaces that get an rbac proxies Role,
// sorted.
func (c Config) RBACProxyNamespaces() []string {
	var out []string
	for _, p := range c.RBACProxies {
		out = append(out, p.Target.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RBACProxyRoleName names the Role and RoleBinding in each namespace of
// RBACProxyNamespaces.
func (c Config) RBACProxyRoleName() string { return sourcesRolePrefix + c.Name + rbacProxiesRoleSuffix }

// rbacProxiesRules are the rules of the Role in namespace ns that let the rbac
// proxy controller read and watch the config ConfigMaps there and read,
// watch and patch the protected workloads there, each by name, and record
// Events about them. The admission policy narrows patch to the sidecar.
func rbacProxiesRules(c Config, ns string) []*rbacv1ac.PolicyRuleApplyConfiguration {
	var cms []string
	byResource := map[string][]string{}
	for _, p := range c.RBACProxies {
		if p.Target.Namespace != ns {
			continue
		}
		cms = append(cms, rbacproxy.ObjectName(p.Target))
		byResource[workloadResource(p)] = append(byResource[workloadResource(p)], p.Target.Name)
	}
	slices.Sort(cms)
	rules := []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups(corev1.GroupName).WithResources("configmaps").
			WithResourceNames(slices.Compact(cms)...).WithVerbs("get", "list", "watch"),
		rbacv1ac.PolicyRule().WithAPIGroups(eventsv1.GroupName).WithResources("events").WithVerbs("create", "patch"),
	}
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		names := byResource[res]
		slices.Sort(names)
		rules = append(rules, rbacv1ac.PolicyRule().WithAPIGroups(appsv1.GroupName).WithResources(res).
			WithResourceNames(slices.Compact(names)...).WithVerbs("get", "list", "watch", "patch"))
	}
	return rules
}
