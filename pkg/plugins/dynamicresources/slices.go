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
	resourceapi "k8s.io/api/resource/v1"
)

// sliceIndex groups a pod's view of the ResourceSlices so that the
// allocator, asked about one node, is given the slices that can matter
// there instead of every slice of the cluster.
//
// The allocator gathers a node's pools from the slices it is given: those
// published for the node, those that select nodes otherwise (all nodes, a
// node selector, per-device selection), and, for a pool it found only part
// of, the pool's other slices, to tell whether the pool is complete. Given
// every slice, it also takes each pool's shared-counter slices whatever
// node they are for, and then looks for the rest of each such pool among
// all slices: with one pool per node, every node costs pools × slices,
// 500,000 comparisons for each node of a 500-node cluster. forNode gives
// it the node's own slices, the slices not bound to one node, and every
// slice of the pools these belong to, so the pool checks find the same
// slices; the shared-counter slices of pools with no device for the node
// are left out, as kube-scheduler's allocator leaves them out too.
type sliceIndex struct {
	// byNode holds the slices whose spec.nodeName names the node.
	byNode map[string][]*resourceapi.ResourceSlice
	// unbound are the slices without spec.nodeName (all nodes, a node
	// selector, or per-device selection): they may matter anywhere.
	unbound []*resourceapi.ResourceSlice
	// byPool holds every slice, by the pool it belongs to.
	byPool map[poolKey][]*resourceapi.ResourceSlice
}

// poolKey names a pool: pool names are unique per driver.
type poolKey struct{ driver, pool string }

func keyOf(s *resourceapi.ResourceSlice) poolKey {
	return poolKey{driver: s.Spec.Driver, pool: s.Spec.Pool.Name}
}

// newSliceIndex indexes slices.
func newSliceIndex(slices []*resourceapi.ResourceSlice) *sliceIndex {
	x := &sliceIndex{byNode: map[string][]*resourceapi.ResourceSlice{}, byPool: map[poolKey][]*resourceapi.ResourceSlice{}}
	for _, s := range slices {
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			x.byNode[*s.Spec.NodeName] = append(x.byNode[*s.Spec.NodeName], s)
		} else {
			x.unbound = append(x.unbound, s)
		}
		k := keyOf(s)
		x.byPool[k] = append(x.byPool[k], s)
	}
	return x
}

// forNode returns the slices the allocator needs to allocate on the node
// named name: every slice of each pool that has a slice published for the
// node or not bound to one node.
func (x *sliceIndex) forNode(name string) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	var seen map[poolKey]bool
	add := func(slices []*resourceapi.ResourceSlice) {
		for _, s := range slices {
			k := keyOf(s)
			if seen[k] {
				continue
			}
			if seen == nil {
				seen = map[poolKey]bool{}
			}
			seen[k] = true
			out = append(out, x.byPool[k]...)
		}
	}
	add(x.byNode[name])
	add(x.unbound)
	return out
}
