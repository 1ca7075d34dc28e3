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

// Package resources is the scheduler's compact resource arithmetic. A
// Resource holds the quantities the scheduler accounts per node (CPU in
// millicores, memory and ephemeral storage in bytes, a pod count, and any
// extended or scalar resource by name) as plain integers, so that adding a
// pod to a node is a handful of integer operations instead of
// resource.Quantity math.
//
// Pod requests are computed by k8s.io/component-helpers, which includes
// init containers, restartable (sidecar) init containers and pod overhead.
package resources

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resource is a set of resource amounts. The zero value is empty and ready to
// use. Scalar holds every resource other than CPU, memory, ephemeral storage
// and pods (extended resources, hugepages, ...); it is nil until needed.
type Resource struct {
	MilliCPU         int64 `json:"milliCPU"`
	Memory           int64 `json:"memory"`
	EphemeralStorage int64 `json:"ephemeralStorage,omitempty"`
	// Pods is a count of pods: a node's allocatable "pods", or 1 per pod.
	Pods   int64                     `json:"pods"`
	Scalar map[v1.ResourceName]int64 `json:"scalar,omitempty"`
}

// FromList converts a ResourceList. CPU is taken in millicores, everything
// else in its base unit.
func FromList(rl v1.ResourceList) Resource {
	var r Resource
	for name, q := range rl {
		r.set(name, q)
	}
	return r
}

// ToList converts r back to a ResourceList, leaving out zero amounts. CPU
// is written in millicores, memory and storage as binary-SI byte counts,
// everything else as a plain count; FromList(r.ToList()) equals r.
func (r Resource) ToList() v1.ResourceList {
	l := v1.ResourceList{}
	put := func(name v1.ResourceName, q *resource.Quantity) {
		if !q.IsZero() {
			l[name] = *q
		}
	}
	put(v1.ResourceCPU, resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI))
	put(v1.ResourceMemory, resource.NewQuantity(r.Memory, resource.BinarySI))
	put(v1.ResourceEphemeralStorage, resource.NewQuantity(r.EphemeralStorage, resource.BinarySI))
	put(v1.ResourcePods, resource.NewQuantity(r.Pods, resource.DecimalSI))
	for name, v := range r.Scalar {
		put(name, resource.NewQuantity(v, resource.DecimalSI))
	}
	return l
}

func (r *Resource) set(name v1.ResourceName, q resource.Quantity) {
	switch name {
	case v1.ResourceCPU:
		r.MilliCPU = MilliValue(q)
	case v1.ResourceMemory:
		r.Memory = Value(q)
	case v1.ResourceEphemeralStorage:
		r.EphemeralStorage = Value(q)
	case v1.ResourcePods:
		r.Pods = Value(q)
	default:
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] = Value(q)
	}
}

// The largest and smallest quantities an int64 holds, in base units and
// in thousandths.
var (
	maxValue      = resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
	minValue      = resource.NewQuantity(math.MinInt64, resource.DecimalSI)
	maxMilliValue = resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
	minMilliValue = resource.NewMilliQuantity(math.MinInt64, resource.DecimalSI)
)

// Value returns q in base units (rounded up), saturated to the int64
// range: a node that reports 1e30 bytes has math.MaxInt64, not a wrapped
// negative amount. resource.Quantity.Value overflows silently there.
func Value(q resource.Quantity) int64 {
	switch {
	case q.Cmp(*maxValue) >= 0:
		return math.MaxInt64
	case q.Cmp(*minValue) <= 0:
		return math.MinInt64
	}
	return q.Value()
}

// MilliValue returns q in thousandths (rounded up), saturated to the
// int64 range: cpu: 1e30, or 2^63-1 cores, is math.MaxInt64 millicores.
// resource.Quantity.MilliValue overflows silently beyond about 9.2e15
// cores.
func MilliValue(q resource.Quantity) int64 {
	switch {
	case q.Cmp(*maxMilliValue) >= 0:
		return math.MaxInt64
	case q.Cmp(*minMilliValue) <= 0:
		return math.MinInt64
	}
	return q.MilliValue()
}

// AddSat returns a+b, saturated to the int64 range instead of wrapping.
func AddSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// SubSat returns a-b, saturated to the int64 range instead of wrapping.
func SubSat(a, b int64) int64 {
	d := a - b
	switch {
	case a >= 0 && b < 0 && d < 0:
		return math.MaxInt64
	case a < 0 && b > 0 && d >= 0:
		return math.MinInt64
	}
	return d
}

// Share returns part*scale/whole, rounded down, without overflowing for
// any 0 <= part <= whole and 0 < whole: a score of 0..scale of how much
// of whole part is. Out-of-range arguments are clamped into that range.
func Share(part, whole, scale int64) int64 {
	if whole <= 0 || scale <= 0 {
		return 0
	}
	part = min(max(part, 0), whole)
	hi, lo := bits.Mul64(uint64(part), uint64(scale))
	// part <= whole, so the quotient is at most scale and hi < whole.
	q, _ := bits.Div64(hi, lo, uint64(whole))
	return int64(q)
}

// PodRequests returns what pod requests, as the kubelet and kube-scheduler
// account it (init containers, sidecars and overhead included), plus one
// pod.
func PodRequests(pod *v1.Pod) Resource {
	r := FromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	r.Pods = 1
	return r
}

// Add adds o to r. Sums saturate at the int64 range instead of
// wrapping (a node reporting 2^63-1 of something plus a pod).
func (r *Resource) Add(o Resource) {
	r.MilliCPU = AddSat(r.MilliCPU, o.MilliCPU)
	r.Memory = AddSat(r.Memory, o.Memory)
	r.EphemeralStorage = AddSat(r.EphemeralStorage, o.EphemeralStorage)
	r.Pods = AddSat(r.Pods, o.Pods)
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = make(map[v1.ResourceName]int64, len(o.Scalar))
		}
		r.Scalar[name] = AddSat(r.Scalar[name], v)
	}
}

// Sub subtracts o from r. Amounts may become negative (an over-committed
// node); callers decide what that means. Differences saturate at the
// int64 range instead of wrapping.
func (r *Resource) Sub(o Resource) {
	r.MilliCPU = SubSat(r.MilliCPU, o.MilliCPU)
	r.Memory = SubSat(r.Memory, o.Memory)
	r.EphemeralStorage = SubSat(r.EphemeralStorage, o.EphemeralStorage)
	r.Pods = SubSat(r.Pods, o.Pods)
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = make(map[v1.ResourceName]int64, len(o.Scalar))
		}
		r.Scalar[name] = SubSat(r.Scalar[name], v)
	}
}

// Min returns, per resource, the smaller amount of r and o; a scalar
// resource only one of them lists counts as zero in the other.
func (r Resource) Min(o Resource) Resource {
	m := Resource{
		MilliCPU:         min(r.MilliCPU, o.MilliCPU),
		Memory:           min(r.Memory, o.Memory),
		EphemeralStorage: min(r.EphemeralStorage, o.EphemeralStorage),
		Pods:             min(r.Pods, o.Pods),
	}
	if len(r.Scalar)+len(o.Scalar) > 0 {
		m.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar)+len(o.Scalar))
		for name, v := range r.Scalar {
			m.Scalar[name] = min(v, o.Scalar[name])
		}
		for name, v := range o.Scalar {
			m.Scalar[name] = min(v, r.Scalar[name])
		}
	}
	return m
}

// Clone returns a deep copy of r.
func (r Resource) Clone() Resource {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// AnyLess reports whether r holds less than o of some resource (a
// resource r does not list counts as zero): o is not within r.
func (r Resource) AnyLess(o Resource) bool {
	if r.MilliCPU < o.MilliCPU || r.Memory < o.Memory || r.EphemeralStorage < o.EphemeralStorage || r.Pods < o.Pods {
		return true
	}
	for name, v := range o.Scalar {
		if r.Scalar[name] < v {
			return true
		}
	}
	return false
}

// IsZero reports whether every amount is zero.
func (r Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 || r.Pods != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// Insufficient lists the resources for which request exceeds r, in a stable
// order. The pod count is always checked; otherwise only what request asks
// for is checked, so a pod that requests no
// memory fits on a node whose memory is over-committed. A resource that r
// does not list counts as zero available. An empty result means request
// fits in r.
func (r Resource) Insufficient(request Resource) []v1.ResourceName {
	var out []v1.ResourceName
	if request.Pods > r.Pods {
		out = append(out, v1.ResourcePods)
	}
	if request.MilliCPU > 0 && request.MilliCPU > r.MilliCPU {
		out = append(out, v1.ResourceCPU)
	}
	if request.Memory > 0 && request.Memory > r.Memory {
		out = append(out, v1.ResourceMemory)
	}
	if request.EphemeralStorage > 0 && request.EphemeralStorage > r.EphemeralStorage {
		out = append(out, v1.ResourceEphemeralStorage)
	}
	var scalars []v1.ResourceName
	for name, v := range request.Scalar {
		if v > 0 && v > r.Scalar[name] {
			scalars = append(scalars, name)
		}
	}
	sort.Slice(scalars, func(i, j int) bool { return scalars[i] < scalars[j] })
	return append(out, scalars...)
}

// Fits reports whether request fits in r.
func (r Resource) Fits(request Resource) bool {
	return len(r.Insufficient(request)) == 0
}

// String renders r compactly, e.g. "cpu=1500m memory=2Gi pods=3".
func (r Resource) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu=%dm memory=%s pods=%d", r.MilliCPU, resource.NewQuantity(r.Memory, resource.BinarySI), r.Pods)
	if r.EphemeralStorage != 0 {
		fmt.Fprintf(&b, " ephemeral-storage=%s", resource.NewQuantity(r.EphemeralStorage, resource.BinarySI))
	}
	names := make([]string, 0, len(r.Scalar))
	for n := range r.Scalar {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, r.Scalar[v1.ResourceName(n)])
	}
	return b.String()
}
