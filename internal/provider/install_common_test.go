package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
	"github.com/kmshealth/terraform-provider-kmshealth/internal/install"
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
// neither field_manager nor ca_bundles, does not.
func TestReconcilerFieldManagerWarning(t *testing.T) {
	ctx := context.Background()
	name := createAPIService(t, uniqueName(t)+".example.com", apiServiceOpts{})
	agg := aggregatorClient(t)
	live, err := agg.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := cabundle.Source{Kind: cabundle.KindConfigMap, Namespace: "kube-system", Name: "x", Key: "ca.crt"}
	if _, _, err := cabundle.Ensure(ctx, agg.ApiregistrationV1(), live, []byte(newCertPEM(t, "ca", certOpts{})), src, cabundle.ApplyOptions{FieldManager: "team-x"}); err != nil {
		t.Fatal(err)
	}
	clients := &Clients{}
	clients.once.Do(func() {}) // built by hand, over the test API server
	clients.aggregator = agg
	r := &reconcilerResource{clients: clients}
	model := func(manager string) *reconcilerModel {
		m := &reconcilerModel{FieldManager: types.StringValue(manager)}
		m.CABundles = types.MapValueMust(types.StringType, map[string]attr.Value{name: types.StringValue(src.String())})
		return m
	}
	for _, tt := range []struct {
		manager string
		state   *reconcilerModel
		want    int
	}{
		{"kmshealth", nil, 1},
		{"team-x", nil, 0},
		{"kmshealth", model("kmshealth"), 0}, // nothing changes: no GET, no warning
	} {
		var diags diag.Diagnostics
		r.warnFieldManager(ctx, model(tt.manager), tt.state, &diags)
		if diags.WarningsCount() != tt.want || diags.HasError() {
			t.Errorf("field_manager %q (state %v): %v, want %d warning(s)", tt.manager, tt.state != nil, diags, tt.want)
			continue
		}
		if tt.want == 1 && !strings.Contains(diags.Warnings()[0].Detail(), name) || tt.want == 1 && !strings.Contains(diags.Warnings()[0].Detail(), `"team-x"`) {
			t.Errorf("warning %q does not name the APIService and its owner", diags.Warnings()[0].Detail())
		}
	}
}
