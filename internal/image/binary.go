package image

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// CheckBinary checks that b can be the image's binary for arch: a linux
// ELF executable for that architecture, statically linked (the image has no
// dynamic loader and no libc: build with CGO_ENABLED=0).
func CheckBinary(b []byte, arch string) error {
	if err := checkArch(arch); err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("binary is not an ELF executable: build it with GOOS=linux: %w", err)
	}
	defer func() { _ = f.Close() }()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		return fmt.Errorf("binary is for machine %v, not %s: build it with GOARCH=%s", f.Machine, arch, arch)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("binary is an ELF %v, not an executable", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary is dynamically linked (it asks for a program interpreter): build it with CGO_ENABLED=0")
		}
	}
	return nil
}
