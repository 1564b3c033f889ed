package reconcilerinstall

import (
	"fmt"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reconciler"
)

// kmsAggregatorPattern is pattern 4's reconciler half (Config.KMSTarget,
// KMSMaxStaleness): Node metadata (the one kind listed whole), the KMS
// target and its /status by name, the KMSHealth CRD for the default
// target; its flags; the policy that lets it write only
// KMSPluginsDegraded and remove reports of deleted Nodes. It keeps
// nothing of the record: the target's conditions are its input.
var kmsAggregatorPattern = Pattern{
	Name: "kms-aggregator",
	Validate: func(c Config) []error {
		var errs []error
		if c.KMSTarget != (kmshealth.Target{}) {
			if err := c.KMSTarget.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("kms_target: %w", err))
			}
		}
		if c.KMSMaxStaleness < 0 {
			errs = append(errs, fmt.Errorf("kms_max_staleness %s: must be positive", c.KMSMaxStaleness))
		}
		return errs
	},
	ClusterRules: func(c Config) []*rbacv1ac.PolicyRuleApplyConfiguration {
		rules := []*rbacv1ac.PolicyRuleApplyConfiguration{
			rbacv1ac.PolicyRule().WithAPIGroups(corev1.GroupName).WithResources("nodes").WithVerbs("list", "watch"),
		}
		t := c.kmsTarget()
		if t.IsDefault() {
			// The aggregator watches the CRD so a cluster without it costs no polling.
			rules = append(rules, rbacv1ac.PolicyRule().WithAPIGroups(kmshealth.CRDGVR.Group).WithResources(kmshealth.CRDGVR.Resource).
				WithResourceNames(kmshealth.CRDName).WithVerbs("get", "list", "watch"))
		}
		return append(rules,
			rbacv1ac.PolicyRule().WithAPIGroups(t.Group).WithResources(t.Resource).WithResourceNames(t.Name).WithVerbs("get", "list", "watch"),
			rbacv1ac.PolicyRule().WithAPIGroups(t.Group).WithResources(t.Resource+"/status").WithResourceNames(t.Name).WithVerbs("patch"),
		)
	},
	Args: func(c Config) []string {
		return []string{kmsTargetFlag + c.kmsTarget().String(), kmsMaxStalenessFlag + c.kmsMaxStaleness().String()}
	},
	ReadArgs: func(c *Config, o reconciler.Options) {
		if t, err := kmshealth.ParseTarget(o.KMSTarget); err == nil {
			c.KMSTarget = t
		}
		c.KMSMaxStaleness = o.KMSMaxStaleness
	},
	Policies: func(c Config) []install.Policy { return []install.Policy{KMSStatusPolicy(c)} },
}

// The aggregator's flags, read back by Live.Config.
const (
	kmsTargetFlag       = "--kms-target="
	kmsMaxStalenessFlag = "--kms-max-staleness="
)

// DefaultKMSMaxStaleness matches the reporters' default 30 s interval.
const DefaultKMSMaxStaleness = kmshealth.StalenessFactor * kmshealth.DefaultInterval

// kmsTarget is KMSTarget with the default filled in.
func (c Config) kmsTarget() kmshealth.Target {
	if c.KMSTarget == (kmshealth.Target{}) {
		return kmshealth.DefaultTarget()
	}
	return c.KMSTarget
}

// kmsMaxStaleness is KMSMaxStaleness with the default filled in.
func (c Config) kmsMaxStaleness() time.Duration {
	if c.KMSMaxStaleness <= 0 {
		return DefaultKMSMaxStaleness
	}
	return c.KMSMaxStaleness
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
		// The object and every subresource: it writes only /status, but a
		// widened role reaches the rest.
		Resources:  []string{t.Resource, t.Resource + "/*"},
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables: [][2]string{
			{"oldStatus", "oldObject.?status.orValue({})"},
			{"newStatus", "object.?status.orValue({})"},
			{"oldOthers", "variables.oldStatus.?conditions.orValue([]).filter(c, c.type != '" + kmshealth.DegradedCondition + "')"},
			{"newOthers", "variables.newStatus.?conditions.orValue([]).filter(c, c.type != '" + kmshealth.DegradedCondition + "')"},
			{"oldEncryption", "variables.oldStatus.?encryptionStatus.orValue({})"},
			{"newEncryption", "variables.newStatus.?encryptionStatus.orValue({})"},
		},
		Rules: []install.PolicyRule{
			{Expression: "has(request.subResource) && request.subResource == 'status' && request.operation == 'UPDATE'", Message: "the kmshealth reconciler may only update the status of the KMS target, nothing else of it"},
			{Expression: "request.name == " + strconv.Quote(t.Name), Message: "the kmshealth reconciler may write only the KMS target " + t.Name},
			{
				Expression: install.UnchangedBut("object", "oldObject", "['status', 'metadata']"),
				Message:    "the kmshealth reconciler may change only .status",
			},
			{
				Expression: install.UnchangedBut("variables.newStatus", "variables.oldStatus", "['conditions', 'encryptionStatus']"),
				Message:    "the kmshealth reconciler may change only .status.conditions and remove entries of .status.encryptionStatus.healthReports",
			},
			{
				// OpenShift's typed reports (kmshealth_reporter.report_format):
				// the aggregator removes the entries of deleted Nodes (the
				// whole list, or encryptionStatus, with the last of them) and
				// never adds or changes one.
				Expression: install.UnchangedBut("variables.newEncryption", "variables.oldEncryption", "['healthReports']") + " && " +
					"variables.newEncryption.?healthReports.orValue([]).all(r, r in variables.oldEncryption.?healthReports.orValue([]))",
				Message: "the kmshealth reconciler may only remove entries of .status.encryptionStatus.healthReports, never add or change a report",
			},
			{
				Expression: "variables.newOthers.all(c, c in variables.oldOthers) && " +
					"variables.oldOthers.all(c, c in variables.newOthers || c.type.startsWith('" + kmshealth.ReporterConditionPrefix + "'))",
				Message: "the kmshealth reconciler may write only " + kmshealth.DegradedCondition + " and remove " + kmshealth.ReporterConditionPrefix + "<node> conditions, never add or change a report",
			},
		},
	}
}
