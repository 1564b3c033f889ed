//go:build !linux

package devenv

import "syscall"

// ChildAttr: only Linux has a parent-death signal. The child stays in its
// parent's process group, so Ctrl-C in a terminal reaches it too; Stop ends
// it on every other path.
func ChildAttr() *syscall.SysProcAttr { return nil }
