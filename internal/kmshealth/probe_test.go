package kmshealth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kmstest"
)

func TestResultPlugin(t *testing.T) {
	sock := Socket{KeyID: "7", Endpoint: "unix:///var/run/kmsplugin/kms-7.sock", Path: "/var/run/kmsplugin/kms-7.sock"}
	ok := Result{Socket: sock, Checked: t0, Version: "v2", Healthz: "ok", KEKID: "k-7f"}
	with := func(f func(*Result)) Result {
		r := ok
		f(&r)
		return r
	}
	tests := []struct {
		name       string
		r          Result
		wantStatus PluginStatus
		wantKEK    string
		wantDetail []string // parts of the detail; none means no detail
	}{
		{"healthy v2", ok, StatusHealthy, "k-7f", nil},
		{"healthy v2beta1", with(func(r *Result) { r.Version = "v2beta1" }), StatusHealthy, "k-7f", nil},
		{"key id just under 1 KiB", with(func(r *Result) { r.KEKID = strings.Repeat("k", MaxKEKIDBytes-1) }), StatusHealthy, "", nil},
		{"healthz not ok", with(func(r *Result) { r.Healthz = "broken" }), StatusUnhealthy, "k-7f", []string{"healthz", `"broken"`}},
		{"healthz empty", with(func(r *Result) { r.Healthz = "" }), StatusUnhealthy, "k-7f", []string{"healthz", `""`}},
		{"healthz OK is not ok", with(func(r *Result) { r.Healthz = "OK" }), StatusUnhealthy, "k-7f", []string{"healthz", `"OK"`}},
		{"version v1", with(func(r *Result) { r.Version = "v1" }), StatusUnhealthy, "k-7f", []string{"version", `"v1"`}},
		{"version v1beta1", with(func(r *Result) { r.Version = "v1beta1" }), StatusUnhealthy, "k-7f", []string{"version", `"v1beta1"`}},
		{"version empty", with(func(r *Result) { r.Version = "" }), StatusUnhealthy, "k-7f", []string{"version", `""`}},
		{"key id empty", with(func(r *Result) { r.KEKID = "" }), StatusUnhealthy, "", []string{"empty key_id"}},
		{"key id 1 KiB", with(func(r *Result) { r.KEKID = strings.Repeat("k", MaxKEKIDBytes) }), StatusUnhealthy, "", []string{"key_id", "1024 bytes"}},
		{"key id over 1 KiB", with(func(r *Result) { r.KEKID = strings.Repeat("k", 5000) }), StatusUnhealthy, "", []string{"key_id", "5000 bytes"}},
		{"every problem at once", Result{Socket: sock, Checked: t0, Version: "v1", Healthz: "down"}, StatusUnhealthy, "", []string{`healthz "down"`, `version "v1"`, "empty key_id"}},
		{"RPC error", with(func(r *Result) { r.Err = errors.New("Status: connection refused") }), StatusError, "", []string{"Status: connection refused"}},
		{"RPC error with nothing else", Result{Socket: sock, Checked: t0, Err: errors.New("boom")}, StatusError, "", []string{"boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.r.Plugin()
			if p.KeyID != "7" {
				t.Errorf("KeyID = %q, want the socket's 7", p.KeyID)
			}
			if p.Status != tt.wantStatus {
				t.Errorf("Status = %q, want %q (detail %q)", p.Status, tt.wantStatus, p.Detail)
			}
			if tt.wantKEK != "" && p.KEKID != tt.wantKEK {
				t.Errorf("KEKID = %q, want %q", p.KEKID, tt.wantKEK)
			}
			if tt.wantStatus == StatusError && p.KEKID != "" {
				t.Errorf("KEKID = %q on error, want it omitted", p.KEKID)
			}
			if tt.wantStatus == StatusHealthy && p.KEKID == "" {
				t.Error("KEKID empty on a healthy plugin")
			}
			if len(tt.wantDetail) == 0 && p.Detail != "" {
				t.Errorf("Detail = %q, want none", p.Detail)
			}
			for _, want := range tt.wantDetail {
				if !strings.Contains(p.Detail, want) {
					t.Errorf("Detail %q does not contain %q", p.Detail, want)
				}
			}
			if len(p.Detail) > MaxDetailBytes || len(p.KEKID) >= MaxKEKIDBytes {
				t.Errorf("detail (%d bytes) over %d or kekID (%d bytes) not under %d", len(p.Detail), MaxDetailBytes, len(p.KEKID), MaxKEKIDBytes)
			}
			if !p.LastChecked.Equal(t0) {
				t.Errorf("LastChecked = %v, want %v", p.LastChecked, t0)
			}
		})
	}
}

func TestResultPluginLongError(t *testing.T) {
	// 3-byte runes from byte 1, so the cut at MaxDetailBytes-3 lands
	// inside one and must step back to its start.
	msg := "x" + strings.Repeat("€", 400)
	p := Result{Socket: Socket{KeyID: "1"}, Checked: t0, KEKID: "k", Err: errors.New(msg)}.Plugin()
	if p.Status != StatusError {
		t.Fatalf("Status = %q, want error", p.Status)
	}
	if len(p.Detail) > MaxDetailBytes {
		t.Errorf("Detail is %d bytes, over %d", len(p.Detail), MaxDetailBytes)
	}
	if !utf8.ValidString(p.Detail) {
		t.Errorf("Detail %q is not valid UTF-8: cut inside a rune", p.Detail)
	}
	if !strings.HasPrefix(msg, strings.TrimSuffix(p.Detail, "…")) || !strings.HasSuffix(p.Detail, "…") {
		t.Errorf("Detail %q is not the start of the error text marked as cut", p.Detail)
	}
	if len(p.Detail) < MaxDetailBytes-6 {
		t.Errorf("Detail is %d bytes, want close to %d", len(p.Detail), MaxDetailBytes)
	}
}

func TestResultPluginLongHealthz(t *testing.T) {
	p := Result{Socket: Socket{KeyID: "1"}, Checked: t0, Version: strings.Repeat("v", 4096), Healthz: strings.Repeat("h", 4096), KEKID: "k"}.Plugin()
	if p.Status != StatusUnhealthy {
		t.Fatalf("Status = %q, want unhealthy", p.Status)
	}
	if len(p.Detail) > MaxDetailBytes || !strings.Contains(p.Detail, "healthz") || !strings.Contains(p.Detail, "version") {
		t.Errorf("Detail %q (%d bytes): want both problems within %d bytes", p.Detail, len(p.Detail), MaxDetailBytes)
	}
}

func TestResultPluginLastChecked(t *testing.T) {
	checked := time.Date(2026, 5, 8, 14, 34, 56, 987654321, time.FixedZone("CEST", 2*3600))
	p := Result{Socket: Socket{KeyID: "1"}, Checked: checked, Version: "v2", Healthz: "ok", KEKID: "k"}.Plugin()
	if p.LastChecked != t0 { // == on purpose: same instant, UTC, no sub-second part
		t.Errorf("LastChecked = %v (%s), want %v", p.LastChecked, p.LastChecked.Location(), t0)
	}
	msg := FormatMessage([]Plugin{p})
	if !strings.Contains(msg, `"lastChecked":"2026-05-08T12:34:56Z"`) {
		t.Errorf("message %s: want lastChecked in UTC, whole seconds", msg)
	}
}

// startPlugins serves n KMS v2 test plugins as kms-1.sock … kms-n.sock in a
// fresh directory, with kekIDs k-1 … k-n. The directory is short-named:
// unix socket paths must stay under ~100 bytes, which t.TempDir() can break.
func startPlugins(t *testing.T, n int) (string, []*kmstest.Plugin) {
	t.Helper()
	dir, err := os.MkdirTemp("", "kh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var plugins []*kmstest.Plugin
	for i := 1; i <= n; i++ {
		p, err := kmstest.Start(filepath.Join(dir, "kms-"+strconv.Itoa(i)+".sock"), "k-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		plugins = append(plugins, p)
	}
	return dir, plugins
}

func fixedNow() time.Time { return t0 }

func TestProbe(t *testing.T) {
	ctx := context.Background()
	dir, plugins := startPlugins(t, 3)
	sockets, err := SocketsInDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sockets) != 3 {
		t.Fatalf("SocketsInDir found %+v, want 3 sockets", sockets)
	}
	const timeout = 5 * time.Second // generous: live plugins answer in milliseconds

	t.Run("all healthy", func(t *testing.T) {
		results := Probe(ctx, sockets, timeout, fixedNow)
		if len(results) != 3 {
			t.Fatalf("%d results, want 3", len(results))
		}
		for i, r := range results {
			want := strconv.Itoa(i + 1)
			if r.Socket != sockets[i] {
				t.Errorf("result %d is for %+v, want %+v (results in socket order)", i, r.Socket, sockets[i])
			}
			if r.Err != nil {
				t.Fatalf("plugin %s: %v", want, r.Err)
			}
			if r.Version != "v2" || r.Healthz != "ok" || r.KEKID != "k-"+want {
				t.Errorf("plugin %s answered version %q healthz %q key_id %q", want, r.Version, r.Healthz, r.KEKID)
			}
			if !r.Checked.Equal(t0) {
				t.Errorf("plugin %s Checked = %v, want the injected clock's %v", want, r.Checked, t0)
			}
			if r.Latency <= 0 || r.Latency > timeout {
				t.Errorf("plugin %s Latency = %v, want the call's duration", want, r.Latency)
			}
			if p := r.Plugin(); p.Status != StatusHealthy || p.KeyID != want || p.KEKID != "k-"+want {
				t.Errorf("plugin %s = %+v, want healthy with kekID k-%s", want, p, want)
			}
		}
	})

	t.Run("unhealthy and rotated", func(t *testing.T) {
		plugins[1].SetHealthz("broken")
		plugins[2].SetKeyID("k-3b")
		results := Probe(ctx, sockets, timeout, fixedNow)
		if p := results[0].Plugin(); p.Status != StatusHealthy {
			t.Errorf("plugin 1 = %+v, want healthy", p)
		}
		if p := results[1].Plugin(); p.Status != StatusUnhealthy || !strings.Contains(p.Detail, "broken") || p.KEKID != "k-2" {
			t.Errorf("plugin 2 = %+v, want unhealthy naming healthz \"broken\", kekID kept", p)
		}
		if p := results[2].Plugin(); p.Status != StatusHealthy || p.KEKID != "k-3b" {
			t.Errorf("plugin 3 = %+v, want healthy with the new kekID k-3b", p)
		}
		plugins[1].SetHealthz("ok")
	})

	t.Run("one stopped", func(t *testing.T) {
		plugins[0].Stop()
		start := time.Now()
		results := Probe(ctx, sockets, 2*time.Second, fixedNow)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Probe took %v with a 2s timeout", d)
		}
		p1 := results[0].Plugin()
		if results[0].Err == nil || p1.Status != StatusError || p1.Detail == "" || p1.KEKID != "" {
			t.Errorf("stopped plugin 1 = %+v (err %v), want error with a detail and no kekID", p1, results[0].Err)
		}
		for i := 1; i < 3; i++ {
			if r := results[i]; r.Err != nil || r.Plugin().Status != StatusHealthy {
				t.Errorf("plugin %d = %+v (err %v), want it to still answer healthy", i+1, r.Plugin(), r.Err)
			}
		}
		msg := FormatMessage([]Plugin{results[0].Plugin(), results[1].Plugin(), results[2].Plugin()})
		if _, err := ParseMessage(msg); err != nil {
			t.Errorf("message of a real probe does not parse: %v\n%s", err, msg)
		}
	})
}

func TestProbeMissingSocketTimesOut(t *testing.T) {
	dir, err := os.MkdirTemp("", "kh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := Socket{KeyID: "1", Path: filepath.Join(dir, "kms-1.sock"), Endpoint: "unix://" + filepath.Join(dir, "kms-1.sock")}

	start := time.Now()
	results := Probe(context.Background(), []Socket{s}, 300*time.Millisecond, fixedNow)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Probe of a missing socket took %v with a 300ms timeout", d)
	}
	r := results[0]
	if r.Err == nil {
		t.Fatal("Probe of a missing socket: no error")
	}
	if p := r.Plugin(); p.Status != StatusError || p.Detail == "" || p.KeyID != "1" || !p.LastChecked.Equal(t0) {
		t.Errorf("Plugin = %+v, want error with a detail, keyID 1, checked at %v", p, t0)
	}
}

func TestProbeIsConcurrent(t *testing.T) {
	dir, err := os.MkdirTemp("", "kh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var sockets []Socket
	for i := 1; i <= 4; i++ {
		p := filepath.Join(dir, "kms-"+strconv.Itoa(i)+".sock")
		sockets = append(sockets, Socket{KeyID: strconv.Itoa(i), Path: p, Endpoint: "unix://" + p})
	}
	// Four probes that each wait out a 1s timeout: one after the other
	// would take 4s or more.
	start := time.Now()
	results := Probe(context.Background(), sockets, time.Second, fixedNow)
	if d := time.Since(start); d >= 3*time.Second {
		t.Errorf("4 probes with a 1s timeout took %v: not concurrent", d)
	}
	for i, r := range results {
		if r.Err == nil || r.Socket.KeyID != strconv.Itoa(i+1) {
			t.Errorf("result %d = %+v, want an error for keyID %d", i, r, i+1)
		}
	}
}

func TestProbeCancelledContext(t *testing.T) {
	_, plugins := startPlugins(t, 1)
	s := Socket{KeyID: "1", Endpoint: plugins[0].Endpoint(), Path: plugins[0].Socket()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	results := Probe(ctx, []Socket{s}, time.Minute, fixedNow)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Probe with a cancelled context took %v", d)
	}
	if results[0].Err == nil {
		t.Error("Probe with a cancelled context: no error")
	}
}

func TestProbeNone(t *testing.T) {
	if got := Probe(context.Background(), nil, time.Second, fixedNow); len(got) != 0 {
		t.Errorf("Probe(nil) = %+v, want no results", got)
	}
}

func TestPluginKeepsValidKEKIDWhole(t *testing.T) {
	long := strings.Repeat("k", MaxKEKIDBytes-10)
	a := Result{Socket: Socket{KeyID: "1"}, Version: "v2", Healthz: "ok", KEKID: long + "version-1"}.Plugin()
	b := Result{Socket: Socket{KeyID: "1"}, Version: "v2", Healthz: "ok", KEKID: long + "version-2"}.Plugin()
	if a.KEKID == b.KEKID || a.Status != StatusHealthy {
		t.Errorf("key ids differing only at the end must stay apart: %q vs %q (%s)", a.KEKID[len(a.KEKID)-12:], b.KEKID[len(b.KEKID)-12:], a.Status)
	}
}
