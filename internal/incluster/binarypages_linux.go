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
// executable without write permission, to which a process never writes,
// so MADV_DONTNEED loses nothing.
func ReleaseBinaryPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("release the binary's pages: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("release the binary's pages: %w", err)
	}
	ranges, err := readOnlyMappings(maps, exe)
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

// readOnlyMappings returns the ranges of maps (the text of
// /proc/self/maps) that map file path readable and not writable.
func readOnlyMappings(maps []byte, path string) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		perms := f[1]
		if len(perms) < 2 || perms[0] != 'r' || perms[1] != '-' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("a line of /proc/self/maps without an address range: %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err := errors.Join(err1, err2); err != nil || end <= start {
			return nil, fmt.Errorf("a line of /proc/self/maps with a bad address range: %q", sc.Text())
		}
		out = append(out, mapping{uintptr(start), uintptr(end)})
	}
	return out, sc.Err()
}
