package reconcilerinstall

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmshealth"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
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
				Expression: install.UnchangedBut("object", "oldObject", "['status', 'metadata']"),
				Message:    "the kmshealth reconciler may change only .status",
			},
			{
				Expression: install.UnchangedBut("variables.newStatus", "variables.oldStatus", "['conditions']"),
				Message:    "the kmshealth reconciler may change only .status.conditions",
			},
			{
				Expression: "variables.newOthers.all(c, c in variables.oldOthers) && " +
					"variables.oldOthers.all(c, c in variables.newOthers || c.type.startsWith('" + kmshealth.ReporterConditionPrefix + "'))",
				Message: "the kmshealth reconciler may write only " + kmshealth.DegradedCondition + " and remove " + kmshealth.ReporterConditionPrefix + "<node> conditions, never add or change a report",
			},
		},
	}
}

// volatileMeta are the metadata fields the API server changes on every
// write; the policies let them differ.
const volatileMeta = "['managedFields', 'resourceVersion', 'generation']"

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
		Resources:      []string{"configmaps"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables: [][2]string{
			{"newObj", "dyn(object)"},
			{"oldObj", "dyn(oldObject)"},
			{"newData", "dyn(object).?data.orValue({})"},
			{"oldData", "dyn(oldObject).?data.orValue({})"},
		},
		Rules: []install.PolicyRule{
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

// WorkloadPolicy lets the reconciler's ServiceAccount change, of the
// Deployments, StatefulSets and DaemonSets it keeps, only what its
// controllers write, and never create or delete one: on a TLS profile's
// rollout target the kmshealth.io/tls-profile-hash annotation of the pod
// template; on a workload of rbac_proxy_sidecars the kube-rbac-proxy
// sidecar — pinned to the recorded image and arguments, with no command,
// environment, privilege or foreign mount —, its two volumes (the config
// ConfigMap and a Secret) and the config hash annotation. With its token,
// no other container, volume or field of any workload can change.
func WorkloadPolicy(c Config) install.Policy {
	type allowed struct {
		tls       bool
		proxy     *RBACProxy
		configMap string
	}
	byID := map[string]*allowed{}
	get := func(id string) *allowed {
		if byID[id] == nil {
			byID[id] = &allowed{}
		}
		return byID[id]
	}
	for _, t := range c.tlsTargets() {
		get(tlsprofile.TargetResource(t.Kind) + "/" + t.Namespace + "/" + t.Name).tls = true
	}
	for i, p := range c.RBACProxies {
		a := get(p.resource() + "/" + p.Target.Namespace + "/" + p.Target.Name)
		a.proxy, a.configMap = &c.RBACProxies[i], rbacproxy.ObjectName(p.Target)
	}
	// One map or list per field: the API server's CEL wants homogeneous
	// literals. The strings are Go-quoted, valid CEL (names and arguments
	// are printable).
	var tlsIDs, proxyIDs, images, args, configMaps []string
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		a := byID[id]
		if a.tls {
			tlsIDs = append(tlsIDs, id)
		}
		if a.proxy != nil {
			proxyIDs = append(proxyIDs, id)
			images = append(images, strconv.Quote(id)+": "+strconv.Quote(a.proxy.Image))
			args = append(args, strconv.Quote(id)+": "+celList(a.proxy.Args))
			configMaps = append(configMaps, strconv.Quote(id)+": "+strconv.Quote(a.configMap))
		}
	}
	celMap := func(entries []string) string { return "{" + strings.Join(entries, ", ") + "}" }
	ours := strconv.Quote(rbacproxy.ContainerName)
	ourVolumes := celList([]string{rbacproxy.ConfigVolumeName, rbacproxy.TLSVolumeName})
	only := "the kmshealth reconciler may change only the pod template's " + tlsprofile.HashAnnotation + " annotation (on a TLS profile's rollout target) " +
		"and the kube-rbac-proxy sidecar (on a workload of rbac_proxy_sidecars)"
	return install.Policy{
		Name:           c.PolicyName("workloads"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          appsv1.GroupName,
		Resources:      []string{"deployments", "statefulsets", "daemonsets"},
		Operations:     []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables: [][2]string{
			{"id", "request.resource.resource + '/' + request.namespace + '/' + request.name"},
			{"tls", "variables.id in " + celList(tlsIDs)},
			{"proxy", "variables.id in " + celList(proxyIDs)},
			{"image", celMap(images) + "[?variables.id].orValue('')"},
			{"args", celMap(args) + "[?variables.id].orValue([])"},
			{"configMap", celMap(configMaps) + "[?variables.id].orValue('')"},
			{"newObj", "dyn(object)"},
			{"oldObj", "dyn(oldObject)"},
			{"newTmpl", "dyn(object.spec.template)"},
			{"oldTmpl", "dyn(oldObject.spec.template)"},
			{"newTmplMeta", "variables.newTmpl.?metadata.orValue({})"},
			{"oldTmplMeta", "variables.oldTmpl.?metadata.orValue({})"},
			{"newAnn", "variables.newTmplMeta.?annotations.orValue({})"},
			{"oldAnn", "variables.oldTmplMeta.?annotations.orValue({})"},
			{"annKeys", "(variables.tls ? [" + strconv.Quote(tlsprofile.HashAnnotation) + "] : []) + (variables.proxy ? [" + strconv.Quote(rbacproxy.ConfigHashAnnotation) + "] : [])"},
			{"newPod", "variables.newTmpl.?spec.orValue({})"},
			{"oldPod", "variables.oldTmpl.?spec.orValue({})"},
			{"newInit", "variables.newPod.?initContainers.orValue([])"},
			{"oldInit", "variables.oldPod.?initContainers.orValue([])"},
			{"newSidecar", "variables.newInit.filter(c, c.name == " + ours + ")"},
			{"oldSidecar", "variables.oldInit.filter(c, c.name == " + ours + ")"},
			{"newVols", "variables.newPod.?volumes.orValue([])"},
			{"oldVols", "variables.oldPod.?volumes.orValue([])"},
			{"newOurVols", "variables.newVols.filter(v, v.name in " + ourVolumes + ")"},
			{"oldOurVols", "variables.oldVols.filter(v, v.name in " + ourVolumes + ")"},
		},
		Rules: []install.PolicyRule{
			{Expression: "request.operation == 'UPDATE'", Message: "the kmshealth reconciler may only update workloads, never create or delete one"},
			{
				Expression: "variables.tls || variables.proxy",
				Message:    "the kmshealth reconciler may write only the workloads it keeps (kmshealth_reconciler tls_profiles rollout targets and rbac_proxy_sidecars)",
			},
			{Expression: install.UnchangedBut("variables.newObj", "variables.oldObj", "['spec', 'metadata', 'status']"), Message: only},
			{Expression: install.UnchangedBut("variables.newObj.metadata", "variables.oldObj.metadata", volatileMeta), Message: "the kmshealth reconciler may change no metadata of a workload"},
			{Expression: install.UnchangedBut("variables.newObj.spec", "variables.oldObj.spec", "['template']"), Message: only},
			{Expression: install.UnchangedBut("variables.newTmpl", "variables.oldTmpl", "['metadata', 'spec']"), Message: only},
			{Expression: install.UnchangedBut("variables.newTmplMeta", "variables.oldTmplMeta", "['annotations']"), Message: only},
			{Expression: install.UnchangedBut("variables.newAnn", "variables.oldAnn", "variables.annKeys"), Message: only},
			{
				Expression: install.UnchangedBut("variables.newPod", "variables.oldPod", "(variables.proxy ? ['initContainers', 'volumes'] : [])"),
				Message:    only + ", never the pod spec",
			},
			{
				Expression: "variables.newInit.filter(c, c.name != " + ours + ") == variables.oldInit.filter(c, c.name != " + ours + ")",
				Message:    "the kmshealth reconciler may not change the workload's own init containers",
			},
			{
				Expression: "variables.newSidecar == variables.oldSidecar || variables.newSidecar.all(c, " +
					"c.image == variables.image && c.?args.orValue([]) == variables.args && " +
					"!has(c.command) && !has(c.env) && !has(c.envFrom) && c.?restartPolicy.orValue('') == 'Always' && " +
					"!c.?securityContext.?privileged.orValue(false) && !c.?securityContext.?allowPrivilegeEscalation.orValue(true) && " +
					"c.?securityContext.?runAsNonRoot.orValue(false) && c.?securityContext.?capabilities.?add.orValue([]).size() == 0 && " +
					"c.?volumeMounts.orValue([]).all(m, m.name in " + ourVolumes + "))",
				Message: "the kmshealth reconciler may write only the kube-rbac-proxy sidecar recorded for this workload: its image and arguments, " +
					"no command or environment, no privilege, and only its own volumes",
			},
			{
				Expression: "variables.newVols.filter(v, !(v.name in " + ourVolumes + ")) == variables.oldVols.filter(v, !(v.name in " + ourVolumes + "))",
				Message:    "the kmshealth reconciler may not change the workload's own volumes",
			},
			{
				Expression: "variables.newOurVols == variables.oldOurVols || variables.newOurVols.all(v, size(v) == 2 && (" +
					"(v.name == " + strconv.Quote(rbacproxy.ConfigVolumeName) + " && has(v.configMap) && v.configMap.name == variables.configMap) || " +
					"(v.name == " + strconv.Quote(rbacproxy.TLSVolumeName) + " && has(v.secret))))",
				Message: "the kmshealth reconciler may add only the sidecar's config ConfigMap and TLS Secret volumes",
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
