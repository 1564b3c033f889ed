package incluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ReleaseBinaryPages unmaps from this process the pages of its own
// executable's read-only segments (code, read-only data, the runtime's
// line tables) and returns how many bytes of mappings it released. The
// file stays in the page cache; the pages still in use are mapped again
// at their next touch, by a minor fault. What it drops is what only
// package initialisation and the first lists touched: the kernel maps a
// file's pages in large blocks (its fault-around window, or a whole
// large folio) around every page touched, so initialising a thousand
// packages leaves most of a 50 MB binary mapped (RssFile) for the life
// of the process, and mapped file pages count in the process's resident
// set and, while referenced, in its container's working set
// (BENCHMARKS.md "Reconciler memory at 1,000 kept").
//
// Writable mappings (data, bss) are never touched: only mappings of the
// executable without write permission that hold no private page. A
// read-only mapping can still hold private pages: the dynamic linker
// writes relocations into a RELRO segment (a PIE or externally linked
// build, as distributions build Go programs) before making it read-only,
// and MADV_DONTNEED would drop them, so the next read would see the
// file's unrelocated bytes. Such a page is a private copy of the file's,
// counted as Anonymous in /proc/self/smaps: a mapping with any is left
// alone (on the image's static build none has one). Private_Dirty says
// nothing here: it also counts the file's own pages while the page cache
// has not yet written them back, as for a binary just built.
func ReleaseBinaryPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("release the binary's pages: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("release the binary's pages: %w", err)
	}
	ranges, err := readOnlyMappings(smaps, exe)
	if err != nil {
		return 0, fmt.Errorf("release the binary's pages: %w", err)
	}
	var released int64
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.start, r.end-r.start, syscall.MADV_DONTNEED); errno != 0 {
			err = errors.Join(err, fmt.Errorf("madvise %#x-%#x: %w", r.start, r.end, errno))
			continue
		}
		released += int64(r.end - r.start)
	}
	if err != nil {
		return released, fmt.Errorf("release the binary's pages: %w", err)
	}
	return released, nil
}

// mapping is an address range of /proc/self/maps.
type mapping struct{ start, end uintptr }

// readOnlyMappings returns the ranges of smaps (the text of
// /proc/self/smaps, or of /proc/self/maps, which has no fields) that map
// file path readable and not writable and, where smaps says so, hold no
// anonymous page (a private copy of the file's, such as a relocation).
func readOnlyMappings(smaps []byte, path string) ([]mapping, error) {
	var out []mapping
	var cur *mapping // the candidate whose fields are being read
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if name, ok := strings.CutSuffix(f[0], ":"); ok && !strings.Contains(name, "-") {
			// A field of the mapping above: "Anonymous:  12 kB".
			if cur != nil && name == "Anonymous" && (len(f) < 2 || f[1] != "0") {
				cur = nil // it holds pages of its own: releasing them would lose them
			}
			continue
		}
		// A mapping: start-end perms offset dev inode path
		flush()
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		perms := f[1]
		if len(perms) < 2 || perms[0] != 'r' || perms[1] != '-' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("a line of /proc/self/smaps without an address range: %q", line)
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err := errors.Join(err1, err2); err != nil || end <= start {
			return nil, fmt.Errorf("a line of /proc/self/smaps with a bad address range: %q", line)
		}
		cur = &mapping{uintptr(start), uintptr(end)}
	}
	flush()
	return out, sc.Err()
}
