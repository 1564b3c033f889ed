package reconcilerinstall

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// ComponentTLSProfiles labels the TLS profiles Roles, named
// kmshealth-reconciler-<name>-tls-profiles.
const (
	ComponentTLSProfiles  = "tls-profiles"
	tlsProfilesRoleSuffix = "-tls-profiles"
)

// tlsProfilePattern is pattern 2 (Config.TLSProfiles,
// kmshealth_reconciler.tls_profiles): the record entries (the
// reconciler's input: which profile ConfigMaps to keep; no flag, so a new
// entry rolls nothing), a Role per namespace naming the profile
// ConfigMaps and rollout targets, read access to OpenShift's APIServer
// "cluster" and the profile ConfigMap policy. Its targets' part of the
// workloads policy is in rbacProxyPattern's WorkloadPolicy: every policy
// matching a request must allow it, so one kind has one policy.
var tlsProfilePattern = Pattern{
	Name:     "tls-profiles",
	Validate: func(c Config) []error { return c.validateTLSProfiles() },
	ClusterRules: func(c Config) []*rbacv1ac.PolicyRuleApplyConfiguration {
		if len(c.TLSProfiles) == 0 {
			return nil
		}
		// The TLS profile controller follows OpenShift's APIServer "cluster"
		// (read only; a cluster without that API costs one idle watch).
		gvr := tlsprofile.APIServerGVR()
		return []*rbacv1ac.PolicyRuleApplyConfiguration{rbacv1ac.PolicyRule().WithAPIGroups(gvr.Group).WithResources(gvr.Resource).
			WithResourceNames(tlsprofile.APIServerName).WithVerbs("get", "list", "watch")}
	},
	Role: &PatternRole{
		Component:  ComponentTLSProfiles,
		Name:       Config.TLSProfileRoleName,
		Namespaces: Config.TLSNamespaces,
		Rules:      tlsProfilesRules,
	},
	Record: func(c Config) map[string]string {
		if len(c.TLSProfiles) == 0 {
			return nil
		}
		return tlsprofile.RecordData(c.TLSProfiles)
	},
	ReadRecord: func(c *Config, data map[string]string) { c.TLSProfiles = tlsprofile.FromRecord(data) },
	Policies:   func(c Config) []install.Policy { return []install.Policy{TLSConfigMapPolicy(c)} },
}

// TLSProfile is one profile ConfigMap and the workloads it rolls, as
// the record holds it (its codec is the pattern's own).
type TLSProfile = tlsprofile.Kept

// validateTLSProfiles checks the names RBAC will carry; each profile once.
func (c Config) validateTLSProfiles() []error {
	var errs []error
	seen := map[string]bool{}
	for i, p := range c.TLSProfiles {
		at := fmt.Sprintf("tls_profiles[%d]", i)
		if seen[p.ID()] {
			errs = append(errs, fmt.Errorf("%s: %s is listed twice: list each profile ConfigMap once", at, p.ID()))
		}
		seen[p.ID()] = true
		for _, m := range validation.IsDNS1123Label(p.Namespace) {
			errs = append(errs, fmt.Errorf("%s.namespace %q: %s", at, p.Namespace, m))
		}
		for _, m := range validation.IsDNS1123Subdomain(p.Name) {
			errs = append(errs, fmt.Errorf("%s.name %q: %s", at, p.Name, m))
		}
		for j, t := range p.Targets {
			tat := fmt.Sprintf("%s.rollout_targets[%d]", at, j)
			if _, err := tlsprofile.TargetGVR(t); err != nil {
				errs = append(errs, fmt.Errorf("%s.kind: %w", tat, err))
			}
			for _, m := range validation.IsDNS1123Label(t.Namespace) {
				errs = append(errs, fmt.Errorf("%s.namespace %q: %s", tat, t.Namespace, m))
			}
			for _, m := range validation.IsDNS1123Subdomain(t.Name) {
				errs = append(errs, fmt.Errorf("%s.name %q: %s", tat, t.Name, m))
			}
		}
	}
	return errs
}

// TLSNamespaces are the namespaces that get a TLS profiles Role: those of
// the profile ConfigMaps and of their targets, sorted.
func (c Config) TLSNamespaces() []string {
	var out []string
	for _, p := range c.TLSProfiles {
		out = append(out, p.Namespace)
		for _, t := range p.Targets {
			out = append(out, t.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TLSProfileRoleName names the Role and RoleBinding in each namespace of
// TLSNamespaces.
func (c Config) TLSProfileRoleName() string {
	return sourcesRolePrefix + c.Name + tlsProfilesRoleSuffix
}

// tlsTargets are the rollout targets of every profile, sorted, once each.
func (c Config) tlsTargets() []tlsprofile.Target {
	var out []tlsprofile.Target
	for _, p := range c.TLSProfiles {
		out = append(out, p.Targets...)
	}
	slices.SortFunc(out, func(a, b tlsprofile.Target) int {
		return strings.Compare(a.String(), b.String())
	})
	return slices.Compact(out)
}

// tlsProfilesRules are the rules of the Role in namespace ns that lets the
// TLS profile controller keep the profile ConfigMaps there (read, watch and
// patch each by name, and record Events about them) and annotate the
// rollout targets there (read, watch and patch each by name). The admission
// policies narrow patch to profile.json and the hash annotation.
func tlsProfilesRules(c Config, ns string) []*rbacv1ac.PolicyRuleApplyConfiguration {
	var cms []string
	for _, p := range c.TLSProfiles {
		if p.Namespace == ns {
			cms = append(cms, p.Name)
		}
	}
	var rules []*rbacv1ac.PolicyRuleApplyConfiguration
	if len(cms) > 0 {
		slices.Sort(cms)
		rules = append(rules,
			rbacv1ac.PolicyRule().WithAPIGroups(corev1.GroupName).WithResources("configmaps").
				WithResourceNames(slices.Compact(cms)...).WithVerbs("get", "list", "watch", "patch"),
			rbacv1ac.PolicyRule().WithAPIGroups(eventsv1.GroupName).WithResources("events").WithVerbs("create", "patch"))
	}
	byResource := map[string][]string{}
	for _, t := range c.tlsTargets() {
		if t.Namespace == ns {
			byResource[t.Kind.Resource()] = append(byResource[t.Kind.Resource()], t.Name)
		}
	}
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		rules = append(rules, rbacv1ac.PolicyRule().WithAPIGroups(appsv1.GroupName).WithResources(res).
			WithResourceNames(byResource[res]...).WithVerbs("get", "list", "watch", "patch"))
	}
	return rules
}

// TLSConfigMapPolicy lets the reconciler's ServiceAccount change, of the
// profile ConfigMaps it keeps, only the profile.json key, and never
// create or delete a ConfigMap: with its token, no profile's spec, targets
// annotation or any other ConfigMap can change.
func TLSConfigMapPolicy(c Config) install.Policy {
	ids := make([]string, len(c.TLSProfiles))
	for i, p := range c.TLSProfiles {
		ids[i] = p.ID()
	}
	slices.Sort(ids)
	return install.Policy{
		Name:           c.PolicyName("tls-profile-configmaps"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          "",
		Resources:      []string{"configmaps", "configmaps/*"}, // none served today; any later one too
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables: [][2]string{
			{"newObj", "dyn(object)"},
			{"oldObj", "dyn(oldObject)"},
			{"newData", "dyn(object).?data.orValue({})"},
			{"oldData", "dyn(oldObject).?data.orValue({})"},
		},
		Rules: []install.PolicyRule{
			{Expression: noSubresource, Message: "the kmshealth reconciler may not write a ConfigMap through a subresource"},
			{Expression: "request.operation == 'UPDATE'", Message: "the kmshealth reconciler may only update TLS profile ConfigMaps, never create or delete a ConfigMap"},
			{
				Expression: "request.namespace + '/' + request.name in " + celList(ids),
				Message:    "the kmshealth reconciler may write only the TLS profile ConfigMaps it keeps (kmshealth_reconciler tls_profiles)",
			},
			{Expression: install.UnchangedBut("variables.newObj", "variables.oldObj", "['data', 'metadata']"), Message: "the kmshealth reconciler may change only data." + tlsprofile.DocumentKey},
			{Expression: install.UnchangedBut("variables.newData", "variables.oldData", celList([]string{tlsprofile.DocumentKey})), Message: "the kmshealth reconciler may change only data." + tlsprofile.DocumentKey},
			{Expression: install.UnchangedBut("variables.newObj.metadata", "variables.oldObj.metadata", volatileMeta), Message: "the kmshealth reconciler may change no metadata of a TLS profile ConfigMap (its spec and rollout targets are the user's)"},
		},
	}
}
