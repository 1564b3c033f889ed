package reconciler

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitShare is the part of its container's memory limit the
// reconciler gives the Go runtime as its soft limit (GOMEMLIMIT) unless
// the environment sets one: the collector then works harder as the heap
// nears the limit instead of the container being killed at it, and the
// rest is left to what the limit counts beside the runtime's memory (the
// binary's file pages charged to the container).
const memoryLimitShare = 0.9

// noLimit is what cgroup v1 reports for a memory cgroup without a limit
// (the largest page-aligned int64); anything at or above it is none.
const noLimit = 1 << 62

// limitMemory sets the runtime's soft memory limit from the container's
// cgroup memory limit, unless GOMEMLIMIT is set or there is no limit, and
// returns the limit it set (0 for none).
func limitMemory(root string) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, ok := cgroupMemoryLimit(root)
	if !ok {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// cgroupMemoryLimit reads this process's memory cgroup limit under root
// (the file system root, "/" but in tests): cgroup v2's memory.max or
// cgroup v1's memory.limit_in_bytes, of the cgroup /proc/self/cgroup
// names or, in a container's own cgroup namespace, of the mount's root.
// ok is false when there is no limit or none can be read.
func cgroupMemoryLimit(root string) (limit int64, ok bool) {
	var candidates []string
	self, _ := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	for line := range strings.SplitSeq(strings.TrimSpace(string(self)), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			candidates = append(candidates, filepath.Join(root, "sys/fs/cgroup", parts[2], "memory.max"))
		case containsController(parts[1], "memory"):
			candidates = append(candidates, filepath.Join(root, "sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
		}
	}
	candidates = append(candidates,
		filepath.Join(root, "sys/fs/cgroup/memory.max"),
		filepath.Join(root, "sys/fs/cgroup/memory/memory.limit_in_bytes"))
	for _, name := range candidates {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		limit, err := parseMemoryLimit(string(b))
		if err != nil {
			continue
		}
		return limit, limit > 0
	}
	return 0, false
}

func containsController(list, c string) bool {
	for f := range strings.SplitSeq(list, ",") {
		if f == c {
			return true
		}
	}
	return false
}

// parseMemoryLimit parses a memory.max or memory.limit_in_bytes file: a
// number of bytes, or "max"; 0 means no limit.
func parseMemoryLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memory limit %q: not a number of bytes", s)
	}
	if n >= noLimit {
		return 0, nil
	}
	return n, nil
}
