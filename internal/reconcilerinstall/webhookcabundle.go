package reconcilerinstall

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
)

// webhookCABundlePattern is pattern 1 for validating and mutating
// webhook configurations and CRD conversion webhooks
// (Config.WebhookCABundles, kmshealth_reconciler.webhook_ca_bundles): the
// record names each object, the webhooks it owns and its source (the
// controller's input), the ClusterRole the objects per kind (list and
// watch of every webhook configuration, CachedKindRules; CRDs by name), the sources
// Role of caBundlePattern their sources, and two policies only the
// caBundle fields and the source annotation.
var webhookCABundlePattern = Pattern{
	Name:     "webhook-ca-bundles",
	Validate: func(c Config) []error { return c.validateWebhookCABundles() },
	ClusterRules: func(c Config) []*rbacv1ac.PolicyRuleApplyConfiguration {
		var rules []*rbacv1ac.PolicyRuleApplyConfiguration
		for _, r := range webhookResources {
			names := c.WebhookNames(r.kind)
			switch {
			case len(names) == 0:
			case r.kind == cabundle.KindCustomResourceDefinition:
				// CRDs are large: one field-selected watch each, by name.
				rules = append(rules, rbacv1ac.PolicyRule().WithAPIGroups(r.group).WithResources(r.resource).
					WithResourceNames(names...).WithVerbs("get", "list", "watch", "patch"))
			default:
				rules = append(rules, CachedKindRules(r.group, r.resource, names)...)
			}
		}
		return rules
	},
	Record: func(c Config) map[string]string {
		if len(c.WebhookCABundles) == 0 {
			return nil
		}
		return cabundle.TargetRecordData(c.WebhookCABundles)
	},
	ReadRecord: func(c *Config, data map[string]string) {
		kept, _ := cabundle.TargetsFromRecord(data)
		for _, key := range slices.Sorted(maps.Keys(kept)) {
			c.WebhookCABundles = append(c.WebhookCABundles, kept[key])
		}
	},
	Policies: func(c Config) []install.Policy { return []install.Policy{WebhookConfigurationPolicy(c), CRDPolicy(c)} },
}

// webhookMeta are the metadata variables and rules every caBundle policy
// shares: no metadata but the source annotation may change.
var webhookMetaVariables = [][2]string{
	{"newMeta", "dyn(object.metadata)"},
	{"oldMeta", "dyn(oldObject.metadata)"},
	{"newAnn", "object.metadata.?annotations.orValue({})"},
	{"oldAnn", "oldObject.metadata.?annotations.orValue({})"},
	{"own", "'" + cabundle.SourceAnnotation + "'"},
	{"volatile", "['annotations', 'managedFields', 'resourceVersion', 'generation']"},
}

func webhookMetaRules() []install.PolicyRule {
	return []install.PolicyRule{
		{
			Expression: install.UnchangedBut("variables.newMeta", "variables.oldMeta", "variables.volatile"),
			Message:    "the kmshealth reconciler may change no metadata but the " + cabundle.SourceAnnotation + " annotation",
		},
		{
			Expression: install.UnchangedBut("variables.newAnn", "variables.oldAnn", "[variables.own]"),
			Message:    "the kmshealth reconciler may change only the " + cabundle.SourceAnnotation + " annotation",
		},
	}
}

// keptWebhooks is a CEL map literal: resource → configuration name → the
// webhooks the reconciler owns ([] for every webhook).
func (c Config) keptWebhooks() string {
	var resources []string
	for _, r := range webhookResources {
		if r.kind == cabundle.KindCustomResourceDefinition {
			continue
		}
		var entries []string
		for _, k := range c.WebhookCABundles {
			if k.Target.Kind == r.kind {
				entries = append(entries, strconv.Quote(k.Target.Name)+": "+celList(k.Target.Webhooks))
			}
		}
		resources = append(resources, strconv.Quote(r.resource)+": {"+strings.Join(entries, ", ")+"}")
	}
	return "{" + strings.Join(resources, ", ") + "}"
}

// WebhookConfigurationPolicy lets the reconciler's ServiceAccount change,
// of the validating and mutating webhook configurations it keeps, only the
// clientConfig.caBundle of the webhooks it owns and the
// kmshealth.io/ca-bundle-source annotation, and never create or delete a
// configuration. Everything else is compared whole: a stolen token cannot
// redirect a webhook (clientConfig.service, url), widen or narrow what it
// sees (rules, namespaceSelector, objectSelector, matchPolicy,
// matchConditions), weaken it (failurePolicy, sideEffects, timeoutSeconds)
// or touch another webhook or configuration. Webhook configurations have
// no subresources.
func WebhookConfigurationPolicy(c Config) install.Policy {
	vars := append([][2]string{
		{"kept", "dyn(" + c.keptWebhooks() + ")[request.resource.resource]"},
		{"newHooks", "dyn(object).?webhooks.orValue([])"},
		{"oldHooks", "dyn(oldObject).?webhooks.orValue([])"},
	}, webhookMetaVariables...)
	return install.Policy{
		Name:           c.PolicyName("webhook-configurations"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          admissionregistrationv1.GroupName,
		Resources:      []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables:      vars,
		Rules: append([]install.PolicyRule{
			{Expression: "request.operation == 'UPDATE'", Message: "the kmshealth reconciler may only update webhook configurations, never create or delete one"},
			{
				// The same names as the RBAC resourceNames and the record.
				Expression: "request.name in variables.kept",
				Message:    "the kmshealth reconciler may write only the webhook configurations it keeps (kmshealth_reconciler webhook_ca_bundles)",
			},
			{
				Expression: install.UnchangedBut("dyn(object)", "dyn(oldObject)", "['metadata', 'webhooks']"),
				Message:    "the kmshealth reconciler may change only webhooks[].clientConfig.caBundle",
			},
			{
				Expression: "variables.newHooks.size() == variables.oldHooks.size() && variables.newHooks.all(w, variables.oldHooks.exists(o, o.name == w.name))",
				Message:    "the kmshealth reconciler may not add, remove or rename webhooks",
			},
			{
				Expression: "variables.newHooks.all(w, variables.oldHooks.exists(o, o.name == w.name && " +
					install.UnchangedBut("w", "o", "['clientConfig']") + " && " +
					install.UnchangedBut("w.clientConfig", "o.clientConfig", "['caBundle']") + "))",
				Message: "the kmshealth reconciler may change no field of a webhook but clientConfig.caBundle (not clientConfig.service or url, rules, failurePolicy, namespaceSelector, objectSelector, sideEffects, matchPolicy or any other)",
			},
			{
				Expression: "variables.newHooks.all(w, variables.kept[request.name].size() == 0 || w.name in variables.kept[request.name] || " +
					"variables.oldHooks.exists(o, o.name == w.name && o.clientConfig.?caBundle == w.clientConfig.?caBundle))",
				Message: "the kmshealth reconciler may change the caBundle only of the webhooks it keeps",
			},
		}, webhookMetaRules()...),
	}
}

// CRDPolicy lets the reconciler's ServiceAccount change, of the
// CustomResourceDefinitions it keeps, only
// spec.conversion.webhook.clientConfig.caBundle and the
// kmshealth.io/ca-bundle-source annotation; never /status, never create or
// delete a CRD. Everything else is compared whole.
func CRDPolicy(c Config) install.Policy {
	vars := append([][2]string{
		{"newSpec", "dyn(object.spec)"},
		{"oldSpec", "dyn(oldObject.spec)"},
		{"newConv", "variables.newSpec.?conversion.orValue({})"},
		{"oldConv", "variables.oldSpec.?conversion.orValue({})"},
		{"newHook", "variables.newConv.?webhook.orValue({})"},
		{"oldHook", "variables.oldConv.?webhook.orValue({})"},
		{"newCC", "variables.newHook.?clientConfig.orValue({})"},
		{"oldCC", "variables.oldHook.?clientConfig.orValue({})"},
	}, webhookMetaVariables...)
	return install.Policy{
		Name:           c.PolicyName("crds"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          apiextensionsv1.GroupName,
		Resources:      []string{"customresourcedefinitions", "customresourcedefinitions/status"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables:      vars,
		Rules: append([]install.PolicyRule{
			{Expression: "request.operation == 'UPDATE'", Message: "the kmshealth reconciler may only update CustomResourceDefinitions, never create or delete one"},
			{Expression: "request.?subResource.orValue('') == ''", Message: "the kmshealth reconciler may not write the status of a CustomResourceDefinition"},
			{
				Expression: "request.name in " + celList(c.WebhookNames(cabundle.KindCustomResourceDefinition)),
				Message:    "the kmshealth reconciler may write only the CustomResourceDefinitions it keeps (kmshealth_reconciler webhook_ca_bundles)",
			},
			{
				Expression: install.UnchangedBut("dyn(object)", "dyn(oldObject)", "['metadata', 'spec']") + " && " +
					install.UnchangedBut("variables.newSpec", "variables.oldSpec", "['conversion']") + " && " +
					install.UnchangedBut("variables.newConv", "variables.oldConv", "['webhook']") + " && " +
					install.UnchangedBut("variables.newHook", "variables.oldHook", "['clientConfig']") + " && " +
					install.UnchangedBut("variables.newCC", "variables.oldCC", "['caBundle']"),
				Message: "the kmshealth reconciler may change no field of a CustomResourceDefinition but spec.conversion.webhook.clientConfig.caBundle",
			},
		}, webhookMetaRules()...),
	}
}

// WebhookNames are the kept objects of kind, sorted.
func (c Config) WebhookNames(kind string) []string {
	var out []string
	for _, k := range c.WebhookCABundles {
		if k.Target.Kind == kind {
			out = append(out, k.Target.Name)
		}
	}
	slices.Sort(out)
	return out
}

// validateWebhookCABundles checks each kept object: a kind kmshealth
// injects, valid names, webhooks only for a webhook configuration, a
// valid source, each object once.
func (c Config) validateWebhookCABundles() []error {
	var errs []error
	seen := map[string]bool{}
	for i, k := range c.WebhookCABundles {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("webhook_ca_bundles[%d]: %s", i, fmt.Sprintf(format, args...)))
		}
		t := k.Target
		if !slices.Contains(cabundle.WebhookKinds(), t.Kind) {
			bad("kind %q: must be one of %s", t.Kind, strings.Join(cabundle.WebhookKinds(), ", "))
		}
		for _, m := range validation.IsDNS1123Subdomain(t.Name) {
			bad("name %q: %s", t.Name, m)
		}
		if t.Kind == cabundle.KindCustomResourceDefinition && len(t.Webhooks) > 0 {
			bad("webhooks: a CustomResourceDefinition has one conversion webhook; remove webhooks")
		}
		for _, w := range t.Webhooks {
			for _, m := range validation.IsDNS1123Subdomain(w) {
				bad("webhook %q: %s", w, m)
			}
		}
		if err := k.Source.Validate(); err != nil {
			bad("source %q: %v", k.Source, err)
		}
		if seen[t.String()] {
			bad("%s is named twice", t)
		}
		seen[t.String()] = true
	}
	return errs
}

// webhookResources are the API resources of the webhook caBundle kinds.
var webhookResources = []struct{ kind, group, resource string }{
	{cabundle.KindValidatingWebhookConfiguration, admissionregistrationv1.GroupName, "validatingwebhookconfigurations"},
	{cabundle.KindMutatingWebhookConfiguration, admissionregistrationv1.GroupName, "mutatingwebhookconfigurations"},
	{cabundle.KindCustomResourceDefinition, apiextensionsv1.GroupName, "customresourcedefinitions"},
}
