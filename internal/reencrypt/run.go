package reencrypt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Methods a run may be told to use.
const (
	// MethodAuto takes StorageVersionMigration when the cluster serves it
	// and its controller runs, else rewrites.
	MethodAuto = "auto"
	// MethodStorageVersionMigration fails when StorageVersionMigration is
	// not available.
	MethodStorageVersionMigration = "storage_version_migration"
	// MethodRewrite always rewrites, object by object.
	MethodRewrite = "rewrite"
)

// Methods lists every method, MethodAuto first.
var Methods = []string{MethodAuto, MethodStorageVersionMigration, MethodRewrite}

// Defaults of Options.
const (
	DefaultConcurrency = 8
	DefaultPageSize    = 500
	DefaultLogEvery    = 10 * time.Second
)

// Options say what a run re-encrypts, how, and where it keeps its record.
type Options struct {
	// Namespace and Name locate the run's record ConfigMap
	// (RecordName(Name) in Namespace).
	Namespace, Name string
	// KeyID is the kekID the run re-encrypts under (the trigger): a record
	// for another key is a finished or abandoned run of an earlier
	// rotation, and the run starts over.
	KeyID string
	// Resources are "secrets" or "<resource>.<group>"; default
	// DefaultResources.
	Resources []string
	// Method is one of Methods; default MethodAuto.
	Method string
	// Concurrency bounds the rewrite's updates in flight; default
	// DefaultConcurrency.
	Concurrency int
	// PageSize is the rewrite's LIST limit; default DefaultPageSize.
	PageSize int64
	// Gate judges the KMS plugins before anything is written; required.
	Gate Gate
	// HealthTarget names where Gate reads the reports; only recorded.
	HealthTarget string
	// Log hears progress (every LogEvery) and what the run decides.
	Log func(format string, args ...any)
	// LogEvery is the progress interval; default DefaultLogEvery.
	LogEvery time.Duration
	// Now is the clock of StartedAt and FinishedAt; default time.Now.
	Now func() time.Time
	// AfterPage, when set, is called after each rewritten page's progress
	// is recorded (tests interrupt a run there).
	AfterPage func(resource string, p ResourceProgress)
}

// Validate checks the options, naming the setting and the fix.
func (o *Options) Validate() error {
	var errs []error
	if o.Name == "" || o.Namespace == "" {
		errs = append(errs, errors.New("name and namespace of the run's record are required"))
	}
	if o.KeyID == "" {
		errs = append(errs, errors.New("key_id is empty: set it to the kekID the plugins are on (the kmshealth_kms_plugin_health data source's active_kek_ids)"))
	}
	for _, r := range o.Resources {
		if _, err := ParseResource(r); err != nil {
			errs = append(errs, fmt.Errorf("resources: %w", err))
		}
	}
	if o.Method != "" && !slices.Contains(Methods, o.Method) {
		errs = append(errs, fmt.Errorf("method %q is not one of %s", o.Method, strings.Join(Methods, ", ")))
	}
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be at least 1 (default %d)", o.Concurrency, DefaultConcurrency))
	}
	if o.PageSize < 0 {
		errs = append(errs, fmt.Errorf("page size %d: must be at least 1 (default %d)", o.PageSize, DefaultPageSize))
	}
	if o.Gate == nil {
		errs = append(errs, errors.New("no KMS health gate: a run never writes without one"))
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() {
	if len(o.Resources) == 0 {
		o.Resources = DefaultResources
	}
	if o.Method == "" {
		o.Method = MethodAuto
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.LogEvery == 0 {
		o.LogEvery = DefaultLogEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// run is one Run in progress.
type run struct {
	cfg   *rest.Config
	dyn   dynamic.Interface
	o     Options
	store *recordStore
	rec   *Record

	// counters for the progress log
	done, total atomic.Int64 // total < 0: unknown
	written     atomic.Int64
	conflicts   atomic.Int64
	gone        atomic.Int64
}

// Run re-encrypts the requested resources under o.KeyID, resuming the
// record of an unfinished run for the same key, and returns the record as
// left. It refuses to write unless the gate passes; it writes nothing at
// all when the record says the run is already complete. Cancelling ctx
// stops it after the page in flight; the record then says where the next
// Run resumes.
func Run(ctx context.Context, cfg *rest.Config, o Options) (*Record, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("re-encryption client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("re-encryption client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("re-encryption client: %w", err)
	}
	r := &run{cfg: cfg, dyn: dyn, o: o, store: &recordStore{core: core, namespace: o.Namespace, name: o.Name}}
	if r.rec, err = r.store.load(ctx); err != nil {
		return nil, err
	}
	if r.rec.Complete() && r.rec.KeyID == o.KeyID && covers(r.rec, o.Resources) {
		o.Log("re-encryption %s: already finished under key %q at %s; nothing to do", o.Name, o.KeyID, r.rec.FinishedAt.UTC().Format(time.RFC3339))
		return r.rec, nil
	}
	resolved, err := Resolve(ctx, disc, o.Resources)
	if err != nil {
		return nil, err
	}
	h, err := o.Gate(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the KMS health failed: %w", ErrGate, err)
	}
	if err := CheckHealth(h, o.KeyID); err != nil {
		return nil, err
	}
	path, err := r.choosePath(ctx)
	if err != nil {
		return nil, err
	}
	r.begin(path)
	if err := r.store.save(ctx, r.rec); err != nil {
		return nil, err
	}
	r.countTotal(ctx, resolved)
	stop := r.logProgress()
	defer stop()
	for _, res := range resolved {
		rp := r.progress(res.Name)
		if rp.Complete {
			continue
		}
		if path == PathStorageVersionMigration {
			err = r.migrate(ctx, res, rp)
		} else {
			err = r.rewrite(ctx, res, rp)
		}
		if err != nil {
			return r.rec, err
		}
	}
	now := metav1.NewTime(o.Now())
	r.rec.FinishedAt = &now
	if err := r.store.save(ctx, r.rec); err != nil {
		return r.rec, err
	}
	o.Log("re-encryption %s: finished under key %q by %s: %s", o.Name, o.KeyID, path, r.summary())
	return r.rec, nil
}

// covers reports whether the record's progress names every resource.
func covers(rec *Record, resources []string) bool {
	for _, want := range resources {
		if !slices.ContainsFunc(rec.Progress, func(p ResourceProgress) bool { return p.Resource == want && p.Complete }) {
			return false
		}
	}
	return true
}

// choosePath applies the method.
func (r *run) choosePath(ctx context.Context) (string, error) {
	if r.o.Method == MethodRewrite {
		return PathRewrite, nil
	}
	ok, why, err := StorageVersionMigrationAvailable(ctx, r.cfg)
	if err != nil {
		return "", fmt.Errorf("find out whether StorageVersionMigration is available: %w", err)
	}
	switch {
	case ok:
		return PathStorageVersionMigration, nil
	case r.o.Method == MethodStorageVersionMigration:
		return "", fmt.Errorf("method %q: StorageVersionMigration is not available in this cluster (%s); set method = %q or %q to rewrite the objects instead",
			MethodStorageVersionMigration, why, MethodAuto, MethodRewrite)
	}
	r.o.Log("re-encryption %s: StorageVersionMigration is not available (%s); rewriting the objects", r.o.Name, why)
	return PathRewrite, nil
}

// begin starts a new record, or resumes the one read when it is for the
// same key.
func (r *run) begin(path string) {
	rec := r.rec
	if rec != nil && rec.KeyID != r.o.KeyID {
		r.o.Log("re-encryption %s: the record is of key %q, this run re-encrypts under %q; starting over", r.o.Name, rec.KeyID, r.o.KeyID)
		rec = nil
	}
	if rec == nil {
		rec = &Record{KeyID: r.o.KeyID, StartedAt: metav1.NewTime(r.o.Now())}
	} else {
		r.o.Log("re-encryption %s: resuming the run under key %q started %s", r.o.Name, rec.KeyID, rec.StartedAt.UTC().Format(time.RFC3339))
	}
	if rec.Path != path {
		// A continue token is the rewrite's; StorageVersionMigration
		// migrates whole resources.
		for i := range rec.Progress {
			rec.Progress[i].Continue = ""
		}
	}
	rec.Path = path
	rec.FinishedAt = nil
	rec.Method, rec.Concurrency, rec.HealthTarget = r.o.Method, r.o.Concurrency, r.o.HealthTarget
	rec.Resources = append([]string(nil), r.o.Resources...)
	progress := make([]ResourceProgress, 0, len(r.o.Resources))
	for _, name := range r.o.Resources {
		i := slices.IndexFunc(rec.Progress, func(p ResourceProgress) bool { return p.Resource == name })
		if i >= 0 {
			progress = append(progress, rec.Progress[i])
		} else {
			progress = append(progress, ResourceProgress{Resource: name})
		}
	}
	rec.Progress = progress
	r.rec = rec
}

func (r *run) progress(resource string) *ResourceProgress {
	for i := range r.rec.Progress {
		if r.rec.Progress[i].Resource == resource {
			return &r.rec.Progress[i]
		}
	}
	panic("reencrypt: no progress entry for " + resource) // begin made one for each
}

// countTotal sums what is left for the progress log; unknown when any
// resource's count is.
func (r *run) countTotal(ctx context.Context, resolved []Resolved) {
	var total, done int64
	for _, res := range resolved {
		rp := r.progress(res.Name)
		done += rp.Done
		if rp.Complete {
			total += rp.Done
			continue
		}
		n, err := Count(ctx, r.dyn, res.GVR)
		if err != nil || n < 0 || total < 0 {
			total = -1
			continue
		}
		rp.Total = n
		total += max(n, rp.Done)
	}
	r.done.Store(done)
	r.total.Store(total)
}

// migrate runs StorageVersionMigration for one resource.
func (r *run) migrate(ctx context.Context, res Resolved, rp *ResourceProgress) error {
	r.o.Log("re-encryption %s: %s by StorageVersionMigration", r.o.Name, res.Name)
	if err := MigrateWithSVM(ctx, r.cfg, res.GVR, r.o.Name, r.o.Log); err != nil {
		return fmt.Errorf("re-encrypt %s by StorageVersionMigration: %w", res.Name, err)
	}
	// The migration rewrote every object of the resource; how many there
	// were is what the count before it saw.
	rp.Done = rp.Total
	rp.Complete = true
	r.done.Add(rp.Total)
	return r.store.save(ctx, r.rec)
}

// logProgress logs done/total, rate and ETA every LogEvery until stopped.
func (r *run) logProgress() (stop func()) {
	start, startDone := time.Now(), r.done.Load()
	t := time.NewTicker(r.o.LogEvery)
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				r.o.Log("%s", r.progressLine(now.Sub(start), r.done.Load()-startDone))
			}
		}
	}()
	return func() {
		t.Stop()
		close(quit)
		<-finished
	}
}

// progressLine is one progress log line: "re-encryption x: 1200/5000
// objects (24%), 310 objects/s, ETA 12s".
func (r *run) progressLine(elapsed time.Duration, doneHere int64) string {
	done, total := r.done.Load(), r.total.Load()
	rate := float64(doneHere) / elapsed.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "re-encryption %s: ", r.o.Name)
	if total >= 0 {
		fmt.Fprintf(&b, "%d/%d objects", done, total)
		if total > 0 {
			fmt.Fprintf(&b, " (%d%%)", done*100/total)
		}
	} else {
		fmt.Fprintf(&b, "%d objects (total unknown)", done)
	}
	fmt.Fprintf(&b, ", %.0f objects/s", rate)
	if total >= 0 && rate > 0 {
		eta := time.Duration(float64(max(total-done, 0)) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	return b.String()
}

func (r *run) summary() string {
	var parts []string
	for _, p := range r.rec.Progress {
		parts = append(parts, fmt.Sprintf("%s %d", p.Resource, p.Done))
	}
	s := strings.Join(parts, ", ")
	if r.rec.Path == PathRewrite {
		s += fmt.Sprintf(" (this run: %d written, %d rewritten by others meanwhile, %d deleted meanwhile)",
			r.written.Load(), r.conflicts.Load(), r.gone.Load())
	}
	return s
}
