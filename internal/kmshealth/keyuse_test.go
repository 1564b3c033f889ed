package kmshealth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The captures in testdata/metrics are a real kube-apiserver's /metrics (the
// test bed's, v1.35.4; only the envelope encryption, watch cache
// initialization and process start families kept), taken around a rotation
// from key "1" to key "2" of the test KMS plugin with five Secrets:
//   - written-under-1: the five written under key 1;
//   - rotated-rewritten-but-one: the plugin on key 2, kube-apiserver
//     restarted (its start read all five under key 1), four rewritten;
//   - restarted-one-left: kube-apiserver restarted again: its start read
//     four Secrets under key 2 and one under key 1;
//   - restarted-all-rewritten: the fifth rewritten, restarted once more.
func capture(t *testing.T, name string) APIServerKeyUsage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "metrics", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := ParseKeyUsage(b)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustHash(t *testing.T, keyID string) string {
	t.Helper()
	h, err := KeyIDHash(keyID)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestParseKeyUsage(t *testing.T) {
	h1, h2 := mustHash(t, "1"), mustHash(t, "2")
	type use struct{ from, to uint64 }
	tests := []struct {
		capture   string
		startedAt float64
		keys      map[string]use
		active    string
	}{
		{capture: "written-under-1", startedAt: 1795652583.54, keys: map[string]use{h1: {5, 5}}, active: h1},
		{capture: "rotated-rewritten-but-one", startedAt: 1795652594.38, keys: map[string]use{h1: {9, 0}, h2: {4, 4}}, active: h2},
		{capture: "restarted-one-left", startedAt: 1795652604.3, keys: map[string]use{h1: {1, 0}, h2: {4, 0}}, active: h2},
		{capture: "restarted-all-rewritten", startedAt: 1795652614.73, keys: map[string]use{h2: {5, 0}}, active: h2},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			u := capture(t, tt.capture)
			if want := secondsTime(tt.startedAt); !u.StartedAt.Equal(want) {
				t.Errorf("StartedAt %s, want %s", u.StartedAt, want)
			}
			if len(u.Keys) != len(tt.keys) {
				t.Errorf("keys %v, want %v", u.Keys, tt.keys)
			}
			for h, want := range tt.keys {
				k := u.Keys[h]
				if k == nil {
					t.Fatalf("no usage of %s", h)
				}
				if k.FromStorage != want.from || k.ToStorage != want.to {
					t.Errorf("%s: from_storage %d, to_storage %d; want %d, %d", h, k.FromStorage, k.ToStorage, want.from, want.to)
				}
				if (k.FromStorage > 0) != !k.LastFromStorage.IsZero() || (k.ToStorage > 0) != !k.LastToStorage.IsZero() {
					t.Errorf("%s: last times %s / %s do not match the counts", h, k.LastFromStorage, k.LastToStorage)
				}
				if len(k.Providers) != 1 || k.Providers[0] != "kmshealth-test" {
					t.Errorf("%s: providers %v, want [kmshealth-test]", h, k.Providers)
				}
			}
			if got, ok := u.ActiveKeyHash(); !ok || got != tt.active {
				t.Errorf("active key hash %q (%v), want %q", got, ok, tt.active)
			}
			if u.WatchCacheInitializations["secrets"] != 1 {
				t.Errorf("secrets watch cache initializations %d, want 1", u.WatchCacheInitializations["secrets"])
			}
		})
	}
}

func TestParseKeyUsageErrors(t *testing.T) {
	tests := []struct{ name, text, wantErr string }{
		{name: "not metrics", text: "<html>login</html>\n", wantErr: "parse kube-apiserver /metrics"},
		{name: "no start time", text: "apiserver_watch_cache_initializations_total{group=\"\",resource=\"secrets\"} 1\n", wantErr: "no process_start_time_seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseKeyUsage([]byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestActiveKeyHashUnknown(t *testing.T) {
	tests := []struct{ name, text string }{
		{name: "no status yet", text: "process_start_time_seconds 1.7e+09\n"},
		{name: "two providers, no write", text: "process_start_time_seconds 1.7e+09\n" +
			MetricKeyIDHashStatus + `{apiserver_id_hash="a",key_id_hash="sha256:aa",provider_name="p1"} 1.7e+09` + "\n" +
			MetricKeyIDHashStatus + `{apiserver_id_hash="a",key_id_hash="sha256:bb",provider_name="p2"} 1.7e+09` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ParseKeyUsage([]byte(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if h, ok := u.ActiveKeyHash(); ok {
				t.Fatalf("active key hash %q, want unknown", h)
			}
		})
	}
}

func TestJudgeRetire(t *testing.T) {
	// Between the restarts: after restarted-one-left started (…604.3),
	// at least StartedAfterMargin before restarted-all-rewritten did (…614.73).
	finished := time.Unix(1795652610, 0)
	run := func(keyID string, finishedAt time.Time, resources ...string) *ReencryptionRun {
		if len(resources) == 0 {
			resources = []string{"secrets"}
		}
		return &ReencryptionRun{Name: "kube-system/rotate", KeyID: keyID, Resources: resources, FinishedAt: finishedAt}
	}
	tests := []struct {
		name, capture, retire string
		run                   *ReencryptionRun
		ready                 bool
		reason                string
	}{
		{name: "ready", capture: "restarted-all-rewritten", retire: "1", run: run("2", finished), ready: true,
			reason: "decrypted none with key \"1\". Check every other kube-apiserver"},
		{name: "no run", capture: "restarted-all-rewritten", retire: "1", reason: "no re-encryption run is recorded"},
		{name: "unfinished", capture: "restarted-all-rewritten", retire: "1", run: run("2", time.Time{}),
			reason: "re-encryption run kube-system/rotate has not finished"},
		{name: "run under the old key", capture: "restarted-all-rewritten", retire: "2", run: run("2", finished),
			reason: "re-encrypted under \"2\", the key to retire"},
		{name: "writes with another key", capture: "written-under-1", retire: "1", run: run("2", time.Unix(1795652500, 0)),
			reason: "writes with the key whose hash is " + mustHash(t, "1")},
		{name: "started before the run finished", capture: "rotated-rewritten-but-one", retire: "1", run: run("2", time.Unix(1795652600, 0)),
			reason: "before re-encryption run kube-system/rotate finished at 2026-11-26T00:23:20Z"},
		{name: "started within the margin", capture: "restarted-all-rewritten", retire: "1", run: run("2", time.Unix(1795652613, 0)),
			reason: "restart it (or wait for its next restart)"},
		{name: "an object still under the old key", capture: "restarted-one-left", retire: "1", run: run("2", time.Unix(1795652600, 0)),
			reason: "decrypted 1 object(s) with key \"1\" since it started at 2026-11-26T00:23:24Z"},
		{name: "resource never read", capture: "restarted-all-rewritten", retire: "1", run: run("2", finished, "secrets", "widgets.example.com"),
			reason: "not finished reading every stored widgets.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := JudgeRetire(capture(t, tt.capture), tt.retire, tt.run)
			if err != nil {
				t.Fatal(err)
			}
			if v.Ready != tt.ready || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("ready %v, reason %q; want %v and a reason containing %q", v.Ready, v.Reason, tt.ready, tt.reason)
			}
		})
	}
	if _, err := JudgeRetire(capture(t, "restarted-all-rewritten"), "", run("2", finished)); err == nil || !strings.Contains(err.Error(), "key to retire: the key ID is empty") {
		t.Fatalf("empty key to retire: error %v", err)
	}
}
