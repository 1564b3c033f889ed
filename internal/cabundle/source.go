package cabundle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube/clientset"
)

// Source kinds.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// Source names the one object and key a caBundle comes from.
type Source struct {
	Kind      string // Secret or ConfigMap
	Namespace string
	Name      string
	Key       string
}

// String is the value of the SourceAnnotation: Kind/namespace/name/key.
func (s Source) String() string {
	return strings.Join([]string{s.Kind, s.Namespace, s.Name, s.Key}, "/")
}

// ParseSource reads a SourceAnnotation value.
func ParseSource(v string) (Source, error) {
	parts := strings.Split(v, "/")
	if len(parts) != 4 {
		return Source{}, fmt.Errorf("annotation %s=%q: want Kind/namespace/name/key", SourceAnnotation, v)
	}
	s := Source{Kind: parts[0], Namespace: parts[1], Name: parts[2], Key: parts[3]}
	if err := s.Validate(); err != nil {
		return Source{}, fmt.Errorf("annotation %s=%q: %w", SourceAnnotation, v, err)
	}
	return s, nil
}

// Validate checks the fields against the API server's naming rules, so a
// typo fails at plan time rather than as a 404 at apply time.
func (s Source) Validate() error {
	var errs []error
	if s.Kind != KindSecret && s.Kind != KindConfigMap {
		errs = append(errs, fmt.Errorf("kind %q: must be %q or %q", s.Kind, KindSecret, KindConfigMap))
	}
	for _, m := range validation.IsDNS1123Label(s.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: %s", s.Namespace, m))
	}
	for _, m := range validation.IsDNS1123Subdomain(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", s.Name, m))
	}
	for _, m := range validation.IsConfigMapKey(s.Key) {
		errs = append(errs, fmt.Errorf("key %q: %s", s.Key, m))
	}
	return errors.Join(errs...)
}

// ErrSourceMissing is wrapped by ReadSource when the object or key is absent.
var ErrSourceMissing = errors.New("CA bundle source missing")

// ReadSource returns the bytes under the source's key.
func ReadSource(ctx context.Context, core clientset.Core, s Source) ([]byte, error) {
	var data map[string][]byte
	switch s.Kind {
	case KindSecret:
		sec, err := core.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return nil, sourceGetError(s, err)
		}
		data = sec.Data
	case KindConfigMap:
		cm, err := core.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return nil, sourceGetError(s, err)
		}
		data = ConfigMapData(cm)
	default:
		return nil, s.Validate()
	}
	return keyOf(s, data)
}

// ahead runs read now, in its own goroutine, and returns a function that
// waits for its result (the same on every call).
func ahead(read func() ([]byte, error)) func() ([]byte, error) {
	type result struct {
		bundle []byte
		err    error
	}
	done := make(chan result, 1)
	go func() {
		b, err := read()
		done <- result{b, err}
	}()
	return sync.OnceValues(func() ([]byte, error) {
		r := <-done
		return r.bundle, r.err
	})
}

// ConfigMapData merges a ConfigMap's data and binaryData.
func ConfigMapData(cm *corev1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data
}

func keyOf(s Source, data map[string][]byte) ([]byte, error) {
	if v, ok := data[s.Key]; ok {
		return v, nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return nil, fmt.Errorf("%w: %s %s/%s has no key %q (it has: %s); fix source.key or add the key",
		ErrSourceMissing, s.Kind, s.Namespace, s.Name, s.Key, strings.Join(keys, ", "))
}

func sourceGetError(s Source, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %s %s/%s not found; create it first or fix source", ErrSourceMissing, s.Kind, s.Namespace, s.Name)
	}
	return fmt.Errorf("read %s %s/%s: %w", s.Kind, s.Namespace, s.Name, err)
}
