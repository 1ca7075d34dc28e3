package main

import "syscall"

// childProcAttr puts a child in its own process group (Ctrl-C reaches the
// demo only, which stops its children in order) and has the kernel send
// it SIGKILL if the demo dies without stopping it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
