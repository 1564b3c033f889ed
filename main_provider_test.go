//go:build !incluster && !reportonly

package main

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestQuietSDKLogs: the SDKs' trace logs are turned off only when no
// TF_LOG* variable asks for logs; a user debugging keeps every log.
func TestQuietSDKLogs(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // each SDK level afterwards; "" = left unset
	}{
		{name: "no TF_LOG: off", want: "OFF"},
		{name: "TF_LOG=TRACE: untouched", env: map[string]string{"TF_LOG": "TRACE"}},
		{name: "TF_LOG_PROVIDER: untouched", env: map[string]string{"TF_LOG_PROVIDER": "DEBUG"}},
		{name: "TF_LOG_PATH alone: untouched", env: map[string]string{"TF_LOG_PATH": "/tmp/tf.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearTFLog(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			quietSDKLogs()
			for _, v := range sdkLogLevels {
				if got := os.Getenv(v); got != tt.want {
					t.Errorf("%s=%q, want %q", v, got, tt.want)
				}
			}
		})
	}
}

// clearTFLog unsets every TF_LOG* variable for the test and restores them.
func clearTFLog(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TF_LOG") {
			t.Setenv(k, v) // restores it after the test
			_ = os.Unsetenv(k)
		}
	}
	for _, v := range sdkLogLevels {
		t.Setenv(v, "")
		_ = os.Unsetenv(v)
	}
}

// TestLessGC: the provider collects less often unless GOGC or GOMEMLIMIT
// says how; a user's setting wins.
func TestLessGC(t *testing.T) {
	const sentinelPercent, sentinelLimit = 123, int64(7 << 30)
	tests := []struct {
		name        string
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{name: "neither set", wantPercent: 400, wantLimit: 1 << 30},
		{name: "GOGC set", env: map[string]string{"GOGC": "50"}, wantPercent: sentinelPercent, wantLimit: 1 << 30},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "2GiB"}, wantPercent: 400, wantLimit: sentinelLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
				t.Setenv(k, tt.env[k])
			}
			// The runtime read GOGC and GOMEMLIMIT at start: set sentinels
			// to see whether lessGC changes them, and put the old back.
			oldPercent := debug.SetGCPercent(sentinelPercent)
			oldLimit := debug.SetMemoryLimit(sentinelLimit)
			t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
			lessGC()
			if got := debug.SetGCPercent(sentinelPercent); got != tt.wantPercent {
				t.Errorf("GC percent = %d, want %d", got, tt.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != tt.wantLimit {
				t.Errorf("memory limit = %d, want %d", got, tt.wantLimit)
			}
		})
	}
}
