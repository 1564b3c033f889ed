package reconcilerinstall

import (
	"encoding/json"
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
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
)

// ComponentRBACProxies labels the rbac proxies Roles, named
// kmshealth-reconciler-<name>-rbac-proxies.
const (
	ComponentRBACProxies  = "rbac-proxies"
	rbacProxiesRoleSuffix = "-rbac-proxies"
)

// rbacProxyPattern is pattern 3 (Config.RBACProxies,
// kmshealth_reconciler.rbac_proxy_sidecars): --rbac-proxy-configmaps, a
// Role per namespace naming the config ConfigMaps and protected
// workloads, the record entries (read back only) and the workloads
// policy, which pins the sidecar whole and also carries the TLS rollout
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
		return rbacProxiesRecord(c.RBACProxies)
	},
	ReadRecord: func(c *Config, data map[string]string) { c.RBACProxies = rbacProxiesFromRecord(data) },
	Args: func(c Config) []string {
		return listFlag(reconciler.RBACProxyConfigMapsFlag, c.RBACProxies, RBACProxy.ConfigMapID)
	},
	Policies: func(c Config) []install.Policy { return []install.Policy{WorkloadPolicy(c)} },
}

// RBACProxy is one protected workload and the sidecar it carries.
//
// Pinned is the whole sidecar (rbacproxy.Config.EncodePinned: the
// container, its volumes and the config hash, normalised with the API
// server's defaults), which the admission policy pins field for field.
// The installer learns it from the sidecar resource's pinned_sidecar
// attribute, passed into this entry like image and args, rather than by
// reading the sidecar's record ConfigMap at install time: the attribute
// changes in the same plan as the sidecar (a new resources request, TLS
// Secret or port is a new pin, applied with it), where a record read once
// would leave the policy pinning yesterday's sidecar — and denying the
// reconciler's every restore of today's — until someone re-applied the
// reconciler by hand. Image and Args stay, checked against Pinned, so a
// wiring mistake (one sidecar's pin on another entry) fails at apply.
type RBACProxy struct {
	Target rbacproxy.Target `json:"target"`
	Image  string           `json:"image"`
	Args   []string         `json:"args"`
	Pinned string           `json:"pinned,omitempty"`
}

// ConfigMapID is <namespace>/<name> of the workload's config ConfigMap,
// as --rbac-proxy-configmaps takes it.
func (p RBACProxy) ConfigMapID() string {
	return p.Target.Namespace + "/" + rbacproxy.ObjectName(p.Target)
}

// resource is the workload's apps/v1 resource.
func (p RBACProxy) resource() string { return strings.ToLower(string(p.Target.Kind)) + "s" }

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

// rbacProxyRecordPrefix prefixes the record's rbac proxy keys:
// "rbacproxy.<namespace>.<kind>.<workload>" (shortened as a label value)
// = the RBACProxy as JSON.
const rbacProxyRecordPrefix = "rbacproxy."

func rbacProxiesRecord(proxies []RBACProxy) map[string]string {
	out := make(map[string]string, len(proxies))
	for _, p := range proxies {
		b, _ := json.Marshal(p) // strings only: cannot fail
		out[rbacProxyRecordPrefix+p.Target.Namespace+"."+rbacproxy.ForLabelValue(p.Target)] = string(b)
	}
	return out
}

// rbacProxiesFromRecord reads the record's rbac proxies, sorted by
// workload; entries that do not parse are left out.
func rbacProxiesFromRecord(data map[string]string) []RBACProxy {
	var out []RBACProxy
	for k, v := range data {
		if !strings.HasPrefix(k, rbacProxyRecordPrefix) {
			continue
		}
		var p RBACProxy
		if json.Unmarshal([]byte(v), &p) != nil {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b RBACProxy) int { return strings.Compare(a.Target.String(), b.Target.String()) })
	return out
}

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
		byResource[p.resource()] = append(byResource[p.resource()], p.Target.Name)
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
