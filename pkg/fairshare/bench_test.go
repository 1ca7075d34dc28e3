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
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// benchTree returns a capacity and a tree of n queues in three levels,
// about cbrt(n) organisations of as many teams each, the rest leaves, with
// 4 resources and leaf demands that together exceed the capacity.
func benchTree(n int) (Vector, []Queue) {
	rng := rand.New(rand.NewPCG(uint64(n), 0))
	resources := []v1.ResourceName{cpu, memory, gpu, v1.ResourceEphemeralStorage}
	vec := func(scale int64) Vector {
		v := Vector{}
		for _, name := range resources {
			v[name] = rng.Int64N(scale)
		}
		return v
	}
	orgs := 1
	for (orgs+1)*(orgs+1)*(orgs+1) <= n {
		orgs++
	}
	teams := min(orgs*orgs, n-orgs)
	var queues []Queue
	for i := range n {
		q := Queue{Name: fmt.Sprintf("q%d", i), Weight: 1 + rng.Int64N(4), Borrow: i%5 != 0, Lend: i%7 != 0}
		switch {
		case i < orgs:
			q.Guarantee = vec(1000)
		case i < orgs+teams:
			q.Parent = fmt.Sprintf("q%d", rng.IntN(orgs))
			q.Guarantee = vec(300)
		default:
			q.Parent = fmt.Sprintf("q%d", orgs+rng.IntN(teams))
			q.Limit = vec(10000)
			q.Demand = vec(2000)
		}
		queues = append(queues, q)
	}
	return Vector{cpu: 64000, memory: 256000, gpu: 16000, v1.ResourceEphemeralStorage: 100000}, queues
}

func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{10, 200} {
		capacity, queues := benchTree(n)
		b.Run(fmt.Sprintf("queues=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compute(capacity, queues)
			}
		})
	}
}

// TestBenchTree checks that the benchmarks compute valid trees.
func TestBenchTree(t *testing.T) {
	for _, n := range []int{10, 200} {
		capacity, queues := benchTree(n)
		r := Compute(capacity, queues)
		if len(r.Invalid) != 0 || len(r.Shares) != n {
			t.Errorf("%d queues: %d shares, invalid %v", n, len(r.Shares), r.Invalid)
		}
		checkTree(t, capacity, queues, r, true)
	}
}
