package harness

import "syscall"

// childProcAttr puts a child in its own process group (Ctrl-C reaches the parent
// parent only, which stops its children in order) and has the kernel send
// it SIGKILL if the parent dies without stopping it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
