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

package fairshare

import (
	"math"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const (
	cpu    = v1.ResourceCPU
	memory = v1.ResourceMemory
	gpu    = v1.ResourceName("nvidia.com/gpu")
)

func TestVectorAddSub(t *testing.T) {
	v := Vector{cpu: 1000, memory: 5}
	v.Add(Vector{cpu: 500, gpu: 2, "zero": 0})
	if want := (Vector{cpu: 1500, memory: 5, gpu: 2}); !reflect.DeepEqual(v, want) {
		t.Errorf("Add: got %v, want %v", v, want)
	}
	v.Sub(Vector{memory: 5, gpu: 3})
	if want := (Vector{cpu: 1500, gpu: -1}); !reflect.DeepEqual(v, want) {
		t.Errorf("Sub: got %v, want %v (zero amounts removed, negatives kept)", v, want)
	}

	v = Vector{cpu: math.MaxInt64 - 1, memory: math.MinInt64 + 1}
	v.Add(Vector{cpu: 10, memory: -10})
	if v[cpu] != math.MaxInt64 || v[memory] != math.MinInt64 {
		t.Errorf("Add does not saturate: %v", v)
	}
	v = Vector{cpu: -10, memory: 10}
	v.Sub(Vector{cpu: math.MaxInt64, memory: math.MinInt64})
	if v[cpu] != math.MinInt64 || v[memory] != math.MaxInt64 {
		t.Errorf("Sub does not saturate: %v", v)
	}

	var empty Vector
	empty.Add(Vector{cpu: 0}) // only zeros: no write to the nil map
	empty.Sub(nil)
}

func TestVectorClone(t *testing.T) {
	if Vector(nil).Clone() != nil {
		t.Error("the clone of nil is not nil")
	}
	v := Vector{cpu: 1}
	c := v.Clone()
	c[cpu] = 2
	if v[cpu] != 1 {
		t.Error("the clone shares memory with the original")
	}
}

func TestVectorLessEqual(t *testing.T) {
	for _, tc := range []struct {
		v, o Vector
		want bool
	}{
		{nil, nil, true},
		{Vector{cpu: 1}, nil, false},
		{nil, Vector{cpu: 1}, true},
		{nil, Vector{cpu: -1}, false},
		{Vector{cpu: 1, memory: 2}, Vector{cpu: 1, memory: 2}, true},
		{Vector{cpu: 1, memory: 3}, Vector{cpu: 5, memory: 2}, false},
		{Vector{cpu: 0}, Vector{memory: 1}, true},
		{Vector{cpu: -5}, Vector{}, true},
	} {
		if got := tc.v.LessEqual(tc.o); got != tc.want {
			t.Errorf("%v.LessEqual(%v) = %v, want %v", tc.v, tc.o, got, tc.want)
		}
	}
}

func TestDominantShare(t *testing.T) {
	for _, tc := range []struct {
		v, of Vector
		want  float64
	}{
		{nil, Vector{cpu: 10}, 0},
		{Vector{cpu: 0}, nil, 0},
		{Vector{cpu: 1000, memory: 4}, Vector{cpu: 9000, memory: 18}, 4.0 / 18},
		{Vector{cpu: 3000, memory: 1}, Vector{cpu: 9000, memory: 18}, 1.0 / 3},
		{Vector{cpu: 1, gpu: 1}, Vector{cpu: 10}, math.Inf(1)},
		{Vector{cpu: -4, memory: 1}, Vector{cpu: 1, memory: 4}, 0.25},
	} {
		if got := DominantShare(tc.v, tc.of); got != tc.want {
			t.Errorf("DominantShare(%v, %v) = %v, want %v", tc.v, tc.of, got, tc.want)
		}
	}
}

func TestVectorString(t *testing.T) {
	for _, tc := range []struct {
		v    Vector
		want string
	}{
		{nil, "0"},
		{Vector{cpu: 0}, "0"},
		{Vector{memory: 1024, cpu: 2500, gpu: 1, "pods": 0}, "cpu=2500m memory=1024 nvidia.com/gpu=1"},
		{Vector{"ephemeral-storage": -3}, "ephemeral-storage=-3"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestProportional(t *testing.T) {
	for _, tc := range []struct {
		vals  []int64
		total int64
		want  []int64
	}{
		{[]int64{1, 1, 1}, 10, []int64{3, 3, 3}},
		{[]int64{6000, 3000}, 6000, []int64{4000, 2000}},
		{[]int64{0, 0}, 100, []int64{0, 0}},
		{[]int64{5, 5}, 0, []int64{0, 0}},
		{[]int64{math.MaxInt64, math.MaxInt64}, math.MaxInt64, []int64{math.MaxInt64 / 2, math.MaxInt64 / 2}},
		// The sum does not fit in 64 bits: the values are shifted.
		{[]int64{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64}, 8, []int64{2, 2, 2, 2}},
		{[]int64{math.MaxInt64, math.MaxInt64, 1, 1}, 1000, []int64{500, 500, 0, 0}},
	} {
		got := make([]int64, len(tc.vals))
		proportional(tc.vals, tc.total, got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("proportional(%v, %d) = %v, want %v", tc.vals, tc.total, got, tc.want)
		}
	}
}
