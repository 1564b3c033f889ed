package reconcilerinstall

import (
	"context"
	"slices"
	"strings"
	"testing"

	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/rbacproxy"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/reporterinstall"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/tlsprofile"
)

// ownWrites are the kinds the reconciler creates that no admission policy
// narrows, and why: its leader-election Lease (one name, in its own
// namespace, RBAC resourceNames), its Events (append-only records, which
// change nothing of any workload), and the TokenReviews and
// SubjectAccessReviews that guard its /metrics (questions to the API
// server, never stored).
var ownWrites = []string{
	"coordination.k8s.io/leases", "events.k8s.io/events",
	"authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews",
}

// TestPoliciesMatchEverySubresource asks the API server's discovery which
// subresources it serves for every kind the reconciler may write (every
// resource its RBAC grants a write verb on, with every pattern
// configured), and fails when one of them — or the kind itself — is not
// matched by an admission policy: a role widened later (edit,
// cluster-admin) reaches every subresource, and one the policies do not
// match is a write no policy looks at.
func TestPoliciesMatchEverySubresource(t *testing.T) {
	// Serial: it installs the cluster-scoped KMSHealth CRD through the
	// installer, as TestReconcilerAttacks does.
	ctx := context.Background()
	target := reporterinstall.DefaultConfig("kube-system", "coverage")
	if err := reporterinstall.InstallCRD(ctx, clients(), target); err != nil {
		t.Fatal(err)
	}
	cfg := rbacproxy.Config{Target: rbacproxy.Target{Kind: rbacproxy.KindStatefulSet, Namespace: "cov-app", Name: "db"},
		UpstreamPort: 8080, ServiceAccountName: "default"}
	c := Config{Namespace: "cov", Name: "rec", Image: "x", Replicas: 2, AdmissionPolicy: true,
		CABundles: map[string]cabundle.Source{"v1.x.example.com": {Kind: cabundle.KindSecret, Namespace: "cov-src", Name: "ca", Key: "ca.crt"}},
		TLSProfiles: []TLSProfile{{Namespace: "cov-app", Name: "tls", Targets: []tlsprofile.Target{
			{Kind: "DaemonSet", Namespace: "cov-app", Name: "agent"}, {Kind: "Deployment", Namespace: "cov-app", Name: "web"}}}},
		RBACProxies: []RBACProxy{rbacProxyEntry(t, cfg)},
		WebhookCABundles: []cabundle.Kept{
			{Target: cabundle.Target{Kind: cabundle.KindValidatingWebhookConfiguration, Name: "v"}, Source: cabundle.Source{Kind: cabundle.KindSecret, Namespace: "cov-src", Name: "ca", Key: "ca.crt"}},
			{Target: cabundle.Target{Kind: cabundle.KindMutatingWebhookConfiguration, Name: "m"}, Source: cabundle.Source{Kind: cabundle.KindSecret, Namespace: "cov-src", Name: "ca", Key: "ca.crt"}},
			{Target: cabundle.Target{Kind: cabundle.KindCustomResourceDefinition, Name: "things.example.com"}, Source: cabundle.Source{Kind: cabundle.KindSecret, Namespace: "cov-src", Name: "ca", Key: "ca.crt"}},
		}}
	objs, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1ac.PolicyRuleApplyConfiguration
	rules = append(rules, objs.ClusterRole.Rules...)
	for _, r := range append([]*rbacv1ac.RoleApplyConfiguration{objs.LeaderRole, objs.EventsRole}, objs.Roles...) {
		rules = append(rules, r.Rules...)
	}
	written := map[string]bool{} // group/resource, subresources cut
	for _, r := range rules {
		if !slices.ContainsFunc(r.Verbs, func(v string) bool {
			return slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection", "*"}, v)
		}) {
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				base, _, _ := strings.Cut(res, "/")
				written[g+"/"+base] = true
			}
		}
	}
	for _, want := range []string{"apps/deployments", "apps/statefulsets", "apps/daemonsets", "/configmaps", "apiregistration.k8s.io/apiservices", target.Target.Group + "/" + target.Target.Resource,
		"admissionregistration.k8s.io/validatingwebhookconfigurations", "admissionregistration.k8s.io/mutatingwebhookconfigurations", "apiextensions.k8s.io/customresourcedefinitions"} {
		if !written[want] {
			t.Errorf("the reconciler's RBAC grants no write on %s; the test would not look at it", want)
		}
	}
	matched := map[string]bool{} // group/resource[/subresource] or group/resource/*
	for _, p := range Policies(c) {
		for _, res := range p.Resources {
			matched[p.Group+"/"+res] = true
		}
	}
	disc := env.Clientset().Discovery()
	groups, err := disc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	preferred := map[string]string{} // group → its preferred group version
	for _, g := range groups.Groups {
		preferred[g.Name] = g.PreferredVersion.GroupVersion
	}
	// The resource list of a group version names each subresource
	// ("deployments/scale").
	for gr := range written {
		group, res, _ := strings.Cut(gr, "/")
		if slices.Contains(ownWrites, gr) {
			continue
		}
		gv, ok := preferred[group]
		if !ok {
			t.Errorf("discovery serves no group %q, which the reconciler may write %s of", group, res)
			continue
		}
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discover %s: %v", gv, err)
		}
		found := false
		for _, r := range list.APIResources {
			base, sub, _ := strings.Cut(r.Name, "/")
			if base != res {
				continue
			}
			found = true
			name := group + "/" + r.Name
			switch {
			case sub == "" && matched[name]:
			case sub != "" && (matched[name] || matched[group+"/"+base+"/*"]):
			default:
				t.Errorf("%s is served (verbs %v) and the reconciler may write %s, but no admission policy matches it", name, r.Verbs, gr)
			}
		}
		if !found {
			t.Errorf("discovery serves no %s", gr)
		}
	}
}
