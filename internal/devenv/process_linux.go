package devenv

import "syscall"

// ChildAttr makes a child process die with whoever started it, so a demo or
// a test killed hard leaves nothing running.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
