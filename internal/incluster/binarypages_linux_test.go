package incluster

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestReadOnlyMappings: only the readable, non-writable mappings of the
// executable itself are released; its data and bss, anonymous memory and
// other files are not.
func TestReadOnlyMappings(t *testing.T) {
	const exe = "/app/terraform-provider-kmshealth"
	maps := strings.Join([]string{
		"00400000-01cb6000 r-xp 00000000 fd:00 1234 " + exe,
		"01cb6000-03843000 r--p 018b6000 fd:00 1234 " + exe,
		"03843000-03901000 rw-p 03443000 fd:00 1234 " + exe,
		"03901000-03a00000 rw-p 00000000 00:00 0 ",
		"7f0000000000-7f0000100000 r--p 00000000 fd:00 99 /usr/lib/other.so",
		"7f0000100000-7f0000200000 r--p 00000000 fd:00 98 /app/terraform-provider-kmshealth-report",
		"7ffc91a7f000-7ffc91aa0000 rw-p 00000000 00:00 0 [stack]",
		"7fc548b8e000-7fc548b90000 r-xp 00000000 00:00 0 [vdso]",
		"",
	}, "\n")
	got, err := readOnlyMappings([]byte(maps), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x00400000, 0x01cb6000}, {0x01cb6000, 0x03843000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readOnlyMappings = %x, want %x", got, want)
	}
	if _, err := readOnlyMappings([]byte("zz-01 r--p 0 fd:00 1 "+exe+"\n"), exe); err == nil {
		t.Error("readOnlyMappings accepted a bad address range")
	}
}

// TestReadOnlyMappingsKeepsPrivatePages: a read-only mapping of the
// executable that holds pages of its own (Anonymous: a RELRO segment the
// dynamic linker relocated, then made read-only) is never released; one
// whose pages are all the file's is, even while the page cache has not
// written them back (Private_Dirty, as for a binary just built).
func TestReadOnlyMappingsKeepsPrivatePages(t *testing.T) {
	const exe = "/usr/bin/terraform-provider-kmshealth"
	entry := func(r, perms string, fields ...string) string {
		return strings.Join(append([]string{r + " " + perms + " 00000000 fd:00 1234 " + exe}, fields...), "\n")
	}
	smaps := strings.Join([]string{
		entry("00400000-00500000", "r-xp", "Size: 1024 kB", "Private_Dirty:         0 kB", "Anonymous:             0 kB", "VmFlags: rd ex mr mw me dw"),
		entry("00500000-00600000", "r--p", "Private_Dirty:         8 kB", "Anonymous:             8 kB", "VmFlags: rd mr mw me dw"),
		entry("00600000-00700000", "r--p", "Private_Dirty:         0 kB", "Anonymous:             4 kB"),
		entry("00700000-00800000", "r--p", "Private_Dirty:       836 kB", "Anonymous:             0 kB"),
		entry("00800000-00900000", "r--p", "Private_Dirty:         0 kB", "Anonymous:             0 kB"),
		entry("00900000-00a00000", "rw-p", "Private_Dirty:         0 kB", "Anonymous:             0 kB"),
		"",
	}, "\n")
	got, err := readOnlyMappings([]byte(smaps), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x00400000, 0x00500000}, {0x00700000, 0x00800000}, {0x00800000, 0x00900000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readOnlyMappings = %x, want %x", got, want)
	}
}

// TestReleaseBinaryPages: in this test process, the executable's
// read-only pages leave the resident set, and the code keeps running (the
// pages still used are mapped again when touched).
func TestReleaseBinaryPages(t *testing.T) {
	before := rssFileKiB(t)
	n, err := ReleaseBinaryPages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	if n <= 0 {
		t.Fatalf("ReleaseBinaryPages released %d bytes of mappings", n)
	}
	if after >= before {
		t.Errorf("RssFile %d KiB before, %d KiB after releasing %d bytes of mappings: want less", before, after, n)
	}
	// Code and read-only data still work: the released pages fault back in.
	if _, err := readOnlyMappings([]byte("00400000-00401000 r-xp 0 fd:00 1 /x\n"), "/x"); err != nil {
		t.Fatal(err)
	}
	t.Logf("RssFile %d KiB -> %d KiB (%d MiB of mappings released)", before, after, n>>20)
}

func rssFileKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
