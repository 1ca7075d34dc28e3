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

package app

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// DefaultMemoryLimitRatio is the default of --memory-limit-ratio.
const DefaultMemoryLimitRatio = 0.9

// memoryLimitEnv is the Go runtime's own setting of the soft memory
// limit. When it is set, the runtime has applied it before main, and
// --memory-limit-ratio leaves it alone.
const memoryLimitEnv = "GOMEMLIMIT"

// cgroupUnlimited is where a cgroup v1 memory limit stops meaning
// anything: an unlimited v1 cgroup reports the largest page-aligned
// int64 (about 2^63), and no machine has 2^62 bytes.
const cgroupUnlimited = int64(1) << 62

// validateMemoryLimitRatio checks --memory-limit-ratio: 0 (off) or a
// fraction of the container's limit above 0 and at most 1.
func validateMemoryLimitRatio(r float64) error {
	if math.IsNaN(r) || r < 0 || r > 1 {
		return fmt.Errorf("--memory-limit-ratio must be 0 (off) or a fraction above 0 and at most 1, got %v", r)
	}
	return nil
}

// memoryLimitDecision is what applyMemoryLimit does: set the runtime's
// soft limit to Limit bytes (0: leave it), and why.
type memoryLimitDecision struct {
	Limit  int64
	Reason string
}

// decideMemoryLimit returns the soft memory limit for ratio of the
// container's memory limit cgroupLimit (0: none found), unless the
// GOMEMLIMIT environment variable (env) is set or ratio is 0.
func decideMemoryLimit(ratio float64, env string, cgroupLimit int64, from string) memoryLimitDecision {
	switch {
	case env != "":
		return memoryLimitDecision{Reason: memoryLimitEnv + "=" + env + " is set; the runtime applied it"}
	case ratio == 0:
		return memoryLimitDecision{Reason: "--memory-limit-ratio is 0"}
	case cgroupLimit <= 0:
		return memoryLimitDecision{Reason: "no cgroup memory limit found"}
	}
	return memoryLimitDecision{Limit: int64(ratio * float64(cgroupLimit)),
		Reason: fmt.Sprintf("%v of the cgroup memory limit %d bytes (%s)", ratio, cgroupLimit, from)}
}

// applyMemoryLimit sets the Go runtime's soft memory limit from the
// container's memory limit (see --memory-limit-ratio) and logs what it
// did. Without a limit the garbage collector lets the heap grow to twice
// what is live (GOGC=100), whatever the container allows; with one it
// collects earlier as the heap nears the limit, instead of the process
// being killed for memory.
func applyMemoryLimit(ratio float64) {
	env := os.Getenv(memoryLimitEnv)
	self := ""
	if env == "" && ratio > 0 {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			klog.ErrorS(err, "Could not read the process's cgroups; leaving the Go runtime's soft memory limit unset")
			return
		}
		self = string(b)
	}
	d, err := applyMemoryLimitFrom(ratio, env, self, os.DirFS("/sys/fs/cgroup"))
	if err != nil {
		klog.ErrorS(err, "Could not read the container's memory limit; leaving the Go runtime's soft memory limit unset")
		return
	}
	klog.InfoS("Go runtime soft memory limit", "limitBytes", debug.SetMemoryLimit(-1), "reason", d.Reason)
}

// applyMemoryLimitFrom is applyMemoryLimit with its inputs given: the
// GOMEMLIMIT environment variable, /proc/self/cgroup and the cgroup file
// system. It sets the runtime's limit when the decision has one.
func applyMemoryLimitFrom(ratio float64, env, self string, cgroupfs fs.FS) (memoryLimitDecision, error) {
	var limit int64
	var from string
	if env == "" && ratio > 0 {
		var err error
		if limit, from, err = cgroupMemoryLimit(cgroupfs, self); err != nil {
			return memoryLimitDecision{}, err
		}
	}
	d := decideMemoryLimit(ratio, env, limit, from)
	if d.Limit > 0 {
		debug.SetMemoryLimit(d.Limit)
	}
	return d, nil
}

// cgroupMemoryLimit returns the smallest memory limit of the cgroups the
// process is in and of their ancestors, as cgroupfs (the file system
// mounted at /sys/fs/cgroup) shows them, and the file it is read from;
// 0 when there is none. self is /proc/self/cgroup. A cgroup v1 memory
// controller is read (memory/<path>/memory.limit_in_bytes) when
// self names one; otherwise the unified hierarchy (<path>/memory.max).
// Each level of the path is read up to the root of the mount; levels
// whose file is missing (not mounted in a container, or the host's root)
// are skipped.
func cgroupMemoryLimit(cgroupfs fs.FS, self string) (limit int64, from string, err error) {
	dir, file, v1 := "", "", false
	sc := bufio.NewScanner(strings.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "" && !v1:
			dir, file = parts[2], "memory.max"
		case hasController(parts[1], "memory"):
			dir, file, v1 = path.Join("memory", parts[2]), "memory.limit_in_bytes", true
		}
	}
	if file == "" {
		return 0, "", nil
	}
	root := "."
	if v1 {
		root = "memory"
	}
	dir = strings.TrimPrefix(path.Clean("/"+dir), "/")
	for {
		if dir == "" {
			dir = "."
		}
		name := path.Join(dir, file)
		n, ok, err := readCgroupLimit(cgroupfs, name)
		if err != nil {
			return 0, "", err
		}
		if ok && (limit == 0 || n < limit) {
			limit, from = n, path.Join("/sys/fs/cgroup", name)
		}
		if dir == root || dir == "." {
			return limit, from, nil
		}
		dir = path.Dir(dir)
	}
}

// hasController reports whether the comma-separated list names c.
func hasController(list, c string) bool {
	for _, name := range strings.Split(list, ",") {
		if name == c {
			return true
		}
	}
	return false
}

// readCgroupLimit reads one memory limit file: ok false when the file is
// missing or says there is no limit ("max", or a v1 value past
// cgroupUnlimited).
func readCgroupLimit(cgroupfs fs.FS, name string) (int64, bool, error) {
	b, err := fs.ReadFile(cgroupfs, name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading cgroup memory limit %s: %w", name, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false, fmt.Errorf("reading cgroup memory limit %s: %q is not a positive number of bytes", name, s)
	}
	return n, n < cgroupUnlimited, nil
}
