package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

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
