//go:build !linux

package harness

import "syscall"

// childProcAttr puts a child in its own process group: Ctrl-C reaches the parent
// parent only, which stops its children in order.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
