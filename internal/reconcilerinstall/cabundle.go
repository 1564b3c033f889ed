package reconcilerinstall

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
)

// ComponentSources labels the sources Roles, named
// kmshealth-reconciler-<name>-sources.
const (
	ComponentSources  = "ca-bundle-sources"
	sourcesRoleSuffix = "-sources"
)

// caBundlePattern is pattern 1 for APIServices (Config.CABundles,
// kmshealth_reconciler.ca_bundles): the record names each APIService and
// its source (the controller's input), the ClusterRole list and watch of
// every APIService and get and patch of the kept ones (CachedKindRules),
// the sources Role — shared with webhookCABundlePattern — the Secrets and
// ConfigMaps of both, and the policy only spec.caBundle and the source
// annotation. --field-manager is the manager both caBundle controllers
// write as.
var caBundlePattern = Pattern{
	Name:     "ca-bundles",
	Validate: func(c Config) []error { return c.validateCABundles() },
	ClusterRules: func(c Config) []*rbacv1ac.PolicyRuleApplyConfiguration {
		names := c.APIServices()
		if len(names) == 0 {
			return nil
		}
		return CachedKindRules(apiregv1.GroupName, "apiservices", names)
	},
	Role: &PatternRole{
		Component:  ComponentSources,
		Name:       Config.SourcesRoleName,
		Namespaces: Config.SourceNamespaces,
		Rules: func(c Config, ns string) []*rbacv1ac.PolicyRuleApplyConfiguration {
			return SourcesRules(c.sourcesIn(ns))
		},
	},
	Record: func(c Config) map[string]string {
		if len(c.CABundles) == 0 { // an empty map would not round-trip
			return nil
		}
		return cabundle.RecordData(c.CABundles)
	},
	ReadRecord: func(c *Config, data map[string]string) {
		if good, _ := cabundle.FromRecord(data); len(good) > 0 {
			c.CABundles = good
		}
	},
	Args:     func(c Config) []string { return []string{"--field-manager=" + c.fieldManager()} },
	ReadArgs: func(c *Config, o reconciler.Options) { c.FieldManager = o.FieldManager },
	Policies: func(c Config) []install.Policy { return []install.Policy{APIServicePolicy(c)} },
}

// CachedKindRules are the rules of a kind the reconciler follows with one
// cluster-wide watch (controller.Kind.ClusterWide: APIServices, webhook
// configurations): list and watch of every object of the kind, which are
// few and not secret, and get and patch of the named ones only. The
// admission policy pins what a patch may change in those.
func CachedKindRules(group, resource string, names []string) []*rbacv1ac.PolicyRuleApplyConfiguration {
	return []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resource).WithVerbs("list", "watch"),
		rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resource).WithResourceNames(names...).WithVerbs("get", "patch"),
	}
}

// validateCABundles checks each kept APIService name and its source.
func (c Config) validateCABundles() []error {
	var errs []error
	for _, apiservice := range slices.Sorted(maps.Keys(c.CABundles)) {
		for _, m := range validation.IsDNS1123Subdomain(apiservice) {
			errs = append(errs, fmt.Errorf("ca_bundles: APIService name %q: %s", apiservice, m))
		}
		if s := c.CABundles[apiservice]; s.Validate() != nil {
			errs = append(errs, fmt.Errorf("ca_bundles[%q]: source %q: %w", apiservice, s, s.Validate()))
		}
	}
	return errs
}

// fieldManager is FieldManager with the default filled in.
func (c Config) fieldManager() string {
	if c.FieldManager == "" {
		return cabundle.DefaultFieldManager
	}
	return c.FieldManager
}

// SourcesRoleName names the Role and RoleBinding in each source namespace.
func (c Config) SourcesRoleName() string { return sourcesRolePrefix + c.Name + sourcesRoleSuffix }

// Sources are the CA bundle sources, sorted, without duplicates.
func (c Config) Sources() []cabundle.Source {
	out := make([]cabundle.Source, 0, len(c.CABundles))
	for _, s := range c.CABundles {
		out = append(out, s)
	}
	for _, k := range c.WebhookCABundles {
		out = append(out, k.Source)
	}
	return sortedSources(out)
}

// APIServices are the kept APIServices, sorted.
func (c Config) APIServices() []string { return slices.Sorted(maps.Keys(c.CABundles)) }

// SourceNamespaces are the namespaces that get a sources Role, sorted.
func (c Config) SourceNamespaces() []string {
	var out []string
	for _, s := range c.Sources() {
		out = append(out, s.Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedSources returns the sources sorted by their string form, without
// duplicates.
func sortedSources(in []cabundle.Source) []cabundle.Source {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b cabundle.Source) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// resourceOf is the RBAC resource of a source kind.
func resourceOf(kind string) string {
	if kind == cabundle.KindSecret {
		return "secrets"
	}
	return "configmaps"
}

// SourcesRules grants get/list/watch on exactly the named objects. The
// reconciler lists and watches each source with a metadata.name field
// selector, which RBAC authorizes as a request for that one name.
func SourcesRules(sources []cabundle.Source) []*rbacv1ac.PolicyRuleApplyConfiguration {
	names := map[string][]string{}
	for _, s := range sources {
		names[resourceOf(s.Kind)] = append(names[resourceOf(s.Kind)], s.Name)
	}
	var rules []*rbacv1ac.PolicyRuleApplyConfiguration
	for _, res := range []string{"configmaps", "secrets"} {
		if len(names[res]) == 0 {
			continue
		}
		n := names[res]
		slices.Sort(n)
		rules = append(rules, rbacv1ac.PolicyRule().
			WithAPIGroups(corev1.GroupName).WithResources(res).
			WithResourceNames(slices.Compact(n)...).
			WithVerbs("get", "list", "watch"))
	}
	return rules
}

// sourcesIn returns the sources in namespace ns, sorted.
func (c Config) sourcesIn(ns string) []cabundle.Source {
	var out []cabundle.Source
	for _, s := range c.Sources() {
		if s.Namespace == ns {
			out = append(out, s)
		}
	}
	return out
}

// APIServicePolicy lets the reconciler's ServiceAccount change only
// spec.caBundle and the kmshealth.io/ca-bundle-source annotation, only on
// APIServices that have spec.service (never a local one such as v1., whose
// traffic would follow a spec.service), and never create or delete one:
// with its token, no other field of any APIService can change.
func APIServicePolicy(c Config) install.Policy {
	return install.Policy{
		Name:           c.PolicyName("apiservices"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          apiregv1.GroupName,
		// And /status: a role widened to, say, cluster-admin reaches it.
		Resources:  []string{"apiservices", "apiservices/*"},
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables: [][2]string{
			// dyn() keeps the type checker from reading typed objects as
			// structs; at run time they are maps.
			{"newSpec", "dyn(object.spec)"},
			{"oldSpec", "dyn(oldObject.spec)"},
			{"newMeta", "dyn(object.metadata)"},
			{"oldMeta", "dyn(oldObject.metadata)"},
			{"newAnn", "object.metadata.?annotations.orValue({})"},
			{"oldAnn", "oldObject.metadata.?annotations.orValue({})"},
			{"own", "'" + cabundle.SourceAnnotation + "'"},
			{"volatile", "['annotations', 'managedFields', 'resourceVersion', 'generation']"},
		},
		Rules: []install.PolicyRule{
			{Expression: noSubresource, Message: "the kmshealth reconciler may not write an APIService through a subresource (/status)"},
			{Expression: "request.operation == 'UPDATE'", Message: "the kmshealth reconciler may only update APIServices, never create or delete one"},
			{Expression: "has(oldObject.spec.service)", Message: "the kmshealth reconciler may write spec.caBundle only on APIServices with spec.service (not on a local APIService)"},
			{Expression: "has(object.spec.service) && object.spec.service == oldObject.spec.service", Message: "the kmshealth reconciler may not change spec.service"},
			{
				// The same names as the RBAC resourceNames and the record:
				// were the RBAC widened, the policy still holds.
				Expression: "request.name in " + celList(slices.Sorted(maps.Keys(c.CABundles))),
				Message:    "the kmshealth reconciler may write only the APIServices it keeps (kmshealth_reconciler ca_bundles)",
			},
			{
				Expression: install.UnchangedBut("variables.newSpec", "variables.oldSpec", "['caBundle']"),
				Message:    "the kmshealth reconciler may change only spec.caBundle",
			},
			{
				Expression: install.UnchangedBut("variables.newMeta", "variables.oldMeta", "variables.volatile"),
				Message:    "the kmshealth reconciler may change no metadata but the " + cabundle.SourceAnnotation + " annotation",
			},
			{
				Expression: install.UnchangedBut("variables.newAnn", "variables.oldAnn", "[variables.own]"),
				Message:    "the kmshealth reconciler may change only the " + cabundle.SourceAnnotation + " annotation",
			},
		},
	}
}
