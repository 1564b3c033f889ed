package reconcilerinstall

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// Component of the admission policies' objects.
const ComponentAdmission = "admission-policy"

// PolicyName names the admission policy (and its binding) of one kind of
// object the reconciler writes: "kmshealth-reconciler.<namespace>.<name>.<what>".
func (c Config) PolicyName(what string) string {
	return "kmshealth-reconciler." + c.Namespace + "." + c.Name + "." + what
}

// serviceAccount is namespace/name of the reconciler's identity.
func (c Config) serviceAccount() string { return c.Namespace + "/" + c.ServiceAccountName() }

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
		Resources:      []string{"apiservices"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
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
				Expression: "variables.newSpec.all(k, k == 'caBundle' || (k in variables.oldSpec && variables.newSpec[k] == variables.oldSpec[k])) && " +
					"variables.oldSpec.all(k, k == 'caBundle' || k in variables.newSpec)",
				Message: "the kmshealth reconciler may change only spec.caBundle",
			},
			{
				Expression: "variables.newMeta.all(k, k in variables.volatile || (k in variables.oldMeta && variables.newMeta[k] == variables.oldMeta[k])) && " +
					"variables.oldMeta.all(k, k in variables.volatile || k in variables.newMeta)",
				Message: "the kmshealth reconciler may change no metadata but the " + cabundle.SourceAnnotation + " annotation",
			},
			{
				Expression: "variables.newAnn.all(k, k == variables.own || (k in variables.oldAnn && variables.newAnn[k] == variables.oldAnn[k])) && " +
					"variables.oldAnn.all(k, k == variables.own || k in variables.newAnn)",
				Message: "the kmshealth reconciler may change only the " + cabundle.SourceAnnotation + " annotation",
			},
		},
	}
}

// KMSStatusPolicy lets the reconciler's ServiceAccount change, on the KMS
// target's status, only KMSPluginsDegraded, and remove (never add or
// change) KMSHealthReporter_<node> conditions: with its token, no report
// can be forged.
func KMSStatusPolicy(c Config) install.Policy {
	t := c.kmsTarget()
	return install.Policy{
		Name:           c.PolicyName("kms-status"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          t.Group,
		Resources:      []string{t.Resource + "/status"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Variables: [][2]string{
			{"oldStatus", "oldObject.?status.orValue({})"},
			{"newStatus", "object.?status.orValue({})"},
			{"oldOthers", "variables.oldStatus.?conditions.orValue([]).filter(c, c.type != '" + kmshealth.DegradedCondition + "')"},
			{"newOthers", "variables.newStatus.?conditions.orValue([]).filter(c, c.type != '" + kmshealth.DegradedCondition + "')"},
		},
		Rules: []install.PolicyRule{
			{
				Expression: "object.all(k, k in ['status', 'metadata'] || (k in oldObject && object[k] == oldObject[k])) && oldObject.all(k, k in ['status', 'metadata'] || k in object)",
				Message:    "the kmshealth reconciler may change only .status",
			},
			{
				Expression: "variables.newStatus.all(k, k == 'conditions' || (k in variables.oldStatus && variables.newStatus[k] == variables.oldStatus[k])) && " +
					"variables.oldStatus.all(k, k == 'conditions' || k in variables.newStatus)",
				Message: "the kmshealth reconciler may change only .status.conditions",
			},
			{
				Expression: "variables.newOthers.all(c, c in variables.oldOthers) && " +
					"variables.oldOthers.all(c, c in variables.newOthers || c.type.startsWith('" + kmshealth.ReporterConditionPrefix + "'))",
				Message: "the kmshealth reconciler may write only " + kmshealth.DegradedCondition + " and remove " + kmshealth.ReporterConditionPrefix + "<node> conditions, never add or change a report",
			},
		},
	}
}

// celList is names as a CEL list of string literals.
func celList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n) // names are DNS labels and dots: no escapes
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
