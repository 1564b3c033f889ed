package reconcilerinstall

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
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

// noSubresource holds for a write of the object itself (the request has
// no subResource then, not an empty one).
const noSubresource = "!has(request.subResource) || request.subResource == ''"

// volatileMeta are the metadata fields the API server changes on every
// write; the policies let them differ.
const volatileMeta = "['managedFields', 'resourceVersion', 'generation']"

// WorkloadPolicy lets the reconciler's ServiceAccount change, of the
// Deployments, StatefulSets and DaemonSets it keeps, only what its
// controllers write, and never create or delete one, nor write through a
// subresource (/scale, /status): on a TLS profile's rollout target the
// kmshealth.io/tls-profile-hash annotation of the pod template; on a
// workload of rbac_proxy_sidecars the kube-rbac-proxy sidecar, its
// volumes and its config hash annotation, each equal to the recorded one
// whole (RBACProxy.Pinned: every field, with only what the API server
// defaults allowed to differ, which Pinned already holds; see
// rbacproxy.Pinned). With its token, no other container, volume or field
// of any workload can change, and the sidecar cannot gain a hook, a
// probe, a port, a security option or an environment.
func WorkloadPolicy(c Config) install.Policy {
	type allowed struct {
		tls    bool
		pinned *rbacproxy.Pinned
	}
	byID := map[string]*allowed{}
	get := func(id string) *allowed {
		if byID[id] == nil {
			byID[id] = &allowed{}
		}
		return byID[id]
	}
	for _, t := range c.tlsTargets() {
		get(t.Kind.Resource() + "/" + t.Namespace + "/" + t.Name).tls = true
	}
	for _, p := range c.RBACProxies {
		pinned, err := rbacproxy.DecodePinned(p.Pinned)
		if err != nil {
			// Validate refuses it; a policy built anyway pins nothing
			// writable (the id is not a proxy's).
			continue
		}
		get(workloadResource(p) + "/" + p.Target.Namespace + "/" + p.Target.Name).pinned = &pinned
	}
	// Per workload, one CEL conjunction that holds only for the pinned
	// object (pinExpr): scalar leaves and exact key sets, so it does not
	// depend on how the API server compares a typed list with a literal.
	var tlsIDs, proxyIDs []string
	sidecarOK, volumesOK, hashOK := "false", "false", "false"
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		a := byID[id]
		if a.tls {
			tlsIDs = append(tlsIDs, id)
		}
		if a.pinned == nil {
			continue
		}
		proxyIDs = append(proxyIDs, id)
		when := "variables.id == " + strconv.Quote(id)
		ctr := "variables.newSidecar[0]"
		sidecarOK = fmt.Sprintf("(%s ? (%s) : %s)", when, pinExpr(ctr, a.pinned.Container), sidecarOK)
		vols := []string{"size(variables.newOurVols) == " + strconv.Itoa(len(a.pinned.Volumes))}
		for _, v := range a.pinned.Volumes {
			vols = append(vols, fmt.Sprintf("variables.newOurVols.exists_one(v, v.name == %s)", strconv.Quote(v.Name)),
				fmt.Sprintf("variables.newOurVols.filter(v, v.name == %s).all(v, %s)", strconv.Quote(v.Name), pinExpr("v", v)))
		}
		volumesOK = fmt.Sprintf("(%s ? (%s) : %s)", when, strings.Join(vols, " && "), volumesOK)
		hashOK = fmt.Sprintf("(%s ? variables.newHash == %s : %s)", when, strconv.Quote(a.pinned.ConfigHash), hashOK)
	}
	ours := strconv.Quote(rbacproxy.ContainerName)
	ourVolumes := celList([]string{rbacproxy.ConfigVolumeName, rbacproxy.TLSVolumeName})
	hashKey := strconv.Quote(rbacproxy.ConfigHashAnnotation)
	only := "the kmshealth reconciler may change only the pod template's " + tlsprofile.HashAnnotation + " annotation (on a TLS profile's rollout target) " +
		"and the kube-rbac-proxy sidecar (on a workload of rbac_proxy_sidecars)"
	return install.Policy{
		Name:           c.PolicyName("workloads"),
		Labels:         c.Labels(ComponentAdmission),
		ServiceAccount: c.serviceAccount(),
		Group:          appsv1.GroupName,
		// Every subresource too: a role widened to, say, edit reaches
		// /scale and /status, which the reconciler never writes.
		Resources:  []string{"deployments", "deployments/*", "statefulsets", "statefulsets/*", "daemonsets", "daemonsets/*"},
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Variables: [][2]string{
			{"id", "request.resource.resource + '/' + request.namespace + '/' + request.name"},
			{"tls", "variables.id in " + celList(tlsIDs)},
			{"proxy", "variables.id in " + celList(proxyIDs)},
			// dyn() and optional access: on a subresource the object is a
			// Scale or has no template; the first rule denies it.
			{"newObj", "dyn(object)"},
			{"oldObj", "dyn(oldObject)"},
			{"newTmpl", "variables.newObj.?spec.?template.orValue({})"},
			{"oldTmpl", "variables.oldObj.?spec.?template.orValue({})"},
			{"newTmplMeta", "variables.newTmpl.?metadata.orValue({})"},
			{"oldTmplMeta", "variables.oldTmpl.?metadata.orValue({})"},
			{"newAnn", "variables.newTmplMeta.?annotations.orValue({})"},
			{"oldAnn", "variables.oldTmplMeta.?annotations.orValue({})"},
			{"annKeys", "(variables.tls ? [" + strconv.Quote(tlsprofile.HashAnnotation) + "] : []) + (variables.proxy ? [" + hashKey + "] : [])"},
			{"newHash", "variables.newAnn[?" + hashKey + "].orValue('')"},
			{"oldHash", "variables.oldAnn[?" + hashKey + "].orValue('')"},
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
			{"sidecarPinned", sidecarOK},
			{"volumesPinned", volumesOK},
			{"hashPinned", hashOK},
		},
		Rules: []install.PolicyRule{
			{Expression: noSubresource, Message: "the kmshealth reconciler may not write a workload through a subresource (/scale, /status)"},
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
				Expression: "!variables.proxy || variables.newHash == variables.oldHash || variables.hashPinned",
				Message:    "the kmshealth reconciler may set the " + rbacproxy.ConfigHashAnnotation + " annotation only to the recorded config hash",
			},
			{
				Expression: install.UnchangedBut("variables.newPod", "variables.oldPod", "(variables.proxy ? ['initContainers', 'volumes'] : [])"),
				Message:    only + ", never the pod spec",
			},
			{
				Expression: "variables.newInit.filter(c, c.name != " + ours + ") == variables.oldInit.filter(c, c.name != " + ours + ")",
				Message:    "the kmshealth reconciler may not change the workload's own init containers",
			},
			{
				Expression: "variables.newSidecar == variables.oldSidecar || (size(variables.newSidecar) == 1 && variables.sidecarPinned)",
				Message: "the kmshealth reconciler may write only the kube-rbac-proxy sidecar recorded for this workload, whole: " +
					"its image, arguments, ports, probes, securityContext, mounts and resources exactly as recorded, and nothing more " +
					"(no command, environment, lifecycle hook, startupProbe, hostPort or other security option)",
			},
			{
				Expression: "variables.newVols.filter(v, !(v.name in " + ourVolumes + ")) == variables.oldVols.filter(v, !(v.name in " + ourVolumes + "))",
				Message:    "the kmshealth reconciler may not change the workload's own volumes",
			},
			{
				Expression: "variables.newOurVols == variables.oldOurVols || variables.volumesPinned",
				Message:    "the kmshealth reconciler may add only the sidecar's config ConfigMap and TLS Secret volumes, exactly as recorded",
			},
		},
	}
}

// pinExpr is a CEL expression that holds when the value expr evaluates to
// equals v (a Go value, as encoding/json writes it) whole: at every map
// the exact set of keys, at every list the exact length, at every leaf
// the value. Literals are strings, ints and bools, which the API server's
// CEL compares as such.
func pinExpr(expr string, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return "false"
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return "false"
	}
	var parts []string
	pinParts(expr, tree, &parts)
	return strings.Join(parts, " && ")
}

func pinParts(expr string, v any, parts *[]string) {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		*parts = append(*parts, fmt.Sprintf("size(%s) == %d", expr, len(keys)))
		if len(keys) > 0 {
			*parts = append(*parts, fmt.Sprintf("%s.all(k, k in %s)", expr, celList(keys)))
		}
		for _, k := range keys {
			pinParts(expr+"["+strconv.Quote(k)+"]", v[k], parts)
		}
	case []any:
		*parts = append(*parts, fmt.Sprintf("size(%s) == %d", expr, len(v)))
		for i, e := range v {
			pinParts(fmt.Sprintf("%s[%d]", expr, i), e, parts)
		}
	case string:
		*parts = append(*parts, expr+" == "+strconv.Quote(v))
	case json.Number:
		*parts = append(*parts, expr+" == "+v.String())
	case bool:
		*parts = append(*parts, fmt.Sprintf("%s == %t", expr, v))
	default: // null: encoding/json omits what we leave unset
		*parts = append(*parts, "false")
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
