package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// TestStreamReadsTheAPIServer: a named stream of each kind of client
// (typed, dynamic, metadata-only) reads the real API server's watch
// responses: it hears its object created, changed and deleted, holds what
// the kind decodes, and nothing of another object of the same kind (the
// watch is field-selected).
func TestStreamReadsTheAPIServer(t *testing.T) {
	core := env.Clientset()
	raw, err := NewRawClient(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	meta := metadata.NewForConfigOrDie(env.RESTConfig())
	tests := []struct {
		name string
		kind *Kind
		data func(obj any) string // the object's data k, "" where the kind holds none
	}{
		{name: "typed", kind: TypedKind(core.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{}),
			data: func(obj any) string { return obj.(*corev1.ConfigMap).Data["k"] }},
		{name: "dynamic", kind: DynamicKind(raw, gvr), data: func(obj any) string {
			v, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "data", "k")
			return v
		}},
		{name: "metadata", kind: MetadataKind(meta, raw, gvr), data: func(obj any) string {
			_ = obj.(*metav1.PartialObjectMetadata)
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			name, other := "stream-"+tc.name, "stream-other-"+tc.name
			st := &stream{ref: Named(tc.kind, "default", name), tweak: kube.ByName(name)}
			st.lw = kube.NewRecordedListWatch(tc.kind.newLW("default", st.tweak))
			heard := make(chan []string, 16)
			go st.run(ctx, func(keys []string) { heard <- keys })
			next := func(what string) []string {
				t.Helper()
				select {
				case keys := <-heard:
					return keys
				case <-ctx.Done():
					t.Fatalf("%s: not heard", what)
				}
				return nil
			}
			key := "default/" + name
			if keys := next("first list"); keys != nil {
				t.Fatalf("first list: keys %q, want every object (nil)", keys)
			}
			// Whatever is written after the list is in the watch: it starts
			// at the list's resourceVersion.
			cms := core.CoreV1().ConfigMaps("default")
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cms.Delete(context.Background(), other, metav1.DeleteOptions{}) }()
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cms.Delete(context.Background(), name, metav1.DeleteOptions{}) }()
			if keys := next("created"); !slices.Equal(keys, []string{key}) {
				t.Fatalf("created: keys %q, want [%s] (not the other ConfigMap's)", keys, key)
			}
			check := func(what, want string) {
				t.Helper()
				obj, ok := st.first()
				if !ok {
					t.Fatalf("%s: the stream holds no object", what)
				}
				if got := tc.data(obj); tc.name != "metadata" && got != want {
					t.Errorf("%s: data k %q, want %q", what, got, want)
				}
				if rv := resourceVersion(obj); rv == "" {
					t.Errorf("%s: no resourceVersion held", what)
				}
			}
			check("created", "1")
			cm.Data["k"] = "2"
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if keys := next("updated"); !slices.Equal(keys, []string{key}) {
				t.Fatalf("updated: keys %q, want [%s]", keys, key)
			}
			check("updated", "2")
			if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if keys := next("deleted"); !slices.Equal(keys, []string{key}) {
				t.Fatalf("deleted: keys %q, want [%s]", keys, key)
			}
			if _, ok := st.first(); ok {
				t.Error("deleted: the stream still holds the object")
			}
		})
	}
}
