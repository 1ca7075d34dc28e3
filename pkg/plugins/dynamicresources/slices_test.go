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

// TestForNodeAgreesWithAllSlices compares, on random clusters, the
// allocator as Filter runs it (the stable allocator, given
// sliceIndex.forNode) with kube-scheduler's (the incubating allocator,
// which picks the node's slices itself from all of them): on every node,
// for claims asking for one device, two devices, or all of them, both
// must say the same.
func TestForNodeAgreesWithAllSlices(t *testing.T) {
	ctx := context.Background()
	classes := staticClasses{gpuClass()}
	cache := cel.NewCache(10, cel.Features{})
	claims := map[string]*resourceapi.ResourceClaim{"one": claim("one", "gpu", 1), "two": claim("two", "gpu", 2), "all": claim("all", "gpu", 1)}
	claims["all"].Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
	claims["all"].Spec.Devices.Requests[0].Exactly.Count = 0
	compared := 0
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
		index := newSliceIndex(slices)
		structured.EnableAllocators("incubating")
		reference, err := structured.NewAllocator(ctx, features, structured.AllocatedState{AllocatedDevices: taken}, classes, slices, cache)
		structured.EnableAllocators()
		if err != nil {
			t.Fatalf("seed %d: the reference allocator: %v", seed, err)
		}
		for _, node := range nodes {
			ours, err := structured.NewAllocator(ctx, features, structured.AllocatedState{AllocatedDevices: taken}, classes, index.forNode(node.Name), cache)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for name, c := range claims {
				want := verdict(reference.Allocate(ctx, node, []*resourceapi.ResourceClaim{c}))
				got := verdict(ours.Allocate(ctx, node, []*resourceapi.ResourceClaim{c}))
				if got != want {
					t.Errorf("seed %d, node %s, claim %q: with the node's slices %s, kube-scheduler's allocator with all slices %s", seed, node.Name, name, got, want)
				}
				compared++
			}
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}

// BenchmarkFilterPartitionable measures one Filter call's allocation on a
// 500-node cluster of partitionable devices (each node's pool in a
// shared-counter slice and a device slice, kube-scheduler's Partitionable
// workload). The baseline gives the allocator every slice, as Filter did
// before sliceIndex.
func BenchmarkFilterPartitionable(b *testing.B) {
	ctx := context.Background()
	var nodes []*v1.Node
	for i := range 500 {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i)))
	}
	var slices []*resourceapi.ResourceSlice
	for _, n := range nodes {
		slices = append(slices, partitionablePool(n.Name)...)
	}
	classes := staticClasses{gpuClass()}
	cache := cel.NewCache(10, cel.Features{})
	c := []*resourceapi.ResourceClaim{claim("two", "gpu", 2)}
	taken := sets.New[structured.DeviceID]()
	b.Run("baseline: every slice", func(b *testing.B) {
		a, err := structured.NewAllocator(ctx, features, structured.AllocatedState{AllocatedDevices: taken}, classes, slices, cache)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			if r, err := a.Allocate(ctx, nodes[i%len(nodes)], c); err != nil || r == nil {
				b.Fatalf("no allocation: %v", err)
			}
		}
	})
	b.Run("the node's slices", func(b *testing.B) {
		index := newSliceIndex(slices)
		for i := 0; b.Loop(); i++ {
			node := nodes[i%len(nodes)]
			a, err := structured.NewAllocator(ctx, features, structured.AllocatedState{AllocatedDevices: taken}, classes, index.forNode(node.Name), cache)
			if err != nil {
				b.Fatal(err)
			}
			if r, err := a.Allocate(ctx, node, c); err != nil || r == nil {
				b.Fatalf("no allocation: %v", err)
			}
		}
	})
}
