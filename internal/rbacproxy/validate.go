package rbacproxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/template"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/ciphers"
)

// fieldErrors collects the problems of a Config, each at its field as
// k8s.io/apimachinery's validation reports them: a field.Path in Config's
// JSON names ("authorization.resourceAttributes.apiGroup",
// "ignorePaths[1]"), the message (what is wrong and what to do) as the
// Detail. Validate, Check, CheckPodSpec and CheckService return them as
// field.ErrorList.ToAggregate(); FieldErrors gets the list back.
type fieldErrors field.ErrorList

func (es *fieldErrors) add(p *field.Path, format string, args ...any) {
	*es = append(*es, field.Invalid(p, field.OmitValueType{}, fmt.Sprintf(format, args...)))
}

func (es fieldErrors) err() error { return field.ErrorList(es).ToAggregate() }

// FieldErrors is the field.ErrorList inside an error of Validate, Check,
// CheckPodSpec or CheckService; nil when err holds none.
func FieldErrors(err error) field.ErrorList {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return nil
	}
	var out field.ErrorList
	for _, e := range agg.Errors() {
		var fe *field.Error
		if errors.As(e, &fe) {
			out = append(out, fe)
		}
	}
	return out
}

// tlsVersions are the values kube-rbac-proxy's --tls-min-version takes.
func tlsVersions() []string {
	return []string{"VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13"}
}

// Validate reports every problem of c (after Defaulted) at once, as
// field errors (see FieldErrors), or nil. Each message names the fix.
func (c Config) Validate() error {
	c = c.Defaulted()
	var es fieldErrors
	c.validateTarget(&es)
	c.validatePorts(&es)
	if c.Image == "" || strings.ContainsFunc(c.Image, unicode.IsSpace) {
		es.add(field.NewPath("image"), "%q is not an image reference: give one like %s, or leave it empty for that default", c.Image, DefaultImage)
	}
	c.validateRelease(&es)
	validateResources(&es, c.Resources)
	c.Authorization.validate(&es)
	validatePaths(&es, c.IgnorePaths, c.AllowPaths)
	c.validateTLS(&es)
	switch msgs := validation.IsDNS1123Subdomain(c.ServiceAccountName); {
	case c.ServiceAccountName == "":
		es.add(field.NewPath("serviceAccountName"), `is required: set it to the pod template's spec.serviceAccountName ("default" when it names none); that ServiceAccount is bound to %s`, AuthDelegatorClusterRole)
	case len(msgs) > 0:
		es.add(field.NewPath("serviceAccountName"), "%q is not a ServiceAccount name (%s): use the pod template's spec.serviceAccountName", c.ServiceAccountName, strings.Join(msgs, "; "))
	}
	if c.ServiceName != "" {
		if msgs := validation.IsDNS1035Label(c.ServiceName); len(msgs) > 0 {
			es.add(field.NewPath("serviceName"), "%q is not a Service name (%s): name an existing Service in %q, or leave it empty", c.ServiceName, strings.Join(msgs, "; "), c.Target.Namespace)
		}
	}
	np := field.NewPath("networkPolicy")
	validateSelector(&es, np.Child("fromNamespaceSelector"), c.NetworkPolicy.FromNamespaceSelector)
	validateSelector(&es, np.Child("fromPodSelector"), c.NetworkPolicy.FromPodSelector)
	slices.SortStableFunc(es, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return es.err()
}

func (c Config) validateTarget(es *fieldErrors) {
	t := c.Target
	if !slices.Contains(Kinds(), t.Kind) {
		es.add(field.NewPath("target", "kind"), "%q is not a kind kmshealth can protect: use one of %s", t.Kind, quoteAll(Kinds()))
	}
	if t.Namespace == "" {
		es.add(field.NewPath("target", "namespace"), "is required: give the workload's namespace")
	} else if msgs := validation.IsDNS1123Label(t.Namespace); len(msgs) > 0 {
		es.add(field.NewPath("target", "namespace"), "%q is not a namespace name (%s): give the workload's namespace", t.Namespace, strings.Join(msgs, "; "))
	}
	if t.Name == "" {
		es.add(field.NewPath("target", "name"), "is required: give the workload's metadata.name")
	} else if msgs := validation.IsDNS1123Subdomain(t.Name); len(msgs) > 0 {
		es.add(field.NewPath("target", "name"), "%q is not a workload name (%s): give the workload's metadata.name", t.Name, strings.Join(msgs, "; "))
	}
}

func (c Config) validatePorts(es *fieldErrors) {
	ports := []struct {
		field string
		port  int32
		used  bool
	}{
		{"upstreamPort", c.UpstreamPort, true},
		{"listenPort", c.ListenPort, true},
		{"healthPort", c.HealthPort, !c.InsecureListen},
	}
	for i, p := range ports {
		if !p.used {
			continue
		}
		if p.port < 1 || p.port > 65535 {
			hint := "the port the proxy listens on"
			switch p.field {
			case "upstreamPort":
				hint = "the port the workload's HTTP API listens on inside the pod (on 127.0.0.1)"
			case "healthPort":
				hint = "the port of the proxy's own /healthz, for kubelet probes"
			}
			es.add(field.NewPath(p.field), "%d is not a port: give %s, 1-65535", p.port, hint)
			continue
		}
		for _, q := range ports[:i] {
			if q.used && q.port == p.port {
				es.add(field.NewPath(p.field), "%d is also %s: the proxy and the upstream share the pod's network, so each needs its own port; choose another", p.port, q.field)
			}
		}
	}
}

func validateResources(es *fieldErrors, r Resources) {
	parsed := map[string]map[string]resource.Quantity{}
	for kind, list := range map[string]map[string]string{"requests": r.Requests, "limits": r.Limits} {
		parsed[kind] = map[string]resource.Quantity{}
		for name, value := range list {
			fld := field.NewPath("resources", kind).Key(name)
			if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
				es.add(fld, "%q is not a resource name (%s): use cpu, memory or ephemeral-storage", name, strings.Join(msgs, "; "))
				continue
			}
			q, err := resource.ParseQuantity(value)
			if err != nil || q.Sign() < 0 {
				es.add(fld, "%q is not a quantity: write one like \"10m\" (cpu) or \"32Mi\" (memory)", value)
				continue
			}
			parsed[kind][name] = q
		}
	}
	for name, req := range parsed["requests"] {
		if lim, ok := parsed["limits"][name]; ok && req.Cmp(lim) > 0 {
			es.add(field.NewPath("resources", "requests").Key(name), "%s is above the limit %s: lower the request or raise the limit", req.String(), lim.String())
		}
	}
}

// fields are the attributes with their JSON names.
func (a ResourceAttributes) fields() []struct{ name, value string } {
	return []struct{ name, value string }{
		{"namespace", a.Namespace}, {"apiGroup", a.APIGroup}, {"apiVersion", a.APIVersion},
		{"resource", a.Resource}, {"subresource", a.Subresource}, {"name", a.Name},
	}
}

// executeTemplate renders s as kube-rbac-proxy does with rewrites: a Go
// text/template over struct{ Value string }.
func executeTemplate(s, value string) (string, error) {
	t, err := template.New("value").Parse(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, struct{ Value string }{value}); err != nil {
		return "", err
	}
	return b.String(), nil
}

func (a Authorization) validate(es *fieldErrors) {
	base := field.NewPath("authorization", "resourceAttributes")
	ra, rw := a.ResourceAttributes, a.Rewrites
	if rw != nil {
		if rw.ByQueryParameter == "" && rw.ByHTTPHeader == "" {
			es.add(field.NewPath("authorization", "rewrites"), "names no source: set byQueryParameter or byHTTPHeader (or both), or remove rewrites")
		}
		if rw.ByQueryParameter != "" && (strings.ContainsFunc(rw.ByQueryParameter, unicode.IsSpace) || strings.ContainsAny(rw.ByQueryParameter, "&=#?")) {
			es.add(field.NewPath("authorization", "rewrites", "byQueryParameter"), "%q is not a query parameter name: use a plain name like \"namespace\"", rw.ByQueryParameter)
		}
		if rw.ByHTTPHeader != "" {
			if msgs := validation.IsHTTPHeaderName(rw.ByHTTPHeader); len(msgs) > 0 {
				es.add(field.NewPath("authorization", "rewrites", "byHTTPHeader"), "%q is not an HTTP header name (%s): use one like \"X-Namespace\"", rw.ByHTTPHeader, strings.Join(msgs, "; "))
			}
		}
		if ra == nil {
			es.add(field.NewPath("authorization", "rewrites"), "has no effect without resourceAttributes: add resourceAttributes with {{ .Value }} where the rewritten value goes, or remove rewrites")
		}
	}
	if ra == nil {
		return
	}
	if ra.Resource == "" {
		es.add(base.Child("resource"), "is required with resourceAttributes: name the resource the caller must be allowed to access (RBAC rules match on it), or remove resourceAttributes to authorize by request path")
	}
	usesValue := false
	for _, f := range ra.fields() {
		fld := base.Child(f.name)
		templated := strings.Contains(f.value, "{{")
		if rw == nil {
			if templated {
				es.add(fld, "%q is a template, but without rewrites kube-rbac-proxy sends it literally and every request is denied: add authorization.rewrites, or write a literal value", f.value)
				continue
			}
		} else {
			// With rewrites the proxy renders every field as a template.
			a1, err1 := executeTemplate(f.value, "a")
			a2, err2 := executeTemplate(f.value, "b")
			if err := cmpErr(err1, err2); err != nil {
				es.add(fld, "%q is not a valid template (%v): use {{ .Value }}, the only data kube-rbac-proxy provides", f.value, err)
				continue
			}
			if a1 != a2 {
				usesValue = true
			}
			if templated {
				continue // the value comes from the request: nothing more to check
			}
		}
		validateAttribute(es, fld, f.name, f.value)
	}
	if rw != nil && !usesValue {
		es.add(base, "no field uses {{ .Value }}, so the rewritten value is ignored and every request without it gets 400: put {{ .Value }} where it goes (e.g. namespace: \"{{ .Value }}\"), or remove rewrites")
	}
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func validateAttribute(es *fieldErrors, fld *field.Path, name, value string) {
	if value == "" {
		return
	}
	switch name {
	case "namespace":
		if msgs := validation.IsDNS1123Label(value); len(msgs) > 0 {
			es.add(fld, "%q is not a namespace name (%s): fix it, or leave it empty for a cluster-scoped check", value, strings.Join(msgs, "; "))
		}
	case "apiGroup":
		if value == "core" || value == "v1" {
			es.add(fld, "%q: the core API group is the empty string; leave apiGroup empty for core resources", value)
		} else if msgs := validation.IsDNS1123Subdomain(value); len(msgs) > 0 {
			es.add(fld, "%q is not an API group (%s): write it like \"apps\" or \"monitoring.coreos.com\", or leave it empty for the core group", value, strings.Join(msgs, "; "))
		}
	case "apiVersion":
		if strings.Contains(value, "/") {
			es.add(fld, "%q contains a group: put the group in apiGroup and only the version (e.g. \"v1\") here", value)
		}
	default:
		if strings.ContainsAny(value, "/%") || strings.ContainsFunc(value, unicode.IsSpace) {
			es.add(fld, "%q cannot be a %s in a SubjectAccessReview (no '/', '%%' or spaces): fix it", value, name)
		}
	}
}

func validatePaths(es *fieldErrors, ignore, allow []string) {
	if len(ignore) > 0 && len(allow) > 0 {
		es.add(field.NewPath("allowPaths"), "cannot be used together with ignorePaths (kube-rbac-proxy refuses to start): keep one of the two")
	}
	for name, list := range map[string][]string{"ignorePaths": ignore, "allowPaths": allow} {
		for i, p := range list {
			fld := field.NewPath(name).Index(i)
			if _, err := path.Match(p, "/"); err != nil || !strings.HasPrefix(p, "/") || strings.ContainsAny(p, `,"`) {
				es.add(fld, "%q is not a path pattern: write a path.Match pattern of the request path, starting with '/', without ',' or '\"' (e.g. \"/metrics\" or \"/api/v1/*\")", p)
			}
			if slices.Index(list, p) < i {
				es.add(fld, "%q is listed twice: remove one", p)
			}
		}
	}
}

func (c Config) validateTLS(es *fieldErrors) {
	t := c.TLS
	if c.InsecureListen {
		for _, f := range []struct {
			path *field.Path
			set  bool
		}{
			{field.NewPath("tls", "secretName"), t.SecretName != ""},
			{field.NewPath("tls", "minVersion"), t.MinVersion != ""},
			{field.NewPath("tls", "cipherSuites"), len(t.CipherSuites) > 0},
		} {
			if f.set {
				es.add(f.path, "has no effect with insecureListen (plain HTTP): remove it, or set insecureListen to false")
			}
		}
		return
	}
	if t.SecretName != "" {
		if msgs := validation.IsDNS1123Subdomain(t.SecretName); len(msgs) > 0 {
			es.add(field.NewPath("tls", "secretName"), "%q is not a Secret name (%s): name a kubernetes.io/tls Secret in %q, or leave it empty for a self-signed certificate", t.SecretName, strings.Join(msgs, "; "), c.Target.Namespace)
		}
	}
	if !slices.Contains(tlsVersions(), t.MinVersion) {
		es.add(field.NewPath("tls", "minVersion"), "%q is not a TLS version kube-rbac-proxy knows: use one of %s", t.MinVersion, quoteAll(tlsVersions()))
	}
	cat := ciphers.NewCatalog()
	tls12 := 0
	for i, name := range t.CipherSuites {
		fld := field.NewPath("tls", "cipherSuites").Index(i)
		suite, ok := cat.Go(name)
		switch {
		case !ok:
			es.add(fld, "%q is not a cipher suite Go implements: use IANA names, as a TLS profile resolves them (e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); valid: %s", name, strings.Join(cat.GoNames(), ", "))
		case slices.Index(t.CipherSuites, name) < i:
			es.add(fld, "%q is listed twice: remove one", name)
		case !ciphers.TLS13Only(suite):
			tls12++
		}
	}
	if len(t.CipherSuites) > 0 && tls12 == 0 && t.MinVersion != "VersionTLS13" && slices.Contains(tlsVersions(), t.MinVersion) {
		es.add(field.NewPath("tls", "cipherSuites"), "names no suite for TLS 1.2 and below (Go always enables the TLS 1.3 suites and cannot configure them), so older clients could not connect: add TLS 1.2 suites, or set tls.minVersion to VersionTLS13")
	}
}

func validateSelector(es *fieldErrors, p *field.Path, sel *metav1.LabelSelector) {
	if sel == nil {
		return
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
	for _, e := range errs {
		*es = append(*es, &field.Error{Type: e.Type, Field: e.Field, BadValue: field.OmitValueType{}, Detail: e.ErrorBody() + ": fix the selector"})
	}
	if len(errs) > 0 {
		return // the conversion below would report the same problem again
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		es.add(p, "%v: fix the selector", err)
	}
}

// Warnings are things c allows but the user should know about (after
// Defaulted), as field errors so a caller can attach them to the
// attribute.
func (c Config) Warnings() field.ErrorList {
	c = c.Defaulted()
	var ws fieldErrors
	c.releaseWarnings(&ws)
	if c.InsecureListen {
		ws.add(field.NewPath("insecureListen"), "serves plain HTTP: --insecure-listen-address is deprecated upstream (kube-rbac-proxy's unreleased sig-auth-acceptance line removes it); bearer tokens cross the network in clear text; identity headers (x-remote-user and the like) can be forged on ignored paths, which skip authentication; there is no health endpoint, so probes fall back to a TCP check. Prefer HTTPS (tls.secretName, or the self-signed default)")
	}
	if !c.InsecureListen {
		cat := ciphers.NewCatalog()
		insecure := map[string]bool{}
		for _, s := range tls.InsecureCipherSuites() {
			insecure[s.Name] = true
		}
		for i, name := range c.TLS.CipherSuites {
			fld := field.NewPath("tls", "cipherSuites").Index(i)
			suite, ok := cat.Go(name)
			switch {
			case insecure[name]:
				ws.add(fld, "%q has known weaknesses (crypto/tls lists it as insecure): drop it unless old clients need it", name)
			case ok && ciphers.TLS13Only(suite):
				ws.add(fld, "%q is a TLS 1.3 suite: Go always enables those and ignores them in this list; it can be dropped", name)
			}
		}
		if len(c.TLS.CipherSuites) > 0 && c.TLS.MinVersion == "VersionTLS13" {
			ws.add(field.NewPath("tls", "cipherSuites"), "has no effect with tls.minVersion VersionTLS13: Go does not configure TLS 1.3 suites")
		}
		if c.TLS.MinVersion == "VersionTLS10" || c.TLS.MinVersion == "VersionTLS11" {
			ws.add(field.NewPath("tls", "minVersion"), "%s allows deprecated TLS versions (RFC 8996): use VersionTLS12 or above unless old clients need it", c.TLS.MinVersion)
		}
	}
	if !c.NetworkPolicy.Enabled && (c.NetworkPolicy.FromNamespaceSelector != nil || c.NetworkPolicy.FromPodSelector != nil) {
		ws.add(field.NewPath("networkPolicy", "enabled"), "is false, so the selectors are ignored and no NetworkPolicy is created: set enabled to true to restrict who reaches the proxy port")
	}
	return field.ErrorList(ws)
}

// CheckPodSpec reports what in the live pod spec of the target would keep
// the sidecar from working, as field errors naming the Config field (or
// "target") to change, or nil. spec is the workload's
// spec.template.spec; the sidecar itself (ContainerName in
// initContainers) is ignored.
func (c Config) CheckPodSpec(spec *corev1.PodSpec) error {
	c = c.Defaulted()
	var es fieldErrors
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	if sa != c.ServiceAccountName {
		es.add(field.NewPath("serviceAccountName"), "is %q, but the pods of %s run as ServiceAccount %q: set serviceAccountName to %q, or the sidecar's TokenReviews and SubjectAccessReviews are denied", c.ServiceAccountName, c.Target, sa, sa)
	}
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		es.add(field.NewPath("target"), "%s sets automountServiceAccountToken: false, so the sidecar has no token to call the API server with: set it to true (or remove it) in the pod template", c.Target)
	}
	if sc := spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		es.add(field.NewPath("target"), "%s runs its pods as root (securityContext.runAsUser: 0); the sidecar sets runAsNonRoot and would not start: run the pod as a non-root user, or set runAsUser on each of its own containers instead", c.Target)
	}
	ours := map[int32]string{c.ListenPort: "listenPort"}
	if !c.InsecureListen {
		ours[c.HealthPort] = "healthPort"
	}
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for i, ctr := range all {
		if ctr.Name == ContainerName {
			if i >= len(spec.InitContainers) {
				es.add(field.NewPath("target"), "%s already has a container named %q in containers: rename it, kmshealth needs that name for its sidecar", c.Target, ContainerName)
			}
			continue
		}
		for _, p := range ctr.Ports {
			if fld, clash := ours[p.ContainerPort]; clash && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
				es.add(field.NewPath(fld), "%d is already declared by container %q of %s: the pod shares one network, choose another port", p.ContainerPort, ctr.Name, c.Target)
			}
		}
	}
	return es.err()
}

// CheckService reports what about the live Service would keep the proxy
// port from working, or nil: an unnamed port (a Service with two ports
// needs every port named), a port number already in use by another port,
// a selector that does not select the workload's pods (podLabels, the pod
// template's labels).
func (c Config) CheckService(svc *corev1.Service, podLabels map[string]string) error {
	c = c.Defaulted()
	var es fieldErrors
	name := fmt.Sprintf("Service %s/%s", svc.Namespace, svc.Name)
	for _, p := range svc.Spec.Ports {
		if p.Name == ServicePortName {
			continue
		}
		if p.Name == "" {
			es.add(field.NewPath("serviceName"), "%s has an unnamed port %d; a Service with more than one port needs every port named: name it in the Service's manifest", name, p.Port)
		}
		if p.Port == c.ListenPort && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
			es.add(field.NewPath("listenPort"), "%d is already a port (%q) of %s: choose another listenPort", p.Port, p.Name, name)
		}
	}
	switch {
	case len(svc.Spec.Selector) == 0:
		es.add(field.NewPath("serviceName"), "%s has no selector, so its endpoints are not the pods of %s: name a Service that selects them", name, c.Target)
	case !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)):
		es.add(field.NewPath("serviceName"), "%s selects %v, which does not match the pods of %s (%v): name a Service that selects them", name, svc.Spec.Selector, c.Target, podLabels)
	}
	return es.err()
}

func quoteAll[S ~string](list []S) string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
