package kube

import (
	"strings"
	"testing"
)

func TestWorkload(t *testing.T) {
	for _, k := range WorkloadKinds() {
		gvr, ok := k.GVR()
		if !ok || gvr.Group != "apps" || gvr.Version != "v1" || gvr.Resource != strings.ToLower(string(k))+"s" || k.Resource() != gvr.Resource {
			t.Errorf("%s: %v %v, resource %q", k, gvr, ok, k.Resource())
		}
		w := Workload{Kind: k, Namespace: "shop", Name: "web"}
		back, err := ParseWorkload(w.String())
		if err != nil || back != w {
			t.Errorf("ParseWorkload(%q) = %+v, %v; want %+v", w.String(), back, err, w)
		}
	}
	if _, ok := WorkloadKind("Pod").GVR(); ok {
		t.Error("Pod is a workload kind")
	}
	for in, want := range map[string]string{
		"Deployment/shop":         "want Kind/namespace/name",
		"Deployment//web":         "want Kind/namespace/name",
		"Pod/shop/web":            `kind "Pod" is not one of`,
		"deployment/shop/web":     `kind "deployment" is not one of`,
		"Deployment/shop/web/x":   "want Kind/namespace/name",
		"Deployment/shop/web/../": "want Kind/namespace/name",
	} {
		if _, err := ParseWorkload(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWorkload(%q): %v, want an error containing %q", in, err, want)
		}
	}
}
