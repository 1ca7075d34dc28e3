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
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

func cgroupFile(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s + "\n")} }

// The container's memory limit is the smallest limit of the process's
// cgroup and its ancestors, in the unified hierarchy or, when the process
// is in a cgroup v1 memory controller, there.
func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		self      string
		files     fstest.MapFS
		want      int64
		wantFrom  string
		wantError string
	}{
		{name: "v2, cgroup namespace", self: "0::/",
			files: fstest.MapFS{"memory.max": cgroupFile("536870912")}, want: 536870912, wantFrom: "/sys/fs/cgroup/memory.max"},
		{name: "v2, no limit", self: "0::/", files: fstest.MapFS{"memory.max": cgroupFile("max")}},
		{name: "v2, the pod's limit is below the container's none", self: "0::/kubepods/pod1/ctr",
			files: fstest.MapFS{
				"kubepods/pod1/ctr/memory.max": cgroupFile("max"),
				"kubepods/pod1/memory.max":     cgroupFile("1073741824"),
				"kubepods/memory.max":          cgroupFile("2147483648"),
			}, want: 1073741824, wantFrom: "/sys/fs/cgroup/kubepods/pod1/memory.max"},
		{name: "v2, host path not mounted: the mount's root", self: "0::/kubepods/pod1/ctr",
			files: fstest.MapFS{"memory.max": cgroupFile("400000000")}, want: 400000000, wantFrom: "/sys/fs/cgroup/memory.max"},
		{name: "v2, host root: no file", self: "0::/", files: fstest.MapFS{}},
		{name: "v1 memory controller wins over the unified hierarchy", self: "4:memory:/process_api/x\n0::/",
			files: fstest.MapFS{
				"memory/process_api/x/memory.limit_in_bytes": cgroupFile("268435456"),
				"memory.max": cgroupFile("1000"),
			}, want: 268435456, wantFrom: "/sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes"},
		{name: "v1, controllers mounted together", self: "5:cpu,memory:/a",
			files: fstest.MapFS{"memory/a/memory.limit_in_bytes": cgroupFile("300000000")}, want: 300000000, wantFrom: "/sys/fs/cgroup/memory/a/memory.limit_in_bytes"},
		{name: "v1, unlimited", self: "4:memory:/",
			files: fstest.MapFS{"memory/memory.limit_in_bytes": cgroupFile("9223372036854771712")}},
		{name: "no memory controller", self: "3:cpu:/a", files: fstest.MapFS{"memory.max": cgroupFile("1000")}},
		{name: "garbage", self: "0::/", files: fstest.MapFS{"memory.max": cgroupFile("lots")}, wantError: `memory.max: "lots" is not a positive number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := cgroupMemoryLimit(tc.files, tc.self+"\n")
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil || got != tc.want || from != tc.wantFrom {
				t.Errorf("cgroupMemoryLimit = %d, %q, %v; want %d, %q", got, from, err, tc.want, tc.wantFrom)
			}
		})
	}
}

func TestDecideMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ratio  float64
		env    string
		limit  int64
		want   int64
		reason string
	}{
		{"a fraction of the limit", 0.9, "", 1000, 900, "0.9 of the cgroup memory limit 1000 bytes"},
		{"GOMEMLIMIT wins", 0.9, "400MiB", 1000, 0, "GOMEMLIMIT=400MiB is set"},
		{"off", 0, "", 1000, 0, "--memory-limit-ratio is 0"},
		{"no limit", 0.9, "", 0, 0, "no cgroup memory limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideMemoryLimit(tc.ratio, tc.env, tc.limit, "f")
			if d.Limit != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("decideMemoryLimit = %+v, want limit %d and a reason containing %q", d, tc.want, tc.reason)
			}
		})
	}
}

// The runtime's limit is set from the container's, and left alone when
// GOMEMLIMIT is set or there is no limit.
func TestApplyMemoryLimitFrom(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	const untouched = int64(1) << 50
	files := fstest.MapFS{"memory.max": cgroupFile("2000000000")}
	for _, tc := range []struct {
		name  string
		ratio float64
		env   string
		files fstest.MapFS
		want  int64
	}{
		{"set", 0.5, "", files, 1000000000},
		{"GOMEMLIMIT set", 0.5, "1GiB", files, untouched},
		{"off", 0, "", files, untouched},
		{"no limit", 0.5, "", fstest.MapFS{"memory.max": cgroupFile("max")}, untouched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(untouched)
			if _, err := applyMemoryLimitFrom(tc.ratio, tc.env, "0::/\n", tc.files); err != nil {
				t.Fatal(err)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("runtime memory limit %d, want %d", got, tc.want)
			}
		})
	}
	debug.SetMemoryLimit(untouched)
	if _, err := applyMemoryLimitFrom(0.5, "", "0::/\n", fstest.MapFS{"memory.max": cgroupFile("-1")}); err == nil {
		t.Errorf("a broken limit file was not reported")
	}
	if got := debug.SetMemoryLimit(-1); got != untouched {
		t.Errorf("runtime memory limit %d after an error, want it untouched", got)
	}
}

func TestValidateMemoryLimitRatio(t *testing.T) {
	for _, r := range []float64{0, 0.5, 1} {
		if err := validateMemoryLimitRatio(r); err != nil {
			t.Errorf("ratio %v: %v", r, err)
		}
	}
	for _, r := range []float64{-0.1, 1.5, math.NaN()} {
		if err := validateMemoryLimitRatio(r); err == nil || !strings.Contains(err.Error(), "--memory-limit-ratio") {
			t.Errorf("ratio %v: error %v, want one naming the flag", r, err)
		}
	}
	o := NewOptions()
	o.MemoryLimitRatio = 2
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--memory-limit-ratio") {
		t.Errorf("Validate with ratio 2: %v, want an error naming the flag", err)
	}
}
