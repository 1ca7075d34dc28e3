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

package resources

import (
	"math"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want Resource
	}{
		{"containers add up", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}).
			Container("b", map[v1.ResourceName]string{"cpu": "250m", "nvidia.com/gpu": "1"}).Obj(),
			Resource{MilliCPU: 750, Memory: 1 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{"nvidia.com/gpu": 1}}},
		{"a larger init container wins", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m"}).
			InitReq(map[v1.ResourceName]string{"cpu": "2"}).Obj(),
			Resource{MilliCPU: 2000, Pods: 1}},
		{"sidecars run alongside", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m"}).
			SidecarReq(map[v1.ResourceName]string{"cpu": "100m"}).Obj(),
			Resource{MilliCPU: 600, Pods: 1}},
		{"overhead counts", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m"}).
			Overhead(map[v1.ResourceName]string{"cpu": "50m", "memory": "64Mi"}).Obj(),
			Resource{MilliCPU: 550, Memory: 64 << 20, Pods: 1}},
		{"no requests is one pod", st.MakePod().Obj(), Resource{Pods: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodRequests(tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PodRequests = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	node := FromList(st.MakeNode().Capacity(map[v1.ResourceName]string{"cpu": "2", "memory": "4Gi", "pods": "3", "ephemeral-storage": "10Gi", "example.com/fpga": "2"}).Obj().Status.Allocatable)
	req := Resource{MilliCPU: 1500, Memory: 1 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{"example.com/fpga": 1}}
	if got := node.Insufficient(req); len(got) != 0 || !node.Fits(req) {
		t.Fatalf("Insufficient = %v, want none", got)
	}
	idle := node.Clone()
	idle.Sub(req)
	if idle.MilliCPU != 500 || idle.Scalar["example.com/fpga"] != 1 || node.Scalar["example.com/fpga"] != 2 {
		t.Fatalf("Sub/Clone wrong: idle %+v node %+v", idle, node)
	}
	want := []v1.ResourceName{v1.ResourceCPU, "example.com/fpga", "example.com/zzz"}
	req2 := Resource{MilliCPU: 600, Scalar: map[v1.ResourceName]int64{"example.com/zzz": 1, "example.com/fpga": 2}}
	if got := idle.Insufficient(req2); !reflect.DeepEqual(got, want) {
		t.Errorf("Insufficient = %v, want %v (CPU first, then scalars sorted)", got, want)
	}
	idle.Add(req)
	if !reflect.DeepEqual(idle, node) {
		t.Errorf("Add after Sub = %+v, want %+v", idle, node)
	}
	var zero Resource
	if !zero.IsZero() || node.IsZero() || (Resource{Scalar: map[v1.ResourceName]int64{"x": 1}}).IsZero() {
		t.Error("IsZero wrong")
	}
	if s := (Resource{MilliCPU: 1500, Memory: 2 << 30, Pods: 3, Scalar: map[v1.ResourceName]int64{"b": 2, "a": 1}}).String(); s != "cpu=1500m memory=2Gi pods=3 a=1 b=2" {
		t.Errorf("String = %q", s)
	}
	if (Resource{Pods: 2}).Fits(Resource{Pods: 3}) {
		t.Error("pod count is not checked")
	}
	overcommitted := Resource{MilliCPU: -500, Memory: 1 << 30, Pods: 5}
	if got := overcommitted.Insufficient(Resource{Memory: 1 << 20, Pods: 1}); len(got) != 0 {
		t.Errorf("a pod requesting no cpu is rejected on a cpu-overcommitted node: %v", got)
	}
	if got := overcommitted.Insufficient(Resource{MilliCPU: 1, Pods: 1}); len(got) != 1 || got[0] != v1.ResourceCPU {
		t.Errorf("Insufficient = %v, want [cpu]", got)
	}
}

func TestToListRoundTrips(t *testing.T) {
	for _, rl := range []v1.ResourceList{
		{},
		{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("3Gi")},
		{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"), "nvidia.com/gpu": resource.MustParse("4")},
	} {
		r := FromList(rl)
		back := r.ToList()
		if len(back) != len(rl) {
			t.Errorf("FromList(%v).ToList() = %v: %d names, want %d", rl, back, len(back), len(rl))
		}
		for name, q := range rl {
			if got := back[name]; got.Cmp(q) != 0 {
				t.Errorf("%s: got %s, want %s", name, got.String(), q.String())
			}
		}
		if again := FromList(back); again.String() != r.String() {
			t.Errorf("round trip changed %s into %s", r, again)
		}
	}
}

func TestSaturatingConversions(t *testing.T) {
	tests := []struct {
		in       string
		milli, v int64
	}{
		{"1", 1000, 1},
		{"500m", 500, 1},
		{"9223372036854775807", math.MaxInt64, math.MaxInt64},
		{"1e30", math.MaxInt64, math.MaxInt64},
		{"9223372036854776", math.MaxInt64, 9223372036854776},
		{"9223372036854775", 9223372036854775000, 9223372036854775},
		{"-1e30", math.MinInt64, math.MinInt64},
		{"8Ei", math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		q := resource.MustParse(tt.in)
		if got := MilliValue(q); got != tt.milli {
			t.Errorf("MilliValue(%s) = %d, want %d", tt.in, got, tt.milli)
		}
		if got := Value(q); got != tt.v {
			t.Errorf("Value(%s) = %d, want %d", tt.in, got, tt.v)
		}
	}
	r := FromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse("1e30"), v1.ResourceMemory: resource.MustParse("1e30")})
	r.Sub(PodRequests(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}}}))
	if r.MilliCPU != math.MaxInt64-1000 || r.Memory != math.MaxInt64 {
		t.Errorf("1e30 cpu and memory less a 1-cpu pod = %v, want MaxInt64-1000m and MaxInt64", r)
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	for _, tt := range []struct{ a, b, sum, diff int64 }{
		{1, 2, 3, -1},
		{maxI, 1, maxI, maxI - 1},
		{maxI, maxI, maxI, 0},
		{minI, -1, minI, minI + 1},
		{minI, 1, minI + 1, minI},
		{0, minI, minI, maxI},
		{-1, maxI, maxI - 1, minI},
	} {
		if got := AddSat(tt.a, tt.b); got != tt.sum {
			t.Errorf("AddSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.sum)
		}
		if got := SubSat(tt.a, tt.b); got != tt.diff {
			t.Errorf("SubSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.diff)
		}
	}
	for _, tt := range []struct{ part, whole, want int64 }{
		{1, 4, 25}, {0, 4, 0}, {4, 4, 100}, {5, 4, 100}, {-1, 4, 0}, {1, 0, 0},
		{maxI, maxI, 100}, {maxI / 2, maxI, 49}, {1, maxI, 0},
	} {
		if got := Share(tt.part, tt.whole, 100); got != tt.want {
			t.Errorf("Share(%d, %d, 100) = %d, want %d", tt.part, tt.whole, got, tt.want)
		}
	}
}

func TestAnyLess(t *testing.T) {
	gpu := v1.ResourceName("example.com/gpu")
	tests := []struct {
		name string
		r, o Resource
		want bool
	}{
		{"equal", Resource{MilliCPU: 1000, Memory: 5}, Resource{MilliCPU: 1000, Memory: 5}, false},
		{"more of everything", Resource{MilliCPU: 2000, Memory: 6}, Resource{MilliCPU: 1000, Memory: 5}, false},
		{"less cpu", Resource{MilliCPU: 500, Memory: 6}, Resource{MilliCPU: 1000, Memory: 5}, true},
		{"less pods", Resource{Pods: 1}, Resource{Pods: 2}, true},
		{"a scalar r lacks", Resource{MilliCPU: 1}, Resource{Scalar: map[v1.ResourceName]int64{gpu: 1}}, true},
		{"a scalar o lacks", Resource{Scalar: map[v1.ResourceName]int64{gpu: 1}}, Resource{}, false},
		{"negative amounts", Resource{MilliCPU: -1}, Resource{}, true},
	}
	for _, tt := range tests {
		if got := tt.r.AnyLess(tt.o); got != tt.want {
			t.Errorf("%s: %v.AnyLess(%v) = %v, want %v", tt.name, tt.r, tt.o, got, tt.want)
		}
	}
}
