/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package benchmark

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes is CPU time (user + system) by process: "kube-apiserver",
// "etcd" and "self". Missing entries could not be read (not Linux, or the
// process is gone).
type cpuTimes map[string]time.Duration

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	out := cpuTimes{}
	for k, v := range c {
		if ov, ok := o[k]; ok {
			out[k] = v - ov
		}
	}
	return out
}

func (c cpuTimes) fmt(name string) string {
	v, ok := c[name]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", v.Seconds())
}

// userHZ is the unit of the times in /proc/PID/stat: USER_HZ, 100 on every
// Linux architecture Go supports.
const userHZ = 100

// controlPlaneProcesses finds the children of this process named etcd and
// kube-apiserver (envtest starts them with exec), by name → pid. It returns
// an empty map where /proc is not available.
func controlPlaneProcesses() map[string]int {
	out := map[string]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, _, err := procStat(pid)
		if err != nil || ppid != self {
			continue
		}
		if comm == "etcd" || comm == "kube-apiserver" {
			out[comm] = pid
		}
	}
	return out
}

// procStat reads the name, parent and CPU time of pid from /proc/PID/stat.
func procStat(pid int) (comm string, ppid int, cpu time.Duration, err error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, 0, err
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	comm = s[open+1 : closing]
	// After "(comm) ": state ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime ...
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 13 {
		return "", 0, 0, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(fields))
	}
	ppid, _ = strconv.Atoi(fields[1])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	cpu = time.Duration(utime+stime) * time.Second / userHZ
	return comm, ppid, cpu, nil
}

// readCPU returns the CPU time used so far by the control plane processes
// and by this process.
func readCPU(procs map[string]int) cpuTimes {
	out := cpuTimes{}
	for name, pid := range procs {
		if _, _, cpu, err := procStat(pid); err == nil {
			out[name] = cpu
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		out["self"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return out
}
