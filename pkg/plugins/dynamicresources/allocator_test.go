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

package dynamicresources

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// staticClasses serves a fixed set of device classes to an allocator.
type staticClasses []*resourceapi.DeviceClass

func (c staticClasses) List() ([]*resourceapi.DeviceClass, error) { return c, nil }
func (c staticClasses) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, d := range c {
		if d.Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("device class %q not found", name)
}

func mk(name, pool string, gen, count int64) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       resourceapi.ResourceSliceSpec{Driver: driver, Pool: resourceapi.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: count}},
	}
}

// partitionablePool publishes node's pool in two slices: a shared-counter
// slice, and two devices that each consume one of its counters.
func partitionablePool(name string) []*resourceapi.ResourceSlice {
	pool := "pool-" + name
	c := mk(name+"-counters", pool, 1, 2)
	c.Spec.NodeName = ptr.To(name)
	c.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "set", Counters: map[string]resourceapi.Counter{
		"a": {Value: resource.MustParse("1")}, "b": {Value: resource.MustParse("1")},
	}}}
	d := mk(name+"-devices", pool, 1, 2)
	d.Spec.NodeName = ptr.To(name)
	for i, counter := range []string{"a", "b"} {
		d.Spec.Devices = append(d.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "set", Counters: map[string]resourceapi.Counter{
				counter: {Value: resource.MustParse("1")},
			}}},
		})
	}
	return []*resourceapi.ResourceSlice{c, d}
}

// randomSlices publishes, at random, the kinds of pools the allocator
// distinguishes: one node's pool in one slice, or split between a
// shared-counter slice and device slices (partitionable devices), a pool
// missing a slice (incomplete), a pool being replaced by a newer
// generation, a pool for all nodes, and one for the nodes a selector
// picks.
func randomSlices(rng *rand.Rand, nodes []*v1.Node) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	devices := func(n int) []resourceapi.Device {
		var ds []resourceapi.Device
		for i := range n {
			ds = append(ds, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
		}
		return ds
	}
	for _, node := range nodes {
		name := node.Name
		pool := "pool-" + name
		switch rng.Intn(5) {
		case 0: // one slice
			s := mk(name+"-a", pool, 1, 1)
			s.Spec.NodeName, s.Spec.Devices = ptr.To(name), devices(1+rng.Intn(3))
			out = append(out, s)
		case 1, 2: // partitionable: counters, then two devices using them
			out = append(out, partitionablePool(name)...)
		case 3: // incomplete: one of two slices published
			s := mk(name+"-a", pool, 1, 2)
			s.Spec.NodeName, s.Spec.Devices = ptr.To(name), devices(2)
			out = append(out, s)
		case 4: // generation 1 being replaced by 2, whose slice is elsewhere
			s := mk(name+"-old", pool, 1, 1)
			s.Spec.NodeName, s.Spec.Devices = ptr.To(name), devices(2)
			n := mk(name+"-new", pool, 2, 1)
			n.Spec.NodeName, n.Spec.Devices = ptr.To(nodes[rng.Intn(len(nodes))].Name), devices(1)
			out = append(out, s, n)
		}
	}
	if rng.Intn(2) == 0 {
		s := mk("network", "network", 1, 1)
		s.Spec.AllNodes, s.Spec.Devices = ptr.To(true), devices(1+rng.Intn(2))
		out = append(out, s)
	}
	if rng.Intn(2) == 0 {
		s := mk("rack", "rack", 1, 1)
		s.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{"r1"}},
		}}}}
		s.Spec.Devices = devices(1 + rng.Intn(2))
		out = append(out, s)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// verdict is what one Allocate call said, in the terms Filter uses.
func verdict(results []resourceapi.AllocationResult, err error) string {
	switch {
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return "fails on the node"
	case err != nil:
		return "error"
	case results == nil:
		return "no devices"
	}
	return "allocated"
}

// stableFeatures are features without consumable capacity and
// FractionalCapacityRange: the GA feature set, for which NewAllocator
// picks the "stable" allocator.
var stableFeatures = func() structured.Features {
	f := features
	f.ConsumableCapacity, f.FractionalCapacityRange = false, false
	return f
}()

// TestAllocatorImplementation: features make NewAllocator pick the
// incubating allocator, kube-scheduler's (see features).
func TestAllocatorImplementation(t *testing.T) {
	a, err := structured.NewAllocator(context.Background(), features, structured.AllocatedState{}, staticClasses{gpuClass()}, nil, cel.NewCache(1, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%T", a); !strings.Contains(got, "incubating") {
		t.Errorf("NewAllocator picked %s, want the incubating allocator", got)
	}
}

// TestFeaturesAllocateAsTheGAFeatureSet compares, on random clusters, the
// allocator of features with the allocator of the GA feature set (the
// stable allocator): on devices that allow one allocation each, consumable
// capacity and FractionalCapacityRange must change nothing. On every
// node, for claims asking for one device, two devices, or all of them,
// both must say the same.
func TestFeaturesAllocateAsTheGAFeatureSet(t *testing.T) {
	ctx := context.Background()
	classes := staticClasses{gpuClass()}
	cache := cel.NewCache(10, cel.Features{})
	claims := map[string]*resourceapi.ResourceClaim{"one": claim("one", "gpu", 1), "two": claim("two", "gpu", 2), "all": claim("all", "gpu", 1)}
	claims["all"].Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
	claims["all"].Spec.Devices.Requests[0].Exactly.Count = 0
	outcomes := map[string]int{}
	for seed := int64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var nodes []*v1.Node
		for i := range 4 {
			n := gpuNode(fmt.Sprintf("n%d", i))
			n.Labels = map[string]string{"rack": fmt.Sprintf("r%d", i%2)}
			nodes = append(nodes, n)
		}
		slices := randomSlices(rng, nodes)
		taken := sets.New[structured.DeviceID]()
		for _, s := range slices {
			for _, d := range s.Spec.Devices {
				if rng.Intn(4) == 0 {
					taken.Insert(structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name))
				}
			}
		}
		state := structured.AllocatedState{AllocatedDevices: taken}
		ours, err := structured.NewAllocator(ctx, features, state, classes, slices, cache)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		ga, err := structured.NewAllocator(ctx, stableFeatures, state, classes, slices, cache)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, node := range nodes {
			for name, c := range claims {
				want := verdict(ga.Allocate(ctx, node, []*resourceapi.ResourceClaim{c}))
				got := verdict(ours.Allocate(ctx, node, []*resourceapi.ResourceClaim{c}))
				if got != want {
					t.Errorf("seed %d, node %s, claim %q: %s, the GA feature set's allocator %s", seed, node.Name, name, got, want)
				}
				outcomes[got]++
			}
		}
	}
	// Every kind of answer came up: the clusters exercise the allocator.
	for _, v := range []string{"allocated", "no devices", "error"} {
		if outcomes[v] == 0 {
			t.Errorf("no claim was answered %q: %v", v, outcomes)
		}
	}
}

// backtrackingPool publishes node's pool as kube-scheduler's
// PartitionableBacktracking workload does: eight devices, each taking one
// CPU counter and memory (the first 20Gi, the others 10Gi, of 70Gi). A
// claim for seven devices fits only without the first, which the search
// tries first.
func backtrackingPool(name string) []*resourceapi.ResourceSlice {
	pool := "pool-" + name
	c := mk(name+"-counters", pool, 1, 2)
	c.Spec.NodeName = ptr.To(name)
	cpu := map[string]resourceapi.Counter{}
	for i := 1; i <= 8; i++ {
		cpu[fmt.Sprintf("cpu%d", i)] = resourceapi.Counter{Value: resource.MustParse("1")}
	}
	c.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "cpu", Counters: cpu}, {Name: "mem", Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse("70Gi")}}}}
	d := mk(name+"-devices", pool, 1, 2)
	d.Spec.NodeName = ptr.To(name)
	for i := 1; i <= 8; i++ {
		mem := "10Gi"
		if i == 1 {
			mem = "20Gi"
		}
		d.Spec.Devices = append(d.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("device-%d", i), ConsumesCounters: []resourceapi.DeviceCounterConsumption{
			{CounterSet: "cpu", Counters: map[string]resourceapi.Counter{fmt.Sprintf("cpu%d", i): {Value: resource.MustParse("1")}}},
			{CounterSet: "mem", Counters: map[string]resourceapi.Counter{"mem": {Value: resource.MustParse(mem)}}},
		}})
	}
	return []*resourceapi.ResourceSlice{c, d}
}

// BenchmarkAllocate measures one Filter call's allocation on kube-scheduler's
// partitionable-device workloads: on a 500-node cluster of partitionable
// pools (a shared-counter slice and a device slice per node), two devices;
// on one node of the backtracking pool, seven. The baseline is the GA
// feature set's (stable) allocator, which the plugin used before.
func BenchmarkAllocate(b *testing.B) {
	ctx := context.Background()
	var nodes []*v1.Node
	var partitionable []*resourceapi.ResourceSlice
	for i := range 500 {
		n := gpuNode(fmt.Sprintf("n%d", i))
		nodes = append(nodes, n)
		partitionable = append(partitionable, partitionablePool(n.Name)...)
	}
	classes := staticClasses{gpuClass()}
	cache := cel.NewCache(10, cel.Features{})
	for _, w := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		nodes  []*v1.Node
		claim  *resourceapi.ResourceClaim
	}{
		{"partitionable, 500 nodes", partitionable, nodes, claim("two", "gpu", 2)},
		{"backtracking", backtrackingPool("n0"), nodes[:1], claim("seven", "gpu", 7)},
	} {
		for _, impl := range []struct {
			name string
			f    structured.Features
		}{{"baseline: GA feature set", stableFeatures}, {"features", features}} {
			b.Run(w.name+"/"+impl.name, func(b *testing.B) {
				a, err := structured.NewAllocator(ctx, impl.f, structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}, classes, w.slices, cache)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; b.Loop(); i++ {
					if r, err := a.Allocate(ctx, w.nodes[i%len(w.nodes)], []*resourceapi.ResourceClaim{w.claim}); err != nil || r == nil {
						b.Fatalf("no allocation: %v", err)
					}
				}
			})
		}
	}
}
