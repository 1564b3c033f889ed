package provider

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// TestPlanImage: an image left out of the configuration becomes the
// provider's own; a build that published none (every test binary is one)
// says so at plan time, naming `image`; a configured image is kept as is.
func TestPlanImage(t *testing.T) {
	if install.ImagePublished() {
		t.Fatal("this test binary claims a published image: it was linked as a release build")
	}
	clients := &Clients{Version: "0.0.0-dev"}

	var diags diag.Diagnostics
	image := types.StringUnknown()
	planImage(&image, types.StringNull(), clients, &diags)
	if want := install.DefaultImage("0.0.0-dev"); image.ValueString() != want {
		t.Errorf("image = %s, want the default %s", image, want)
	}
	if diags.WarningsCount() != 1 || diags.HasError() {
		t.Fatalf("diagnostics %v, want exactly one warning", diags)
	}
	w := diags.Warnings()[0]
	if !strings.Contains(w.Detail(), "set `image`") || !strings.Contains(w.Detail(), "make image") {
		t.Errorf("warning %q does not tell the user what to do", w.Detail())
	}

	diags = nil
	image = types.StringValue("registry.example/kmshealth@sha256:" + strings.Repeat("a", 64))
	planImage(&image, image, clients, &diags)
	if !strings.HasPrefix(image.ValueString(), "registry.example/") || len(diags) != 0 {
		t.Errorf("configured image became %s with %v, want it kept and no diagnostics", image, diags)
	}
}

// TestReconcilerFieldManagerWarning: a plan of kmshealth_reconciler that
// would write a caBundle as another manager than the one that owns it
// warns, naming the APIService; the same manager, or a plan that changes
// neither field_manager nor ca_bundles, does not. Several kept APIServices
// are read with one LIST, and with one GET each when the credentials may
// get but not list them; each path must find both conflicts.
func TestReconcilerFieldManagerWarning(t *testing.T) {
	ctx := context.Background()
	agg := aggregatorClient(t)
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "kube-system", Name: "x", Key: "ca.crt"}
	var names []string
	for _, suffix := range []string{"-a", "-b"} {
		name := createAPIService(t, uniqueName(t)+suffix+".example.com", apiServiceOpts{})
		live, err := agg.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := cabundle.Ensure(ctx, agg.ApiregistrationV1(), live, []byte(newCertPEM(t, "ca", certOpts{})), src, cabundle.ApplyOptions{FieldManager: "team-x"}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	getOnly := getOnlyAPIServices(t, names)
	model := func(manager string, kept ...string) *reconcilerModel {
		m := &reconcilerModel{FieldManager: types.StringValue(manager)}
		bundles := map[string]attr.Value{}
		for _, name := range kept {
			bundles[name] = types.StringValue(src.String())
		}
		m.CABundles = types.MapValueMust(types.StringType, bundles)
		return m
	}
	for _, tt := range []struct {
		what     string
		identity string // impersonated; "" is the admin
		manager  string
		kept     []string
		state    *reconcilerModel
		want     int      // warnings
		requests []string // method and path after /apis/apiregistration.k8s.io/v1/apiservices
	}{
		{"one, another manager", "", "kmshealth", names[:1], nil, 1, []string{"GET /" + names[0]}},
		{"one, its manager", "", "team-x", names[:1], nil, 0, []string{"GET /" + names[0]}},
		{"unchanged", "", "kmshealth", names[:1], model("kmshealth", names[0]), 0, nil},
		{"two, listed", "", "kmshealth", names, nil, 2, []string{"GET "}},
		{"two, list forbidden", getOnly, "kmshealth", names, nil, 2, []string{"GET ", "GET /" + names[0], "GET /" + names[1]}},
	} {
		cfg := env.RESTConfig()
		cfg.Impersonate.UserName = tt.identity
		var requests []string
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return kube.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
				requests = append(requests, r.Method+" "+strings.TrimPrefix(r.URL.Path, "/apis/apiregistration.k8s.io/v1/apiservices"))
				return rt.RoundTrip(r)
			})
		})
		clients := &Clients{}
		clients.once.Do(func() {}) // built by hand, over the test API server
		clients.aggregator = aggregator.NewForConfigOrDie(cfg)
		r := &reconcilerResource{clients: clients}

		var diags diag.Diagnostics
		r.warnFieldManager(ctx, model(tt.manager, tt.kept...), tt.state, &diags)
		if diags.WarningsCount() != tt.want || diags.HasError() {
			t.Errorf("%s: %v, want %d warning(s)", tt.what, diags, tt.want)
		}
		for i, w := range diags.Warnings() {
			if i < len(tt.kept) && (!strings.Contains(w.Detail(), tt.kept[i]) || !strings.Contains(w.Detail(), `"team-x"`)) {
				t.Errorf("%s: warning %q does not name the APIService %s and its owner", tt.what, w.Detail(), tt.kept[i])
			}
		}
		if !slices.Equal(requests, tt.requests) {
			t.Errorf("%s: requests %q, want %q", tt.what, requests, tt.requests)
		}
	}
}

// getOnlyAPIServices returns a user that may get the APIServices names and
// nothing else: not list them.
func getOnlyAPIServices(t *testing.T, names []string) string {
	t.Helper()
	ctx := context.Background()
	user := uniqueName(t) + "-get-only"
	rbac := env.Clientset().RbacV1()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{apiregv1.GroupName}, Resources: []string{"apiservices"}, ResourceNames: names, Verbs: []string{"get"}}},
	}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
	return user
}
