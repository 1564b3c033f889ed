// Package install holds the helpers shared by the installers of the
// in-cluster modes (packages reconcilerinstall and reporterinstall): the
// image of the provider binary, the container's requests and limits, the
// import ID, the labels that mark an installation's objects and recognize
// them again, and the reads, writes, deletes and drift checks that work
// alike for every object. What each mode installs stays in its own package.
package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

const (
	// ImageRepository is where the provider's own binary is published; the
	// tag is the provider's version, so the provider and the in-cluster
	// modes never skew.
	ImageRepository = "ghcr.io/kmshealth/terraform-provider-kmshealth"
	// FieldManager writes every object, as for all kmshealth resources.
	FieldManager = kube.FieldManager
)

// The image a release published, set at link time by the release build
// (.goreleaser.yaml) and empty in every other build:
//
//	-X github.com/kmshealth/terraform-provider-kmshealth/internal/install.imageVersion=1.2.3
//	-X github.com/kmshealth/terraform-provider-kmshealth/internal/install.imageDigest=sha256:<64 hex>
//
// imageVersion is the tag the release workflow pushed (the provider's
// version), imageDigest what the registry answered for it.
var (
	imageVersion string
	imageDigest  string
)

// DefaultImage is the image of the provider binary of version: in a release
// build, which knows the digest it published for its own version, pinned by
// tag and digest (ghcr.io/kmshealth/terraform-provider-kmshealth:1.2.3@sha256:…);
// in any other build, or for another version, by tag alone.
func DefaultImage(version string) string {
	return defaultImage(version, imageVersion, imageDigest)
}

// ImagePublished tells whether this build knows the digest of a published
// image of its version (a release build). When it does not (a dev or
// untagged build), DefaultImage names a tag nobody pushed: ask for `image`.
func ImagePublished() bool { return published(imageVersion, imageDigest) }

// defaultImage is DefaultImage with the link-time variables as arguments.
func defaultImage(version, publishedVersion, digest string) string {
	if version == "" {
		version = "dev"
	}
	ref := ImageRepository + ":" + version
	if published(publishedVersion, digest) && version == publishedVersion {
		ref += "@" + digest
	}
	return ref
}

// published tells whether the link-time variables name a published image:
// a version and a sha256 digest, lower-case hex as registries write it.
func published(version, digest string) bool {
	hexDigits, ok := strings.CutPrefix(digest, "sha256:")
	if version == "" || !ok || len(hexDigits) != 64 {
		return false
	}
	for _, c := range hexDigits {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ValidateImage checks an image reference enough to catch typos at plan
// time; the registry has the last word.
func ValidateImage(image string) error {
	switch {
	case strings.TrimSpace(image) == "":
		return errors.New("must not be empty: omit it to deploy " + ImageRepository + ":<provider version>")
	case strings.ContainsAny(image, " \t\r\n"):
		return fmt.Errorf("%q contains whitespace: want a reference like registry.example.com/kmshealth:v1.2.3", image)
	}
	return nil
}

// ValidateNamespace checks the namespace of an installation.
func ValidateNamespace(namespace string) []string { return validation.IsDNS1123Label(namespace) }

// ImportID is the import ID of the installation namespace/name: <namespace>/<name>.
func ImportID(namespace, name string) string { return namespace + "/" + name }

// ParseID splits an import ID, checking the namespace and, with
// validateName, the name. example is a valid ID, shown when id has not the
// form <namespace>/<name>.
func ParseID(id, example string, validateName func(string) []string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(id, "/")
	if !ok || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("import ID %q: want <namespace>/<name>, e.g. %s", id, example)
	}
	var msgs []string
	for _, m := range ValidateNamespace(ns) {
		msgs = append(msgs, "namespace: "+m)
	}
	for _, m := range validateName(n) {
		msgs = append(msgs, "name: "+m)
	}
	if len(msgs) > 0 {
		return "", "", fmt.Errorf("import ID %q: %s", id, strings.Join(msgs, "; "))
	}
	return ns, n, nil
}

// Resources are the requests and limits of an installation's container, as
// quantities such as 10m or 128Mi, "" for none: the attributes
// cpu_request, memory_request and memory_limit. No CPU limit is set.
type Resources struct {
	CPURequest    string
	MemoryRequest string
	MemoryLimit   string
}

// Validate reports every quantity that does not parse or is negative, and
// a memory request above the limit.
func (r Resources) Validate() []error {
	var errs []error
	for _, q := range []struct{ attr, value string }{
		{"cpu_request", r.CPURequest}, {"memory_request", r.MemoryRequest}, {"memory_limit", r.MemoryLimit},
	} {
		if err := ValidateQuantity(q.value); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.attr, err))
		}
	}
	if err := CheckMemory(r.MemoryRequest, r.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// ValidateQuantity checks a resource quantity such as 10m or 128Mi; ""
// means none.
func ValidateQuantity(q string) error {
	if q == "" {
		return nil
	}
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return fmt.Errorf("%q is not a quantity (e.g. 10m, 0.5, 32Mi, 1Gi): %w", q, err)
	}
	if v.Sign() < 0 {
		return fmt.Errorf("%q: must not be negative", q)
	}
	return nil
}

// CheckMemory rejects a memory request above the limit, which the API
// server would refuse only at apply time.
func CheckMemory(request, limit string) error {
	if request == "" || limit == "" {
		return nil
	}
	// Unparsable quantities are ValidateQuantity's to report.
	r, err1 := resource.ParseQuantity(request)
	l, err2 := resource.ParseQuantity(limit)
	if err1 == nil && err2 == nil && r.Cmp(l) > 0 {
		return fmt.Errorf("memory_request %s is above memory_limit %s: raise the limit or lower the request", request, limit)
	}
	return nil
}

// ResourceRequirements is the container's requests and limits, nil for none
// (an empty struct would not round-trip through managedFields); the
// quantities must be valid.
func (r Resources) ResourceRequirements() *corev1ac.ResourceRequirementsApplyConfiguration {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	if r.CPURequest != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(r.CPURequest)
	}
	if r.MemoryRequest != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(r.MemoryRequest)
	}
	if r.MemoryLimit != "" {
		limits[corev1.ResourceMemory] = resource.MustParse(r.MemoryLimit)
	}
	if len(requests)+len(limits) == 0 {
		return nil
	}
	ac := corev1ac.ResourceRequirements()
	if len(requests) > 0 {
		ac.WithRequests(requests)
	}
	if len(limits) > 0 {
		ac.WithLimits(limits)
	}
	return ac
}

// ResourcesOf reads the requests and limits back from a live container, in
// the API server's canonical spelling.
func ResourcesOf(r corev1.ResourceRequirements) Resources {
	quantity := func(list corev1.ResourceList, name corev1.ResourceName) string {
		if q, ok := list[name]; ok {
			return q.String()
		}
		return ""
	}
	return Resources{
		CPURequest:    quantity(r.Requests, corev1.ResourceCPU),
		MemoryRequest: quantity(r.Requests, corev1.ResourceMemory),
		MemoryLimit:   quantity(r.Limits, corev1.ResourceMemory),
	}
}

// SameJSON compares two apply configurations by their serialized form,
// which is what the API server would receive.
func SameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
