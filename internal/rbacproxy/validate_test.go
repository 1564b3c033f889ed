package rbacproxy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// valid is the smallest valid Config: every test changes one thing.
func valid() Config {
	return Config{
		Target:             Target{Kind: KindDeployment, Namespace: "apps", Name: "web"},
		UpstreamPort:       8080,
		ServiceAccountName: "web",
	}
}

func problems(t *testing.T, err error) field.ErrorList {
	t.Helper()
	if err == nil {
		return nil
	}
	es := FieldErrors(err)
	if len(es) == 0 {
		t.Fatalf("error %v holds no field errors", err)
	}
	return es
}

// has reports whether es holds an error on fld whose message contains
// every part.
func has(es field.ErrorList, fld string, parts ...string) bool {
	for _, e := range es {
		if e.Field != fld {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e.Detail, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestValidateAcceptsValidConfigs(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"minimal":     func(*Config) {},
		"statefulset": func(c *Config) { c.Target.Kind = KindStatefulSet },
		"daemonset":   func(c *Config) { c.Target.Kind = KindDaemonSet },
		"resource attributes": func(c *Config) {
			c.Authorization.ResourceAttributes = &ResourceAttributes{Namespace: "apps", APIGroup: "monitoring.coreos.com", APIVersion: "v1", Resource: "prometheuses", Subresource: "api", Name: "k8s"}
		},
		"rewrites by query parameter": func(c *Config) {
			c.Authorization = Authorization{
				ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value }}", APIVersion: "v1", Resource: "namespace", Subresource: "metrics"},
				Rewrites:           &Rewrites{ByQueryParameter: "namespace"},
			}
		},
		"rewrites by header, template with a pipeline": func(c *Config) {
			c.Authorization = Authorization{
				ResourceAttributes: &ResourceAttributes{Resource: "pods", Name: `{{ .Value | printf "%s" }}`},
				Rewrites:           &Rewrites{ByHTTPHeader: "X-Pod"},
			}
		},
		"ignore paths": func(c *Config) { c.IgnorePaths = []string{"/metrics", "/api/v1/*"} },
		"allow paths":  func(c *Config) { c.AllowPaths = []string{"/metrics"} },
		"tls profile": func(c *Config) {
			c.TLS = TLS{SecretName: "web-tls", MinVersion: "VersionTLS12", CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}
		},
		"tls 1.3 only": func(c *Config) { c.TLS.MinVersion = "VersionTLS13" },
		"insecure":     func(c *Config) { c.InsecureListen = true },
		"insecure ignores the health port": func(c *Config) {
			c.InsecureListen = true
			c.HealthPort = 8080 // same as upstream, but unused
		},
		"resources": func(c *Config) {
			c.Resources = Resources{Requests: map[string]string{"cpu": "5m", "memory": "32Mi"}, Limits: map[string]string{"memory": "64Mi"}}
		},
		"service": func(c *Config) { c.ServiceName = "web" },
		"network policy": func(c *Config) {
			c.NetworkPolicy = NetworkPolicy{Enabled: true, FromNamespaceSelector: &metav1.LabelSelector{}}
		},
		"own ports": func(c *Config) { c.ListenPort, c.HealthPort = 9443, 9643 },
	} {
		t.Run(name, func(t *testing.T) {
			c := valid()
			mutate(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
		})
	}
}

func TestValidateNamesFieldAndFix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string
		parts  []string // all in one message
	}{
		{"unknown kind", func(c *Config) { c.Target.Kind = "ReplicaSet" }, "target.kind", []string{`"ReplicaSet"`, `"Deployment", "StatefulSet", "DaemonSet"`}},
		{"kind in lower case", func(c *Config) { c.Target.Kind = "deployment" }, "target.kind", []string{"use one of"}},
		{"no namespace", func(c *Config) { c.Target.Namespace = "" }, "target.namespace", []string{"is required"}},
		{"bad namespace", func(c *Config) { c.Target.Namespace = "Apps" }, "target.namespace", []string{`"Apps"`, "namespace name"}},
		{"no name", func(c *Config) { c.Target.Name = "" }, "target.name", []string{"is required", "metadata.name"}},
		{"no upstream port", func(c *Config) { c.UpstreamPort = 0 }, "upstreamPort", []string{"0 is not a port", "1-65535", "127.0.0.1"}},
		{"upstream port too big", func(c *Config) { c.UpstreamPort = 70000 }, "upstreamPort", []string{"70000", "1-65535"}},
		{"negative listen port", func(c *Config) { c.ListenPort = -1 }, "listenPort", []string{"-1 is not a port"}},
		{"listen = upstream", func(c *Config) { c.UpstreamPort = 8443 }, "listenPort", []string{"8443 is also upstreamPort", "choose another"}},
		{"health = listen", func(c *Config) { c.HealthPort = 8443 }, "healthPort", []string{"8443 is also listenPort"}},
		{"health = upstream", func(c *Config) { c.UpstreamPort = 8643 }, "healthPort", []string{"8643 is also upstreamPort"}},
		{"image with space", func(c *Config) { c.Image = "quay.io/x y" }, "image", []string{"not an image reference", DefaultImage}},
		{"bad quantity", func(c *Config) { c.Resources.Limits = map[string]string{"memory": "lots"} }, "resources.limits[memory]", []string{`"lots" is not a quantity`}},
		{"bad resource name", func(c *Config) { c.Resources.Requests = map[string]string{"c p u": "1"} }, "resources.requests[c p u]", []string{"not a resource name"}},
		{"request above limit", func(c *Config) {
			c.Resources = Resources{Requests: map[string]string{"memory": "128Mi"}, Limits: map[string]string{"memory": "64Mi"}}
		}, "resources.requests[memory]", []string{"above the limit 64Mi"}},
		{"both path lists", func(c *Config) { c.IgnorePaths, c.AllowPaths = []string{"/a"}, []string{"/b"} }, "allowPaths", []string{"together with ignorePaths", "keep one"}},
		{"relative path", func(c *Config) { c.IgnorePaths = []string{"metrics"} }, "ignorePaths[0]", []string{`"metrics"`, "starting with '/'"}},
		{"bad pattern", func(c *Config) { c.AllowPaths = []string{"/a", "/[b"} }, "allowPaths[1]", []string{`"/[b"`, "path.Match"}},
		{"comma in path", func(c *Config) { c.IgnorePaths = []string{"/a,/b"} }, "ignorePaths[0]", []string{"without ','"}},
		{"duplicate path", func(c *Config) { c.IgnorePaths = []string{"/a", "/a"} }, "ignorePaths[1]", []string{"listed twice"}},
		{"resource attributes without resource", func(c *Config) {
			c.Authorization.ResourceAttributes = &ResourceAttributes{Namespace: "apps"}
		}, "authorization.resourceAttributes.resource", []string{"is required"}},
		{"core group spelt out", func(c *Config) {
			c.Authorization.ResourceAttributes = &ResourceAttributes{APIGroup: "core", Resource: "services"}
		}, "authorization.resourceAttributes.apiGroup", []string{"core API group is the empty string"}},
		{"group in apiVersion", func(c *Config) {
			c.Authorization.ResourceAttributes = &ResourceAttributes{APIVersion: "apps/v1", Resource: "deployments"}
		}, "authorization.resourceAttributes.apiVersion", []string{"put the group in apiGroup"}},
		{"slash in resource", func(c *Config) {
			c.Authorization.ResourceAttributes = &ResourceAttributes{Resource: "services/proxy"}
		}, "authorization.resourceAttributes.resource", []string{"no '/'"}},
		{"template without rewrites", func(c *Config) {
			c.Authorization.ResourceAttributes = &ResourceAttributes{Namespace: "{{ .Value }}", Resource: "pods"}
		}, "authorization.resourceAttributes.namespace", []string{"without rewrites", "literally", "add authorization.rewrites"}},
		{"rewrites without attributes", func(c *Config) {
			c.Authorization.Rewrites = &Rewrites{ByQueryParameter: "namespace"}
		}, "authorization.rewrites", []string{"no effect without resourceAttributes"}},
		{"rewrites without source", func(c *Config) {
			c.Authorization = Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value }}", Resource: "pods"}, Rewrites: &Rewrites{}}
		}, "authorization.rewrites", []string{"set byQueryParameter or byHTTPHeader"}},
		{"rewrites without {{ .Value }}", func(c *Config) {
			c.Authorization = Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "apps", Resource: "pods"}, Rewrites: &Rewrites{ByQueryParameter: "namespace"}}
		}, "authorization.resourceAttributes", []string{"no field uses {{ .Value }}", "400"}},
		{"template of another field", func(c *Config) {
			c.Authorization = Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Namespace }}", Resource: "pods"}, Rewrites: &Rewrites{ByQueryParameter: "namespace"}}
		}, "authorization.resourceAttributes.namespace", []string{"not a valid template", "{{ .Value }}"}},
		{"template that does not parse", func(c *Config) {
			c.Authorization = Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value ", Resource: "pods"}, Rewrites: &Rewrites{ByQueryParameter: "namespace"}}
		}, "authorization.resourceAttributes.namespace", []string{"not a valid template"}},
		{"bad header name", func(c *Config) {
			c.Authorization = Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value }}", Resource: "pods"}, Rewrites: &Rewrites{ByHTTPHeader: "X Namespace"}}
		}, "authorization.rewrites.byHTTPHeader", []string{"not an HTTP header name"}},
		{"bad query parameter", func(c *Config) {
			c.Authorization = Authorization{ResourceAttributes: &ResourceAttributes{Namespace: "{{ .Value }}", Resource: "pods"}, Rewrites: &Rewrites{ByQueryParameter: "a=b"}}
		}, "authorization.rewrites.byQueryParameter", []string{"not a query parameter name"}},
		{"unknown tls version", func(c *Config) { c.TLS.MinVersion = "TLSv1.2" }, "tls.minVersion", []string{`"TLSv1.2"`, `"VersionTLS12"`}},
		{"openssl cipher name", func(c *Config) { c.TLS.CipherSuites = []string{"ECDHE-RSA-AES128-GCM-SHA256"} }, "tls.cipherSuites[0]", []string{"IANA names", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}},
		{"duplicate suite", func(c *Config) {
			c.TLS.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
		}, "tls.cipherSuites[1]", []string{"listed twice"}},
		{"only tls 1.3 suites below 1.3", func(c *Config) { c.TLS.CipherSuites = []string{"TLS_AES_128_GCM_SHA256"} }, "tls.cipherSuites", []string{"no suite for TLS 1.2", "VersionTLS13"}},
		{"bad secret name", func(c *Config) { c.TLS.SecretName = "Web_TLS" }, "tls.secretName", []string{"not a Secret name"}},
		{"insecure with a secret", func(c *Config) { c.InsecureListen, c.TLS.SecretName = true, "web-tls" }, "tls.secretName", []string{"no effect with insecureListen"}},
		{"insecure with a min version", func(c *Config) { c.InsecureListen, c.TLS.MinVersion = true, "VersionTLS13" }, "tls.minVersion", []string{"no effect with insecureListen"}},
		{"no service account", func(c *Config) { c.ServiceAccountName = "" }, "serviceAccountName", []string{"is required", `"default"`, AuthDelegatorClusterRole}},
		{"bad service name", func(c *Config) { c.ServiceName = "1web" }, "serviceName", []string{"not a Service name"}},
		{"bad selector", func(c *Config) {
			c.NetworkPolicy = NetworkPolicy{Enabled: true, FromPodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a b"}}}
		}, "networkPolicy.fromPodSelector.matchLabels", []string{"fix the selector"}},
		{"bad selector operator", func(c *Config) {
			c.NetworkPolicy = NetworkPolicy{Enabled: true, FromNamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Like"}}}}
		}, "networkPolicy.fromNamespaceSelector.matchExpressions[0].operator", []string{"fix the selector"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(&c)
			es := problems(t, c.Validate())
			if !has(es, tc.field, tc.parts...) {
				t.Fatalf("Validate() = %v\nwant an error on %s containing %q", es, tc.field, tc.parts)
			}
		})
	}
}

func TestValidateReportsEverythingAtOnce(t *testing.T) {
	c := Config{
		Target:       Target{Kind: "Pod"},
		UpstreamPort: 8443,
		IgnorePaths:  []string{"/a"},
		AllowPaths:   []string{"b"},
		TLS:          TLS{MinVersion: "VersionTLS14"},
	}
	err := c.Validate()
	es := problems(t, err)
	for _, field := range []string{"target.kind", "target.namespace", "target.name", "listenPort", "allowPaths", "allowPaths[0]", "tls.minVersion", "serviceAccountName"} {
		if !has(es, field) {
			t.Errorf("no error on %s in %v", field, es)
		}
	}
	for i := 1; i < len(es); i++ {
		if es[i-1].Field > es[i].Field {
			t.Errorf("errors not sorted by field: %q before %q", es[i-1].Field, es[i].Field)
		}
	}
	if msg := err.Error(); !strings.Contains(msg, "target.kind: ") || !strings.Contains(msg, ", ") {
		t.Errorf("Error() = %q, want field-prefixed messages joined by ', '", msg)
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string // "" = no warning at all
		parts  []string
	}{
		{"none by default", func(*Config) {}, "", nil},
		{"insecure listen", func(c *Config) { c.InsecureListen = true }, "insecureListen", []string{"deprecated", "forged on ignored paths"}},
		{"insecure suite", func(c *Config) {
			c.TLS.CipherSuites = []string{"TLS_RSA_WITH_RC4_128_SHA", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
		}, "tls.cipherSuites[0]", []string{"insecure"}},
		{"tls 1.3 suite listed", func(c *Config) {
			c.TLS.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}
		}, "tls.cipherSuites[1]", []string{"TLS 1.3 suite"}},
		{"suites with tls 1.3", func(c *Config) {
			c.TLS = TLS{MinVersion: "VersionTLS13", CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}
		}, "tls.cipherSuites", []string{"no effect"}},
		{"old tls", func(c *Config) { c.TLS.MinVersion = "VersionTLS10" }, "tls.minVersion", []string{"deprecated TLS versions"}},
		{"selectors without policy", func(c *Config) { c.NetworkPolicy.FromPodSelector = &metav1.LabelSelector{} }, "networkPolicy.enabled", []string{"selectors are ignored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(&c)
			ws := c.Warnings()
			if tc.field == "" {
				if len(ws) > 0 {
					t.Fatalf("Warnings() = %v, want none", ws)
				}
				return
			}
			if !has(ws, tc.field, tc.parts...) {
				t.Fatalf("Warnings() = %v\nwant one on %s containing %q", ws, tc.field, tc.parts)
			}
		})
	}
}

func TestCheckPodSpec(t *testing.T) {
	base := func() *corev1.PodSpec {
		return &corev1.PodSpec{
			ServiceAccountName: "web",
			Containers:         []corev1.Container{{Name: "web", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config, *corev1.PodSpec)
		field  string // "" = fine
		parts  []string
	}{
		{"fine", func(*Config, *corev1.PodSpec) {}, "", nil},
		{"our sidecar is ignored", func(_ *Config, s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: ContainerName, Ports: []corev1.ContainerPort{{ContainerPort: 8443}}}}
		}, "", nil},
		{"default service account", func(c *Config, s *corev1.PodSpec) { c.ServiceAccountName, s.ServiceAccountName = "default", "" }, "", nil},
		{"other service account", func(_ *Config, s *corev1.PodSpec) { s.ServiceAccountName = "other" }, "serviceAccountName", []string{`"other"`, `set serviceAccountName to "other"`}},
		{"pod names none", func(_ *Config, s *corev1.PodSpec) { s.ServiceAccountName = "" }, "serviceAccountName", []string{`"default"`}},
		{"no token", func(_ *Config, s *corev1.PodSpec) { s.AutomountServiceAccountToken = new(bool) }, "target", []string{"automountServiceAccountToken: false"}},
		{"root pod", func(_ *Config, s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64)}
		}, "target", []string{"runAsUser: 0"}},
		{"listen port taken", func(_ *Config, s *corev1.PodSpec) {
			s.Containers[0].Ports = append(s.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 8443, Protocol: corev1.ProtocolTCP})
		}, "listenPort", []string{`container "web"`}},
		{"health port taken by an init container", func(_ *Config, s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 8643}}}}
		}, "healthPort", []string{`container "init"`}},
		{"udp port does not clash", func(_ *Config, s *corev1.PodSpec) {
			s.Containers[0].Ports = append(s.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 8443, Protocol: corev1.ProtocolUDP})
		}, "", nil},
		{"our name in containers", func(_ *Config, s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: ContainerName})
		}, "target", []string{"rename it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, spec := valid(), base()
			tc.mutate(&c, spec)
			es := problems(t, c.CheckPodSpec(spec))
			if tc.field == "" {
				if es != nil {
					t.Fatalf("CheckPodSpec() = %v, want nil", es)
				}
				return
			}
			if !has(es, tc.field, tc.parts...) {
				t.Fatalf("CheckPodSpec() = %v\nwant an error on %s containing %q", es, tc.field, tc.parts)
			}
		})
	}
}

func TestCheckService(t *testing.T) {
	pods := map[string]string{"app": "web", "tier": "api"}
	base := func() *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Service)
		field  string
		parts  []string
	}{
		{"fine", func(*corev1.Service) {}, "", nil},
		{"our port already there", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: ServicePortName, Port: 8443})
		}, "", nil},
		{"unnamed port", func(s *corev1.Service) { s.Spec.Ports[0].Name = "" }, "serviceName", []string{"unnamed port 80", "name it"}},
		{"port taken", func(s *corev1.Service) { s.Spec.Ports[0].Port = 8443 }, "listenPort", []string{"already a port", "choose another listenPort"}},
		{"no selector", func(s *corev1.Service) { s.Spec.Selector = nil }, "serviceName", []string{"no selector"}},
		{"other pods", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "db"} }, "serviceName", []string{"does not match the pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, svc := valid(), base()
			c.ServiceName = "web"
			tc.mutate(svc)
			es := problems(t, c.CheckService(svc, pods))
			if tc.field == "" {
				if es != nil {
					t.Fatalf("CheckService() = %v, want nil", es)
				}
				return
			}
			if !has(es, tc.field, tc.parts...) {
				t.Fatalf("CheckService() = %v\nwant an error on %s containing %q", es, tc.field, tc.parts)
			}
		})
	}
}

func TestNamesFitTheirLimits(t *testing.T) {
	long := strings.Repeat("a", 250)
	for _, tgt := range []Target{
		{Kind: KindDeployment, Namespace: "apps", Name: "web"},
		{Kind: KindStatefulSet, Namespace: strings.Repeat("n", 63), Name: long},
		{Kind: KindDaemonSet, Namespace: "apps", Name: strings.Repeat("a.", 120) + "b"},
	} {
		if msgs := validation.IsDNS1123Subdomain(ObjectName(tgt)); len(msgs) > 0 {
			t.Errorf("ObjectName(%s) = %q: %v", tgt, ObjectName(tgt), msgs)
		}
		if msgs := validation.IsValidLabelValue(ForLabelValue(tgt)); len(msgs) > 0 {
			t.Errorf("ForLabelValue(%s) = %q: %v", tgt, ForLabelValue(tgt), msgs)
		}
		if n := ClusterRoleBindingName(tgt); len(n) > 253 || strings.ContainsAny(n, "/%") {
			t.Errorf("ClusterRoleBindingName(%s) = %q", tgt, n)
		}
	}
	short := Target{Kind: KindDeployment, Namespace: "apps", Name: "web"}
	if got, want := ObjectName(short), "kmshealth-rbac-proxy-deployment-web"; got != want {
		t.Errorf("ObjectName = %q, want %q", got, want)
	}
	if got, want := ClusterRoleBindingName(short), "kmshealth-rbac-proxy:apps:deployment:web"; got != want {
		t.Errorf("ClusterRoleBindingName = %q, want %q", got, want)
	}
	if got, want := ForLabelValue(short), "deployment.web"; got != want {
		t.Errorf("ForLabelValue = %q, want %q", got, want)
	}
	// Distinct long names stay distinct.
	a := Target{Kind: KindDeployment, Namespace: "apps", Name: long + "x"}
	b := Target{Kind: KindDeployment, Namespace: "apps", Name: long + "y"}
	if ObjectName(a) == ObjectName(b) || ForLabelValue(a) == ForLabelValue(b) {
		t.Errorf("long names collide: %q, %q", ObjectName(a), ForLabelValue(a))
	}
}
