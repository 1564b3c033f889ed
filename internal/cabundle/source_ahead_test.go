package cabundle

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReadAhead: a read started ahead answers what ReadSource answers,
// the same on every call, for a present and a missing source, through a
// nil InlineReader (a GET) and a fresh one (a LIST: the ConfigMap here is
// not labelled, so a GET after it).
func TestReadAhead(t *testing.T) {
	cm := createConfigMap(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "read-ahead"},
		Data:       map[string]string{InlineKey: "bundle-bytes"},
	})
	tests := []struct {
		name    string
		src     Source
		want    string
		wantErr error
	}{
		{"present", Source{Kind: KindConfigMap, Namespace: cm.Namespace, Name: cm.Name, Key: InlineKey}, "bundle-bytes", nil},
		{"missing ConfigMap", Source{Kind: KindConfigMap, Namespace: cm.Namespace, Name: "read-ahead-gone", Key: InlineKey}, "", ErrSourceMissing},
		{"missing key", Source{Kind: KindConfigMap, Namespace: cm.Namespace, Name: cm.Name, Key: "other.crt"}, "", ErrSourceMissing},
	}
	for _, tt := range tests {
		for _, reader := range []*InlineReader{nil, {}} {
			t.Run(fmt.Sprintf("%s, reader %v", tt.name, reader != nil), func(t *testing.T) {
				wait := reader.ReadAhead(t.Context(), env.Clientset(), tt.src)
				for i := range 2 {
					got, err := wait()
					if string(got) != tt.want || !errors.Is(err, tt.wantErr) {
						t.Errorf("call %d: %q, %v; want %q, %v", i+1, got, err, tt.want, tt.wantErr)
					}
				}
			})
		}
	}
}
