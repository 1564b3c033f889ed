package reporterinstall

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
)

// ComponentAdmission labels the admission policy and its binding.
const ComponentAdmission = "admission-policy"

// PolicyName names the admission policy (and its binding):
// "kmshealth-reporter.<namespace>.<name>".
func (c Config) PolicyName() string { return "kmshealth-reporter." + c.Namespace + "." + c.Name }

// StatusPolicy is the admission policy under which a reporter's request
// may change, on the target's status, only the entry
// KMSHealthReporter_<node>, where <node> is the node its token is bound to
// (the user extra authentication.kubernetes.io/node-name that ServiceAccount
// tokens of pods carry), with every other entry and field unchanged, and
// with no lastChecked further ahead than kmshealth.MaxClockSkew of the API
// server's clock. RBAC can only say "this object's status"; this says
// "this node's entry".
//
// The API server's clock is the time it stamps the request's own
// managedFields entry with before validating admission runs; CEL has no
// clock of its own and no JSON parser, so every "lastChecked" value of the
// entry's JSON message is found by a regular expression (a quote inside a
// JSON string is always escaped, so a detail cannot fake one).
func StatusPolicy(c Config) install.Policy {
	if c.ReportFormat == kmshealth.FormatOpenShiftTyped {
		return typedStatusPolicy(c)
	}
	t := c.Target
	if t == (kmshealth.Target{}) {
		t = kmshealth.DefaultTarget()
	}
	return reporterPolicy(c, t,
		[2]string{"ownType", "'" + kmshealth.ReporterConditionPrefix + "' + (size(variables.nodeNames) == 1 ? variables.nodeNames[0] : '')"},
		[][2]string{
			{"oldConds", "variables.oldStatus.?conditions.orValue([])"},
			{"newConds", "variables.newStatus.?conditions.orValue([])"},
			{"oldOthers", "variables.oldConds.filter(c, c.type != variables.ownType)"},
			{"newOthers", "variables.newConds.filter(c, c.type != variables.ownType)"},
			{"oldOwn", "variables.oldConds.filter(c, c.type == variables.ownType)"},
			{"newOwn", "variables.newConds.filter(c, c.type == variables.ownType)"},
			{"oldMsg", "size(variables.oldOwn) == 1 ? variables.oldOwn[0].?message.orValue('') : ''"},
			{"newMsg", "size(variables.newOwn) == 1 ? variables.newOwn[0].?message.orValue('') : ''"},
			{"lastChecked", `variables.newMsg.findAll('"lastChecked"\\s*:\\s*"[^"]*"').map(m, m.split('"')[3])`},
		},
		[]install.PolicyRule{
			{
				Expression: install.UnchangedBut("variables.newStatus", "variables.oldStatus", "['conditions']"),
				Message:    "a kmshealth reporter may change only .status.conditions",
			},
			{
				Expression: "size(variables.newOthers) == size(variables.oldOthers) && variables.newOthers.all(c, c in variables.oldOthers)",
				MessageCEL: "'a kmshealth reporter on node ' + variables.nodeNames[0] + ' may change only the condition ' + variables.ownType",
			},
			{
				Expression: "size(variables.newOwn) == 1",
				MessageCEL: "'a kmshealth reporter may not remove its condition ' + variables.ownType",
			},
			{
				// Before lastChecked is read by a regular expression: the
				// message must be the exact wire format, or a key spelt
				// another way ("LastChecked", escapes) would hide a time
				// from the policy that encoding/json still reads.
				Expression: "variables.newMsg.matches(" + celString(kmshealth.MessagePattern) + ")",
				Message:    "a kmshealth reporter's message must be exactly what a reporter writes: a minified JSON array of {\"keyID\",\"kekID\"?,\"status\",\"lastChecked\",\"detail\"?} objects, keys spelt exactly and in that order",
			},
			{
				Expression: allRFC3339,
				Message:    "every lastChecked in a kmshealth report must be an RFC 3339 timestamp",
			},
			{
				// The entries this request changed carry the API server's
				// clock. A second write within the same second changes no
				// entry (times are to the second): then the newest entry is
				// this request's own, unchanged, stamp.
				Expression: notAheadOfServer("variables.newMsg == variables.oldMsg"),
				Message:    fmt.Sprintf("lastChecked in a kmshealth report may not be more than %s ahead of the API server's clock", kmshealth.MaxClockSkew),
			},
		})
}

// typedStatusPolicy is StatusPolicy for a reporter that writes OpenShift's
// typed reports (--report-format=openshift-typed): on the target's status
// it may change only status.encryptionStatus.healthReports, and there only
// the entries whose nodeName is the node its token is bound to; it may not
// drop all of them (a reporter always writes at least one), and no
// lastCheckedTime of its entries may be further ahead than
// kmshealth.MaxClockSkew of the API server's clock (taken as in
// StatusPolicy). The entries are typed, so no message is parsed: the
// published schema makes lastCheckedTime a date-time, and the policy
// still requires the RFC 3339 form before it reads one as a timestamp.
func typedStatusPolicy(c Config) install.Policy {
	return reporterPolicy(c, c.Target,
		[2]string{"node", "size(variables.nodeNames) == 1 ? variables.nodeNames[0] : ''"},
		[][2]string{
			{"oldEncryption", "variables.oldStatus.?encryptionStatus.orValue({})"},
			{"newEncryption", "variables.newStatus.?encryptionStatus.orValue({})"},
			{"oldReports", "variables.oldEncryption.?healthReports.orValue([])"},
			{"newReports", "variables.newEncryption.?healthReports.orValue([])"},
			{"oldOthers", "variables.oldReports.filter(r, r.nodeName != variables.node)"},
			{"newOthers", "variables.newReports.filter(r, r.nodeName != variables.node)"},
			{"oldOwn", "variables.oldReports.filter(r, r.nodeName == variables.node)"},
			{"newOwn", "variables.newReports.filter(r, r.nodeName == variables.node)"},
			{"lastChecked", "variables.newOwn.map(r, r.?lastCheckedTime.orValue(''))"},
		},
		[]install.PolicyRule{
			{
				Expression: install.UnchangedBut("variables.newStatus", "variables.oldStatus", "['encryptionStatus']"),
				Message:    "a kmshealth reporter writing OpenShift's typed reports may change only .status.encryptionStatus.healthReports",
			},
			{
				Expression: install.UnchangedBut("variables.newEncryption", "variables.oldEncryption", "['healthReports']"),
				Message:    "a kmshealth reporter writing OpenShift's typed reports may change only .status.encryptionStatus.healthReports",
			},
			{
				Expression: "size(variables.newOthers) == size(variables.oldOthers) && variables.newOthers.all(r, r in variables.oldOthers)",
				MessageCEL: "'a kmshealth reporter on node ' + variables.node + ' may change only the healthReports entries of node ' + variables.node",
			},
			{
				Expression: "size(variables.newOwn) > 0",
				MessageCEL: "'a kmshealth reporter may not remove every healthReports entry of node ' + variables.node",
			},
			{
				Expression: allRFC3339,
				Message:    "every lastCheckedTime of a kmshealth reporter's healthReports entries must be an RFC 3339 timestamp",
			},
			{
				Expression: notAheadOfServer("variables.newOwn == variables.oldOwn"),
				Message:    fmt.Sprintf("lastCheckedTime in a kmshealth reporter's healthReports entries may not be more than %s ahead of the API server's clock", kmshealth.MaxClockSkew),
			},
		})
}

// reporterPolicy is what both status policies share: the policy on
// updates of t's status by the reporter's ServiceAccount; the variables
// nodeNames (the node the token is bound to), then nodeVar (the policy's
// name for that node's own part), oldStatus and newStatus, then vars, then
// allTimes and serverTimes (the managedFields times notAheadOfServer reads
// the API server's clock from); and the rules that the token is bound to a
// node and that only .status changes, then rules.
func reporterPolicy(c Config, t kmshealth.Target, nodeVar [2]string, vars [][2]string, rules []install.PolicyRule) install.Policy {
	variables := append([][2]string{
		{"nodeNames", "request.userInfo.?extra[?'authentication.kubernetes.io/node-name'].orValue([])"},
		nodeVar,
		{"oldStatus", "oldObject.?status.orValue({})"},
		{"newStatus", "object.?status.orValue({})"},
	}, vars...)
	variables = append(variables,
		[2]string{"allTimes", "object.metadata.?managedFields.orValue([]).filter(e, has(e.time)).map(e, timestamp(e.time))"},
		[2]string{"serverTimes", "object.metadata.?managedFields.orValue([]).filter(e, has(e.time) && !(e in oldObject.metadata.?managedFields.orValue([]))).map(e, timestamp(e.time))"},
	)
	return install.Policy{
		Name:           c.PolicyName(),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.Namespace + "/" + c.ServiceAccountName(),
		Group:          t.Group,
		Resources:      []string{t.Resource + "/status"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Variables:      variables,
		Rules: append([]install.PolicyRule{
			{
				Expression: "size(variables.nodeNames) == 1",
				Message:    "a kmshealth reporter's token must be bound to a pod on a node (the user extra authentication.kubernetes.io/node-name is missing)",
			},
			{
				Expression: install.UnchangedBut("object", "oldObject", "['status', 'metadata']"),
				Message:    "a kmshealth reporter may change only .status",
			},
		}, rules...),
	}
}

// notAheadOfServer holds when unchanged (the reporter's own entry is as
// before) or no lastChecked variable value is more than
// kmshealth.MaxClockSkew ahead of the API server's clock: the time it
// stamped this request's managedFields entries with (or, when the request
// changed none, the newest entry's).
func notAheadOfServer(unchanged string) string {
	skew := fmt.Sprintf("duration('%s')", kmshealth.MaxClockSkew)
	return unchanged + " || (size(variables.serverTimes) > 0 ? " +
		"variables.serverTimes.all(now, variables.lastChecked.all(t, timestamp(t) <= now + " + skew + ")) : " +
		"variables.allTimes.exists(now, variables.lastChecked.all(t, timestamp(t) <= now + " + skew + ")))"
}

// allRFC3339 holds when every lastChecked variable value is an RFC 3339
// timestamp, before the policy reads one with timestamp().
const allRFC3339 = `variables.lastChecked.all(t, t.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$'))`

// celString is s as a CEL single-quoted string literal.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
