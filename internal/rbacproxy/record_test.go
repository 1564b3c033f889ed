package rbacproxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordConfigMap is the ConfigMap ConfigMapApply builds for c, as the
// reconciler would read it.
func recordConfigMap(t *testing.T, c Config) *corev1.ConfigMap {
	t.Helper()
	ac, err := c.ConfigMapApply()
	if err != nil {
		t.Fatal(err)
	}
	cm, _ := roundTrip[corev1.ConfigMap](t, ac)
	return &cm
}

func TestRecordRoundTrips(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"minimal": func(*Config) {},
		"full":    func(c *Config) { *c = full() },
		"everything": func(c *Config) {
			*c = full()
			c.Target.Kind = KindDaemonSet
			c.Authorization = Authorization{
				ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value }}", Resource: "pods"},
				Rewrites:           &Rewrites{ByQueryParameter: "ns", ByHTTPHeader: "X-Ns"},
			}
			c.AllowPaths = []string{"/metrics"}
			c.TLS = TLS{SecretName: "tls", MinVersion: "VersionTLS13"}
			c.NetworkPolicy = NetworkPolicy{Enabled: true,
				FromNamespaceSelector: &metav1.LabelSelector{},
				FromPodSelector:       &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}
		},
		"insecure": func(c *Config) { c.InsecureListen = true },
	} {
		t.Run(name, func(t *testing.T) {
			c := valid()
			mutate(&c)
			got, err := DecodeRecord(recordConfigMap(t, c))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.Defaulted()) {
				t.Fatalf("DecodeRecord =\n %+v\nwant\n %+v", got, c.Defaulted())
			}
			// What the reconciler renders from the record is what the
			// resource rendered.
			a, _ := c.PodTemplateApply()
			b, _ := got.PodTemplateApply()
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("pod template from the record differs:\n%s\n%s", ja, jb)
			}
		})
	}
}

func TestRecordIsStable(t *testing.T) {
	c := full()
	c.Resources.Requests = map[string]string{"memory": "32Mi", "cpu": "5m", "ephemeral-storage": "10Mi"}
	first, err := c.EncodeRecord()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := c.EncodeRecord()
		if string(again) != string(first) {
			t.Fatalf("EncodeRecord not stable:\n%s\n%s", first, again)
		}
	}
	if !strings.HasPrefix(string(first), `{"version":1,"config":{"target":{"kind":"Deployment","namespace":"apps","name":"web"},"upstreamPort":8080,"listenPort":8443,"healthPort":8643,"image":"quay.io/brancz/kube-rbac-proxy:v0.22.1"`) {
		t.Errorf("record = %s", first)
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.ConfigMap)
		want   []string
	}{
		{"not ours", func(cm *corev1.ConfigMap) { delete(cm.Labels, ManagedByLabel) }, []string{"not an rbac proxy record", "leave it alone"}},
		{"no for label", func(cm *corev1.ConfigMap) { delete(cm.Labels, ForLabel) }, []string{"not an rbac proxy record"}},
		{"no record", func(cm *corev1.ConfigMap) { delete(cm.Data, RecordKey) }, []string{`no "record.json"`, "re-apply"}},
		{"edited", func(cm *corev1.ConfigMap) { cm.Data[RecordKey] = "{" }, []string{"does not decode", "re-apply"}},
		{"unknown field", func(cm *corev1.ConfigMap) {
			cm.Data[RecordKey] = strings.Replace(cm.Data[RecordKey], `"upstreamPort"`, `"sidecarMode":"x","upstreamPort"`, 1)
		}, []string{"does not decode", "another kmshealth version"}},
		{"other version", func(cm *corev1.ConfigMap) {
			cm.Data[RecordKey] = strings.Replace(cm.Data[RecordKey], `"version":1`, `"version":2`, 1)
		}, []string{"record version 2", "reads 1"}},
		{"copied to another name", func(cm *corev1.ConfigMap) { cm.Name = "kmshealth-rbac-proxy-deployment-other" }, []string{"not the workload it is named for"}},
		{"copied to another namespace", func(cm *corev1.ConfigMap) { cm.Namespace = "other" }, []string{"not the workload it is named for"}},
		{"invalid", func(cm *corev1.ConfigMap) {
			cm.Data[RecordKey] = strings.Replace(cm.Data[RecordKey], `"upstreamPort":8080`, `"upstreamPort":8443`, 1)
		}, []string{"recorded configuration is invalid", "listenPort"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := recordConfigMap(t, valid())
			tc.mutate(cm)
			_, err := DecodeRecord(cm)
			if err == nil {
				t.Fatal("DecodeRecord accepted it")
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("DecodeRecord: %v\nwant it to contain %q", err, part)
				}
			}
		})
	}
}

func TestRecordDoesNotTellEmptyFromAbsent(t *testing.T) {
	a, b := valid(), valid()
	b.Resources = Resources{Requests: map[string]string{}, Limits: map[string]string{}}
	b.IgnorePaths, b.TLS.CipherSuites = []string{}, []string{}
	ra, _ := a.EncodeRecord()
	rb, _ := b.EncodeRecord()
	if string(ra) != string(rb) {
		t.Fatalf("records differ:\n%s\n%s", ra, rb)
	}
}
