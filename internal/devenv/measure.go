package devenv

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StatusMiB reads one kB field of /proc/<pid>/status (VmRSS, RssAnon,
// RssFile) in MiB.
func StatusMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// RSS describes a process's resident memory: total, anonymous (heap,
// stacks) and file-backed (mostly the binary's own pages).
func RSS(pid int) (string, error) {
	var parts []string
	for _, f := range []string{"VmRSS", "RssAnon", "RssFile"} {
		v, err := StatusMiB(pid, f)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MiB", f, v))
	}
	return strings.Join(parts, ", "), nil
}

// Latencies are timings of one repeated operation.
type Latencies []time.Duration

// Percentile returns the p-th percentile (nearest rank).
func (l Latencies) Percentile(p int) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// Summary is "p50 x ms  p99 y ms  max z ms".
func (l Latencies) Summary() string {
	return fmt.Sprintf("p50 %s  p99 %s  max %s", Millis(l.Percentile(50)), Millis(l.Percentile(99)), Millis(l.Percentile(100)))
}

// Millis formats d in milliseconds with one decimal (three below 1 ms).
func Millis(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.3f ms", float64(d.Nanoseconds())/1e6)
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
