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

package cache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// TestCeilingKeptAsNodesChange checks the ceiling kept as a sum of the
// nodes' parts against a full count after every step of random changes
// to nodes, caps, external usage and pods: nodes that join, change, leave
// empty or become placeholders, leave the node selector and come back, a
// node whose allocatable saturates the sum, and every node capped.
func TestCeilingKeptAsNodesChange(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	rng := rand.New(rand.NewPCG(38, 5))
	node := func(i int) *v1.Node {
		n := st.MakeNode().Name(fmt.Sprintf("n%d", i)).Capacity(res{
			v1.ResourceCPU: fmt.Sprintf("%d", 1+rng.IntN(8)), v1.ResourceMemory: fmt.Sprintf("%dGi", 1+rng.IntN(8)),
			"example.com/gpu": fmt.Sprintf("%d", rng.IntN(3)), v1.ResourcePods: "110"}).Obj()
		if rng.IntN(20) == 0 {
			// A node reporting the most an int64 holds.
			n.Status.Allocatable[v1.ResourceMemory] = *resource.NewQuantity(math.MaxInt64, resource.BinarySI)
		}
		return n
	}
	pods := 0
	for step := range 3000 {
		i := rng.IntN(12)
		name := fmt.Sprintf("n%d", i)
		var what string
		switch op := rng.IntN(9); op {
		case 0, 1:
			what = "AddOrUpdateNode"
			_ = c.AddOrUpdateNode(node(i))
		case 2:
			what = "RemoveNode"
			_ = c.RemoveNode(st.MakeNode().Name(name).Obj())
		case 3:
			what = "SetNodeCap"
			_ = c.SetNodeCap(name, resources.Resource{MilliCPU: int64(rng.IntN(4000)), Memory: int64(rng.IntN(4 << 30))})
		case 4:
			what = "RemoveNodeCap"
			_ = c.RemoveNodeCap(name)
		case 5:
			what = "SetExternalUsage"
			_ = c.SetExternalUsage(fmt.Sprintf("vm-%d", rng.IntN(6)), name, resources.Resource{MilliCPU: int64(rng.IntN(3000))})
		case 6:
			what = "RemoveExternalUsage"
			_ = c.RemoveExternalUsage(fmt.Sprintf("vm-%d", rng.IntN(6)))
		case 7:
			what = "AddPod"
			pods++
			_ = c.AddPod(st.MakePod().Name(fmt.Sprintf("p%d", pods)).UID(fmt.Sprintf("p%d", pods)).Node(name).Req(res{v1.ResourceCPU: "100m"}).Obj())
		case 8:
			what = "setNodeExcluded"
			c.setNodeExcluded(name, rng.IntN(2) == 0)
		}
		if step == 2000 {
			what = "RequireNodeCaps"
			c.RequireNodeCaps()
		}
		c.mu.Lock()
		got, want := c.ceilingLocked(), c.usableLocked(false)
		c.mu.Unlock()
		if !equalAmounts(got, want) {
			t.Fatalf("step %d (%s on %s): ceiling kept %+v, counted afresh %+v", step, what, name, got, want)
		}
	}
}

// equalAmounts compares two resources, a scalar at zero as absent.
func equalAmounts(a, b resources.Resource) bool {
	strip := func(r resources.Resource) resources.Resource {
		r = r.Clone()
		for k, v := range r.Scalar {
			if v == 0 {
				delete(r.Scalar, k)
			}
		}
		if len(r.Scalar) == 0 {
			r.Scalar = nil
		}
		return r
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// BenchmarkCeiling compares the ceiling kept as a sum (kept: one node
// changed per count, as binds touch nodes) with the full count it
// replaced (counted), over 20,000 nodes.
func BenchmarkCeiling(b *testing.B) {
	c, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	const nodes = 20000
	for i := range nodes {
		if err := c.AddOrUpdateNode(bigNode(fmt.Sprintf("n%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ceilingLocked()
	b.Run("kept", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			c.touchLocked(c.nodes[fmt.Sprintf("n%d", i%nodes)])
			c.ceilingLocked()
		}
	})
	b.Run("counted", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			c.touchLocked(c.nodes[fmt.Sprintf("n%d", i%nodes)])
			c.usableLocked(false)
		}
	})
}
