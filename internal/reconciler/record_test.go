package reconciler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/cabundle"
)

// TestParsedRecord: a record is parsed once however many reconciles read
// it, and again when the watch replaces it — with new data, or with the
// same data after a relist.
func TestParsedRecord(t *testing.T) {
	first := &corev1.ConfigMap{Data: map[string]string{cabundle.RecordKey("v1.a.example.com"): "Secret/ns/a-ca/ca.crt"}}
	relisted := &corev1.ConfigMap{Data: first.Data}
	changed := &corev1.ConfigMap{Data: map[string]string{
		cabundle.RecordKey("v1.a.example.com"): "Secret/ns/a-ca/ca.crt",
		cabundle.RecordKey("v1.b.example.com"): "ConfigMap/ns/b-ca/ca.crt",
		cabundle.RecordKey("Not_A_Name"):       "Secret/ns/c-ca/ca.crt",
	}}
	tests := []struct {
		name              string
		reads             []*corev1.ConfigMap
		parses, good, bad int // after the last read
	}{
		{name: "one record read by many reconciles", reads: []*corev1.ConfigMap{first, first, first}, parses: 1, good: 1},
		{name: "the same data after a relist", reads: []*corev1.ConfigMap{first, relisted, relisted}, parses: 2, good: 1},
		{name: "a changed record", reads: []*corev1.ConfigMap{first, changed, changed}, parses: 2, good: 2, bad: 1},
		{name: "back to an earlier object", reads: []*corev1.ConfigMap{first, changed, first}, parses: 3, good: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parses := 0
			r := newParsedRecord(func(data map[string]string) (map[string]cabundle.Source, map[string]error) {
				parses++
				return cabundle.FromRecord(data)
			})
			var good map[string]cabundle.Source
			var bad map[string]error
			for _, cm := range tt.reads {
				good, bad = r.of(cm)
			}
			if parses != tt.parses || len(good) != tt.good || len(bad) != tt.bad {
				t.Errorf("parses %d, good %d, bad %d; want %d, %d, %d", parses, len(good), len(bad), tt.parses, tt.good, tt.bad)
			}
		})
	}
}
