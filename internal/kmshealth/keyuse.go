package kmshealth

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The kube-apiserver series the key-usage check reads from /metrics
// (k8s.io/apiserver pkg/storage/value/encrypt/envelope/metrics and
// pkg/storage/cacher/metrics; process_start_time_seconds from the process
// collector every Kubernetes component registers).
const (
	MetricKeyIDHashTotal         = "apiserver_envelope_encryption_key_id_hash_total"
	MetricKeyIDHashLastTimestamp = "apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds"
	MetricKeyIDHashStatus        = "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds"
	MetricWatchCacheInits        = "apiserver_watch_cache_initializations_total"
	MetricProcessStartTime       = "process_start_time_seconds"

	// Values of the transformation_type label.
	FromStorage = "from_storage" // a read from etcd decrypted with the key
	ToStorage   = "to_storage"   // a write to etcd encrypted with the key
)

// KeyHashUsage is what one kube-apiserver did with one KMS v2 key, by the
// key_id_hash label ([KeyIDHash] of the key ID), since it started: its
// counters are per process and start at zero.
type KeyHashUsage struct {
	Hash string
	// FromStorage counts objects read from etcd and decrypted with the key
	// (every read, whether or not the data key was cached); ToStorage
	// counts writes encrypted with it.
	FromStorage, ToStorage uint64
	// LastFromStorage, LastToStorage: when it was last used each way;
	// LastStatus: when a plugin's Status last returned it. Zero: never
	// since the start.
	LastFromStorage, LastToStorage, LastStatus time.Time
	// Providers are the EncryptionConfiguration provider names that used
	// or reported the key, sorted.
	Providers []string
}

// APIServerKeyUsage is one kube-apiserver's /metrics as far as KMS v2 key
// use is concerned.
type APIServerKeyUsage struct {
	// StartedAt is the process start (process_start_time_seconds).
	StartedAt time.Time
	// Keys by key_id_hash.
	Keys map[string]*KeyHashUsage
	// WatchCacheInitializations counts, per resource ("secrets",
	// "<resource>.<group>"), how often the watch cache finished its
	// initial list: that list reads, and decrypts, every stored object.
	WatchCacheInitializations map[string]uint64
	// statusByProvider is, per provider name, the key hash its Status most
	// recently returned; writersAt, per provider name, its latest
	// to_storage time.
	statusByProvider map[string]*KeyHashUsage
	writersAt        map[string]time.Time
}

// ParseKeyUsage reads a kube-apiserver /metrics body (the Prometheus text
// format) into its KMS v2 key use. A body without process_start_time_seconds
// is an error: the counters mean nothing without the start they count from.
func ParseKeyUsage(text []byte) (APIServerKeyUsage, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return APIServerKeyUsage{}, fmt.Errorf("parse kube-apiserver /metrics: %w", err)
	}
	u := APIServerKeyUsage{
		Keys:                      map[string]*KeyHashUsage{},
		WatchCacheInitializations: map[string]uint64{},
		statusByProvider:          map[string]*KeyHashUsage{},
		writersAt:                 map[string]time.Time{},
	}
	start, ok := families[MetricProcessStartTime]
	if !ok || len(start.GetMetric()) == 0 {
		return u, fmt.Errorf("kube-apiserver /metrics has no %s: is this a kube-apiserver's /metrics?", MetricProcessStartTime)
	}
	u.StartedAt = secondsTime(metricValue(start.GetMetric()[0]))
	key := func(m *dto.Metric) (*KeyHashUsage, map[string]string) {
		l := labels(m)
		h := l["key_id_hash"]
		k := u.Keys[h]
		if k == nil {
			k = &KeyHashUsage{Hash: h}
			u.Keys[h] = k
		}
		if p := l["provider_name"]; p != "" && !slices.Contains(k.Providers, p) {
			k.Providers = append(k.Providers, p)
			sort.Strings(k.Providers)
		}
		return k, l
	}
	for _, m := range families[MetricKeyIDHashTotal].GetMetric() {
		k, l := key(m)
		n := uint64(math.Max(0, metricValue(m)))
		switch l["transformation_type"] {
		case FromStorage:
			k.FromStorage += n
		case ToStorage:
			k.ToStorage += n
		}
	}
	for _, m := range families[MetricKeyIDHashLastTimestamp].GetMetric() {
		k, l := key(m)
		at := secondsTime(metricValue(m))
		switch l["transformation_type"] {
		case FromStorage:
			k.LastFromStorage = later(k.LastFromStorage, at)
		case ToStorage:
			k.LastToStorage = later(k.LastToStorage, at)
			if p := l["provider_name"]; at.After(u.writersAt[p]) {
				u.writersAt[p] = at
			}
		}
	}
	for _, m := range families[MetricKeyIDHashStatus].GetMetric() {
		k, l := key(m)
		at := secondsTime(metricValue(m))
		k.LastStatus = later(k.LastStatus, at)
		p := l["provider_name"]
		if cur := u.statusByProvider[p]; cur == nil || at.After(cur.LastStatus) {
			u.statusByProvider[p] = k
		}
	}
	for _, m := range families[MetricWatchCacheInits].GetMetric() {
		l := labels(m)
		u.WatchCacheInitializations[GroupResourceName(l["group"], l["resource"])] += uint64(math.Max(0, metricValue(m)))
	}
	return u, nil
}

// GroupResourceName is a resource as the re-encryption run names it:
// "secrets" for the core group, else "<resource>.<group>".
func GroupResourceName(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// ActiveKeyHash is the key hash kube-apiserver encrypts new writes with, as
// far as its metrics tell: the key the writing provider's Status returned
// last (kube-apiserver switches its write key when Status returns a new
// one). The writing provider is the one that wrote last; when nothing was
// written since the start, the only provider that reported a Status. ok is
// false when that cannot be told (no Status yet, or several providers and
// no write).
func (u APIServerKeyUsage) ActiveKeyHash() (hash string, ok bool) {
	writer := ""
	var at time.Time
	for p, t := range u.writersAt {
		if t.After(at) {
			writer, at = p, t
		}
	}
	if writer == "" {
		if len(u.statusByProvider) != 1 {
			return "", false
		}
		for p := range u.statusByProvider {
			writer = p
		}
	}
	k := u.statusByProvider[writer]
	if k == nil {
		return "", false
	}
	return k.Hash, true
}

// ReencryptionRun is what the retire judgement needs of a re-encryption
// run (the reencrypt package's Record, as the provider reads it).
type ReencryptionRun struct {
	Name       string // "<namespace>/<name>", for messages
	KeyID      string // the key the run re-encrypted under
	Resources  []string
	FinishedAt time.Time // zero while unfinished
}

// StartedAfterMargin is how much later than a run's recorded FinishedAt a
// kube-apiserver's process_start_time_seconds must be for it to count as
// started after the run: the record keeps whole seconds (metav1.Time), so the
// run may really have finished up to a second after the recorded time, and
// the process start is computed from the boot time in /proc/stat, which is
// whole seconds too, so it may read up to a second early.
const StartedAfterMargin = 2 * time.Second

// RetireVerdict says whether an old key may be retired, and why (not).
type RetireVerdict struct {
	Ready  bool
	Reason string
}

// JudgeRetire says whether the KMS v2 key retireKeyID may be destroyed, as
// far as the kube-apiserver whose metrics u are can prove: run (nil when
// there is none) re-encrypted every object of its resources under another
// key, which kube-apiserver now writes with; kube-apiserver started after
// the run finished, so its watch caches' initial lists read every stored
// object of the cached resources after the run; each of the run's resources
// finished that list; and not one read since the start was decrypted with
// the old key. Every other kube-apiserver of the cluster must be judged the
// same way: each reads etcd itself.
func JudgeRetire(u APIServerKeyUsage, retireKeyID string, run *ReencryptionRun) (RetireVerdict, error) {
	oldHash, err := KeyIDHash(retireKeyID)
	if err != nil {
		return RetireVerdict{}, fmt.Errorf("key to retire: %w", err)
	}
	no := func(format string, args ...any) (RetireVerdict, error) {
		return RetireVerdict{Reason: fmt.Sprintf(format, args...)}, nil
	}
	started := u.StartedAt.UTC().Format(time.RFC3339)
	switch {
	case run == nil:
		return no("no re-encryption run is recorded: apply the kmshealth_kms_reencryption that re-encrypts under the new key first")
	case run.FinishedAt.IsZero():
		return no("re-encryption run %s has not finished: apply it again until its finished_at is set", run.Name)
	case run.KeyID == retireKeyID:
		return no("re-encryption run %s re-encrypted under %q, the key to retire: rotate to a new key and re-encrypt under it first", run.Name, retireKeyID)
	}
	runHash, err := KeyIDHash(run.KeyID)
	if err != nil {
		return RetireVerdict{}, fmt.Errorf("re-encryption run %s key: %w", run.Name, err)
	}
	active, ok := u.ActiveKeyHash()
	switch {
	case !ok:
		return no("kube-apiserver's metrics do not say which key it writes with (no KMS v2 Status since it started at %s, or "+
			"several providers and no write yet): write any encrypted object (e.g. a Secret) and read this again", started)
	case active != runHash:
		return no("kube-apiserver writes with the key whose hash is %s, not with %q, the key re-encryption run %s re-encrypted "+
			"under: finish the rotation (every plugin on %q, see kmshealth_kms_plugin_health) and re-encrypt again", active, run.KeyID, run.Name, run.KeyID)
	case u.StartedAt.Before(run.FinishedAt.Add(StartedAfterMargin)):
		return no("kube-apiserver started at %s, before re-encryption run %s finished at %s, so it has not read every stored "+
			"object since: restart it (or wait for its next restart) so that it reads them all again, then read this again",
			started, run.Name, run.FinishedAt.UTC().Format(time.RFC3339))
	}
	if old := u.Keys[oldHash]; old != nil && old.FromStorage > 0 {
		return no("kube-apiserver decrypted %d object(s) with key %q since it started at %s: a stored object still needs it "+
			"(written before the re-encryption, missed by it, or written since under the old key). Re-encrypt again, restart "+
			"kube-apiserver so that it reads every object once more, and read this again.", old.FromStorage, retireKeyID, started)
	}
	for _, r := range run.Resources {
		if u.WatchCacheInitializations[r] == 0 {
			return no("kube-apiserver has not finished reading every stored %s since it started at %s (%s{resource=%q} is 0): "+
				"read this again in a few seconds. If its watch cache is off for %s (--watch-cache=false, or --watch-cache-sizes "+
				"with %s#0), it never reads them all and retiring the key cannot be proven this way.", r, started, MetricWatchCacheInits, r, r, r)
		}
	}
	return RetireVerdict{Ready: true, Reason: fmt.Sprintf("kube-apiserver started at %s, after re-encryption run %s finished at %s; "+
		"since then it read every stored object of %s and decrypted none with key %q. Check every other kube-apiserver of the "+
		"cluster the same way before destroying the key.", started, run.Name, run.FinishedAt.UTC().Format(time.RFC3339),
		strings.Join(run.Resources, ", "), retireKeyID)}, nil
}

func labels(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// secondsTime is a Unix time in (fractional) seconds; zero for 0.
func secondsTime(s float64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
