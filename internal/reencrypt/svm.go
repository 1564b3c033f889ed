package reencrypt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedsvm "k8s.io/client-go/kubernetes/typed/storagemigration/v1beta1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// StorageVersionMigration (KEP-4192): kube-apiserver serves
// storagemigration.k8s.io/v1beta1 when its feature gate
// StorageVersionMigrator is on and the group version is enabled
// (--runtime-config; beta APIs are off by default), and
// kube-controller-manager's storage-version-migrator-controller (same gate,
// plus the garbage collector, whose informers it lists from) carries the
// migrations out. A migration of a resource writes every object back
// unchanged; the API server persists such a write only when the stored
// value is stale — for KMS v2, when its envelope names a key ID other than
// the one the API server writes under — so each object ends up under the
// current key.
const (
	svmGroupVersion = "storagemigration.k8s.io/v1beta1"
	svmResource     = "storageversionmigrations"
)

// Labels on the StorageVersionMigrations we create; we delete only objects
// carrying them (with kube.ManagedByLabel = kube.ManagedByValue).
const (
	// SVMLabel carries the re-encryption's name (a hash of it when it is
	// not a valid label value).
	SVMLabel = "kmshealth.io/reencryption"
	// SVMProbeLabel marks StorageVersionMigrationAvailable's probes.
	SVMProbeLabel = "kmshealth.io/reencryption-probe"
)

// ProbeTimeout bounds how long StorageVersionMigrationAvailable waits for
// the controller to act on its probe: it records in status the
// resourceVersion to migrate up to within milliseconds when it runs. This
// is the delay an apply pays on a cluster that serves the API without
// running the controller.
const ProbeTimeout = 10 * time.Second

// probeResource is what the probe migrates: a built-in, cluster-scoped
// resource that is served everywhere and is normally empty or nearly so,
// and is not encrypted, so migrating it writes nothing.
var probeResource = metav1.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}

// svmProgressEvery is how often a waiting migration logs that it still
// runs; StorageVersionMigration reports no counts, only conditions.
const svmProgressEvery = 10 * time.Second

// StorageVersionMigrationAvailable reports whether the cluster can
// re-encrypt by StorageVersionMigration: the API is served (discovery) and
// its controller runs. A served API accepts migrations that nobody carries
// out, and the controller has no Lease or object of its own, so the check
// creates a probe migration (of runtimeclasses.node.k8s.io) and watches
// it: the controller runs when it records status.resourceVersion (the
// resourceVersion to migrate up to; kube-controller-manager's
// storage-version-migrator-controller runs that half and the migrator
// together, and nothing else writes it) or a condition within
// ProbeTimeout. A probe that Failed by then counts as not available. The
// probe is not waited out: the migrator starts a migration only once the
// garbage collector's informer has seen its resourceVersion, which on a
// resource nobody writes takes until the informer's next watch bookmark
// (about a minute) and the controller's backed-off retry. The probe is
// deleted afterwards. why says what is missing when ok is false; err is
// for failures to ask at all.
func StorageVersionMigrationAvailable(ctx context.Context, cfg *rest.Config) (ok bool, why string, err error) {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, "", fmt.Errorf("StorageVersionMigration check: client: %w", err)
	}
	if why, err := svmServed(c); why != "" || err != nil {
		return false, why, err
	}
	svms := c.StoragemigrationV1beta1().StorageVersionMigrations()
	probe, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "kmshealth-reencryption-probe-",
			Labels:       map[string]string{kube.ManagedByLabel: kube.ManagedByValue, SVMProbeLabel: "true"},
		},
		Spec: svmv1beta1.StorageVersionMigrationSpec{Resource: probeResource},
	}, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsForbidden(err) {
		return false, fmt.Sprintf("not allowed to create StorageVersionMigrations (grant create, get, watch and delete on %s.storagemigration.k8s.io): %v", svmResource, err), nil
	}
	if err != nil {
		return false, "", fmt.Errorf("create a probe StorageVersionMigration: %w", err)
	}
	defer deleteOurs(ctx, svms, probe)

	noticed := func(s *svmv1beta1.StorageVersionMigration) bool {
		return s.Status.ResourceVersion != "" || len(s.Status.Conditions) > 0
	}
	probeCtx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	last, err := waitSVM(probeCtx, svms, probe, noticed, nil)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return false, fmt.Sprintf("no controller acted on probe StorageVersionMigration %s within %s: kube-controller-manager does not run storage-version-migrator-controller (it needs --feature-gates=StorageVersionMigrator=true and the garbage collector)",
				probe.Name, ProbeTimeout), nil
		}
		return false, "", fmt.Errorf("watch probe StorageVersionMigration %s: %w", probe.Name, err)
	}
	if c := failed(last); c != nil {
		return false, fmt.Sprintf("probe StorageVersionMigration %s of %s failed: %s: %s", probe.Name, grString(probeResource), c.Reason, c.Message), nil
	}
	return true, "", nil
}

// svmServed returns why StorageVersionMigration is not served, or "".
func svmServed(c kubernetes.Interface) (string, error) {
	list, err := c.Discovery().ServerResourcesForGroupVersion(svmGroupVersion)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("kube-apiserver does not serve %s (it needs --feature-gates=StorageVersionMigrator=true and --runtime-config=%s=true)", svmGroupVersion, svmGroupVersion), nil
	}
	if err != nil {
		return "", fmt.Errorf("discover %s: %w", svmGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == svmResource {
			return "", nil
		}
	}
	return fmt.Sprintf("kube-apiserver serves %s without %s", svmGroupVersion, svmResource), nil
}

// MigrateWithSVM re-encrypts every object of gvr's resource by a
// StorageVersionMigration named SVMName(name, ...) and labelled as the
// re-encryption name's, waits on a watch until it has Succeeded or Failed,
// logs its progress and deletes it. It has no bound of its own (give ctx
// one): the migrator starts only once the garbage collector's informer has
// seen the migration's resourceVersion, which on a resource nobody wrote
// since takes until that informer's next watch bookmark (about a minute)
// plus the controller's backed-off retry — 1 to 1.5 minutes in the test
// bed — and then rewrites at the rate the API server takes. Objects are written back under the key
// kube-apiserver encrypts with when the migration lists them, so call it
// once the API server has taken the new key. A migration of ours left by an
// interrupted run is replaced (a migration runs once; a new one lists from
// now); one of the same name that is not ours is an error. gvr's version is
// not used: a migration names a group and resource.
func MigrateWithSVM(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource, name string, log func(format string, args ...any)) error {
	if log == nil {
		log = func(string, ...any) {}
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("StorageVersionMigration: client: %w", err)
	}
	gr := metav1.GroupResource{Group: gvr.Group, Resource: gvr.Resource}
	res := grString(gr)
	svmName := SVMName(name, gr)
	labels := map[string]string{kube.ManagedByLabel: kube.ManagedByValue, SVMLabel: labelValue(name)}
	svms := c.StoragemigrationV1beta1().StorageVersionMigrations()

	old, err := svms.Get(ctx, svmName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read StorageVersionMigration %s: %w", svmName, err)
	case !hasLabels(old, labels):
		return fmt.Errorf("StorageVersionMigration %s exists and is not this re-encryption's (labels %s=%s and %s=%s missing): delete it, or rename the re-encryption",
			svmName, kube.ManagedByLabel, kube.ManagedByValue, SVMLabel, labels[SVMLabel])
	default:
		log("StorageVersionMigration %s of an earlier run is replaced (it was %s)", svmName, state(old))
		if err := deleteSVM(ctx, svms, old); err != nil {
			return err
		}
	}

	created, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: svmName, Labels: labels},
		Spec:       svmv1beta1.StorageVersionMigrationSpec{Resource: gr},
	}, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return fmt.Errorf("create StorageVersionMigration %s for %s: %w", svmName, res, err)
	}
	defer deleteOurs(ctx, svms, created)
	start := time.Now()
	log("StorageVersionMigration %s created for %s", svmName, res)

	last, err := waitSVM(ctx, svms, created, terminal, func(s *svmv1beta1.StorageVersionMigration, changed bool) {
		if changed {
			log("StorageVersionMigration %s of %s: %s after %s", svmName, res, state(s), time.Since(start).Round(time.Second))
		} else {
			log("StorageVersionMigration %s of %s: still %s after %s", svmName, res, state(s), time.Since(start).Round(time.Second))
		}
	})
	if err != nil {
		return fmt.Errorf("wait for StorageVersionMigration %s of %s (%s so far): %w", svmName, res, time.Since(start).Round(time.Second), err)
	}
	if c := failed(last); c != nil {
		return fmt.Errorf("StorageVersionMigration %s of %s failed after %s: %s: %s", svmName, res, time.Since(start).Round(time.Second), c.Reason, c.Message)
	}
	log("StorageVersionMigration %s of %s succeeded in %s", svmName, res, time.Since(start).Round(time.Millisecond))
	return nil
}

// SVMName is the name of the StorageVersionMigration that re-encrypts
// resource gr for the re-encryption name: "kmshealth-reencryption-<name>-
// <resource>[.<group>]", shortened with a hash when that is not a valid
// object name.
func SVMName(name string, gr metav1.GroupResource) string {
	full := RecordName(name) + "-" + grString(gr)
	if len(validation.IsDNS1123Subdomain(full)) == 0 {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return "kmshealth-reencryption-" + hex.EncodeToString(sum[:8])
}

// grString is "<resource>[.<group>]".
func grString(gr metav1.GroupResource) string {
	return schema.GroupResource{Group: gr.Group, Resource: gr.Resource}.String()
}

// labelValue is name when it is a valid label value, else a hash of it.
func labelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "sha256-" + hex.EncodeToString(sum[:16])
}

func hasLabels(s *svmv1beta1.StorageVersionMigration, want map[string]string) bool {
	for k, v := range want {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

// terminal reports whether a migration has Succeeded or Failed.
func terminal(s *svmv1beta1.StorageVersionMigration) bool {
	return meta.IsStatusConditionTrue(s.Status.Conditions, string(svmv1beta1.MigrationSucceeded)) || failed(s) != nil
}

// failed returns the Failed condition when it is true.
func failed(s *svmv1beta1.StorageVersionMigration) *metav1.Condition {
	c := meta.FindStatusCondition(s.Status.Conditions, string(svmv1beta1.MigrationFailed))
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

// state names a migration's progress for logs.
func state(s *svmv1beta1.StorageVersionMigration) string {
	for _, t := range []svmv1beta1.MigrationConditionType{svmv1beta1.MigrationFailed, svmv1beta1.MigrationSucceeded, svmv1beta1.MigrationRunning} {
		if meta.IsStatusConditionTrue(s.Status.Conditions, string(t)) {
			return string(t)
		}
	}
	if s.Status.ResourceVersion != "" {
		return "queued (migrating up to resourceVersion " + s.Status.ResourceVersion + ")"
	}
	return "pending (no controller has acted on it yet)"
}

// waitSVM watches from's migration from its resourceVersion until done
// holds and returns the object it held for (from itself when it already
// does). Events drive it; a watch the server ends is resumed, and one
// whose resourceVersion is too old (the object did not change for longer
// than the watch history) restarts from a fresh read. progress, when set,
// hears every change of state and, every svmProgressEvery without one, the
// current state.
func waitSVM(ctx context.Context, svms typedsvm.StorageVersionMigrationInterface, from *svmv1beta1.StorageVersionMigration,
	done func(*svmv1beta1.StorageVersionMigration) bool, progress func(s *svmv1beta1.StorageVersionMigration, changed bool),
) (*svmv1beta1.StorageVersionMigration, error) {
	if done(from) {
		return from, nil
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", from.Name).String()
		return svms.Watch(ctx, o)
	}}
	cur := from
	tick := time.NewTicker(svmProgressEvery)
	defer tick.Stop()
	for {
		w, err := watchtools.NewRetryWatcherWithContext(ctx, cur.ResourceVersion, lw)
		if err != nil {
			return cur, fmt.Errorf("watch StorageVersionMigration %s: %w", from.Name, err)
		}
		next, err := func() (*svmv1beta1.StorageVersionMigration, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return cur, ctx.Err()
				case <-tick.C:
					if progress != nil {
						progress(cur, false)
					}
				case ev, ok := <-w.ResultChan():
					if !ok {
						// The retry watcher ends when ctx does; else
						// only on an error it has already sent.
						if err := ctx.Err(); err != nil {
							return cur, err
						}
						return cur, fmt.Errorf("watch of StorageVersionMigration %s ended", from.Name)
					}
					switch ev.Type {
					case watch.Deleted:
						return cur, fmt.Errorf("StorageVersionMigration %s was deleted while it ran (by someone else)", from.Name)
					case watch.Error:
						if apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)) {
							return nil, nil // resume from a fresh read
						}
						return cur, fmt.Errorf("watch StorageVersionMigration %s: %w", from.Name, apierrors.FromObject(ev.Object))
					case watch.Added, watch.Modified:
						s, ok := ev.Object.(*svmv1beta1.StorageVersionMigration)
						if !ok {
							continue
						}
						changed := state(s) != state(cur)
						cur = s
						if changed && progress != nil {
							progress(cur, true)
						}
						if done(cur) {
							return cur, nil
						}
					}
				}
			}
		}()
		if next != nil || err != nil {
			return next, err
		}
		fresh, err := svms.Get(ctx, from.Name, metav1.GetOptions{})
		if err != nil {
			return cur, fmt.Errorf("read StorageVersionMigration %s again after its watch expired: %w", from.Name, err)
		}
		cur = fresh
		if done(cur) {
			return cur, nil
		}
	}
}

// deleteOurs deletes a migration we created, even when ctx is done (an
// interrupted wait leaves nothing of ours behind when the API server can
// still be reached), and only the object we created (UID precondition).
func deleteOurs(ctx context.Context, svms typedsvm.StorageVersionMigrationInterface, s *svmv1beta1.StorageVersionMigration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = deleteSVM(ctx, svms, s)
}

func deleteSVM(ctx context.Context, svms typedsvm.StorageVersionMigrationInterface, s *svmv1beta1.StorageVersionMigration) error {
	uid := s.UID
	err := svms.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete StorageVersionMigration %s: %w", s.Name, err)
	}
	return nil
}
