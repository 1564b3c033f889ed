package reconciler

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupMemoryLimit: the container's memory limit is read from cgroup
// v2 or v1, by the path /proc/self/cgroup names or at the mount's root (a
// cgroup namespace), and "no limit" in either form is none.
func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int64
		wantOK bool
	}{
		{"v2 in a cgroup namespace", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 268435456, true},
		{"v2 by path", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "134217728\n",
			"sys/fs/cgroup/memory.max":                  "max\n",
		}, 134217728, true},
		{"v2 without a limit", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0, false},
		{"v1 by path", map[string]string{
			"proc/self/cgroup": "12:cpu,cpuacct:/x\n4:memory:/kubepods/pod2\n0::/\n",
			"sys/fs/cgroup/memory/kubepods/pod2/memory.limit_in_bytes": "67108864\n",
		}, 67108864, true},
		{"v1 without a limit", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0, false},
		{"no cgroup file system", map[string]string{
			"proc/self/cgroup": "0::/\n",
		}, 0, false},
		{"garbage", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "lots\n",
		}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := cgroupMemoryLimit(root)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("cgroupMemoryLimit = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
