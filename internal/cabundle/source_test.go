package cabundle

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseSourceRoundTrip(t *testing.T) {
	tests := []struct {
		in   string
		want Source
	}{
		{in: "Secret/kube-system/webhook-ca/ca.crt", want: Source{Kind: KindSecret, Namespace: "kube-system", Name: "webhook-ca", Key: "ca.crt"}},
		{in: "ConfigMap/default/kmshealth-cabundle-v1.metrics.example.com/ca.crt", want: Source{Kind: KindConfigMap, Namespace: "default", Name: "kmshealth-cabundle-v1.metrics.example.com", Key: "ca.crt"}},
		{in: "ConfigMap/ns-1/a/Key_With-Mixed.Case", want: Source{Kind: KindConfigMap, Namespace: "ns-1", Name: "a", Key: "Key_With-Mixed.Case"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSource(tt.in)
			if err != nil {
				t.Fatalf("ParseSource(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseSource(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Errorf("String() = %q, want %q", s, tt.in)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestParseSourceRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{
		{name: "empty", in: "", want: []string{SourceAnnotation, "want Kind/namespace/name/key"}},
		{name: "three parts", in: "Secret/default/ca", want: []string{`"Secret/default/ca"`, "want Kind/namespace/name/key"}},
		{name: "five parts", in: "Secret/default/ca/ca.crt/extra", want: []string{"want Kind/namespace/name/key"}},
		{name: "lowercase kind", in: "secret/default/ca/ca.crt", want: []string{`kind "secret"`, `must be "Secret" or "ConfigMap"`}},
		{name: "other kind", in: "Pod/default/ca/ca.crt", want: []string{`kind "Pod"`}},
		{name: "uppercase namespace", in: "Secret/Default/ca/ca.crt", want: []string{`namespace "Default"`}},
		{name: "empty namespace", in: "Secret//ca/ca.crt", want: []string{`namespace ""`}},
		{name: "name with underscore", in: "Secret/default/my_ca/ca.crt", want: []string{`name "my_ca"`}},
		{name: "key with colon", in: "Secret/default/ca/ca:crt", want: []string{`key "ca:crt"`}},
		{name: "key is dot-dot", in: "ConfigMap/default/ca/..", want: []string{`key ".."`}},
		{name: "empty key", in: "ConfigMap/default/ca/", want: []string{`key ""`}},
		{name: "every field bad at once", in: "Pod/NS/N_/a b", want: []string{`kind "Pod"`, `namespace "NS"`, `name "N_"`, `key "a b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSource(tt.in)
			if err == nil {
				t.Fatalf("ParseSource(%q) = %+v, want an error", tt.in, got)
			}
			if got != (Source{}) {
				t.Errorf("ParseSource(%q) returned %+v with its error, want the zero Source", tt.in, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSourceValidate(t *testing.T) {
	ok := Source{Kind: KindSecret, Namespace: "default", Name: "ca", Key: "ca.crt"}
	tests := []struct {
		name   string
		mutate func(*Source)
		want   string // the field-naming prefix of the error; "" means valid
	}{
		{name: "valid", mutate: func(*Source) {}, want: ""},
		{name: "valid ConfigMap", mutate: func(s *Source) { s.Kind = KindConfigMap }, want: ""},
		{name: "kind", mutate: func(s *Source) { s.Kind = "configmap" }, want: `kind "configmap": must be "Secret" or "ConfigMap"`},
		{name: "namespace uppercase", mutate: func(s *Source) { s.Namespace = "Prod" }, want: `namespace "Prod": `},
		{name: "namespace with dot", mutate: func(s *Source) { s.Namespace = "a.b" }, want: `namespace "a.b": `},
		{name: "namespace too long", mutate: func(s *Source) { s.Namespace = strings.Repeat("a", 64) }, want: `namespace "` + strings.Repeat("a", 64) + `": `},
		{name: "name empty", mutate: func(s *Source) { s.Name = "" }, want: `name "": `},
		{name: "name uppercase", mutate: func(s *Source) { s.Name = "CA" }, want: `name "CA": `},
		{name: "key with slash", mutate: func(s *Source) { s.Key = "a/b" }, want: `key "a/b": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mutate(&s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", s, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error starting %q", s, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Validate(%+v) = %q, want it to start with %q", s, err, tt.want)
			}
		})
	}
}

func TestConfigMapData(t *testing.T) {
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want map[string][]byte
	}{
		{name: "empty", cm: &corev1.ConfigMap{}, want: map[string][]byte{}},
		{
			name: "data and binaryData merge",
			cm: &corev1.ConfigMap{
				Data:       map[string]string{"ca.crt": "text"},
				BinaryData: map[string][]byte{"ca.der": {0x30, 0x00}},
			},
			want: map[string][]byte{"ca.crt": []byte("text"), "ca.der": {0x30, 0x00}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ConfigMapData(tt.cm)
			if len(got) != len(tt.want) {
				t.Fatalf("ConfigMapData = %q, want %q", got, tt.want)
			}
			for k, v := range tt.want {
				if !bytes.Equal(got[k], v) {
					t.Errorf("key %q = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestKeyOfListsAvailableKeys(t *testing.T) {
	s := Source{Kind: KindSecret, Namespace: "default", Name: "ca", Key: "ca.crt"}
	_, err := keyOf(s, map[string][]byte{"tls.key": nil, "tls.crt": nil})
	if !errors.Is(err, ErrSourceMissing) {
		t.Fatalf("error %v does not wrap ErrSourceMissing", err)
	}
	want := `CA bundle source missing: Secret default/ca has no key "ca.crt" (it has: tls.crt, tls.key); fix source.key or add the key`
	if err.Error() != want {
		t.Errorf("error\n got %q\nwant %q", err, want)
	}
}
