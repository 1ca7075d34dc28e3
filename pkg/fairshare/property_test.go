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
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// checkTree checks the guarantees that the package documents on the
// shares of r, computed from capacity and queues, and returns the
// violations. conserving also checks work conservation, whose rounding
// bound (a unit per child) holds only where float64 represents the
// amounts exactly.
func checkTree(t *testing.T, capacity Vector, queues []Queue, r Result, conserving bool) {
	t.Helper()
	for _, v := range violations(capacity, queues, r, conserving) {
		t.Error(v)
	}
}

func violations(capacity Vector, queues []Queue, r Result, conserving bool) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	input := map[string]*Queue{}
	var all []Vector
	all = append(all, capacity)
	for i := range queues {
		q := &queues[i]
		if r.Shares[q.Name] != nil {
			input[q.Name] = q
		}
		all = append(all, q.Guarantee, q.Limit, q.Demand)
	}
	names := sortedNames(all...)
	children := map[string][]*Share{}
	for name, s := range r.Shares {
		if input[name] == nil {
			fail("%s: a share for a queue that is not in the input", name)
			continue
		}
		if r.Invalid[name] != nil {
			fail("%s: both computed and invalid", name)
		}
		children[s.Parent] = append(children[s.Parent], s)
	}
	root := Vector{}
	for name, a := range capacity {
		root[name] = max(a, 0)
	}

	for parent, kids := range children {
		p := root
		if parent != "" {
			ps := r.Shares[parent]
			if ps == nil {
				fail("%s: the parent of %s has no share", parent, kids[0].Name)
				continue
			}
			p = ps.FairShare
		}
		sumFair := Vector{}
		caps := map[string]Vector{}
		residuals := map[string]Vector{}
		for _, s := range kids {
			q := input[s.Name]
			sumFair.Add(s.FairShare)

			wantDepth := 1
			if parent != "" {
				wantDepth = r.Shares[parent].Depth + 1
			}
			if s.Depth != wantDepth || s.Parent != q.Parent {
				fail("%s: depth %d parent %q, want %d %q", s.Name, s.Depth, s.Parent, wantDepth, q.Parent)
			}
			demand := q.Demand.Clone()
			if demand == nil {
				demand = Vector{}
			}
			for _, c := range children[s.Name] {
				demand.Add(c.Demand)
			}
			for name, l := range q.Limit {
				demand[name] = min(demand[name], l)
			}

			fair, c, res := Vector{}, Vector{}, Vector{}
			for _, name := range names {
				f, g, e, d := s.FairShare[name], s.Guarantee[name], s.Entitlement[name], s.Demand[name]
				fair[name] = f
				if d != demand[name] {
					fail("%s: Demand %s=%d, want %d", s.Name, name, d, demand[name])
				}
				if f < 0 || g < 0 || e < 0 {
					fail("%s: negative amount of %s: fair %d guarantee %d entitlement %d", s.Name, name, f, g, e)
				}
				if wantG := min(q.Guarantee[name], limitOf(q, name)); g > wantG {
					fail("%s: Guarantee %s=%d above min(Guarantee, Limit)=%d", s.Name, name, g, wantG)
				}
				// (a) Nothing beyond the limit.
				if l := limitOf(q, name); f > l || e > l || d > l {
					fail("(a) %s: %s fair %d entitlement %d demand %d above limit %d", s.Name, name, f, e, d, l)
				}
				// (c) At least the demanded part of the guarantee; all of it
				// without lending.
				base := g
				if q.Lend {
					base = min(g, d)
				}
				if f < base {
					fail("(c) %s: %s fair %d below base %d (guarantee %d demand %d lend %v)", s.Name, name, f, base, g, d, q.Lend)
				}
				// (d) Nothing beyond the demand but a non-lender's reserve.
				if f > max(d, g) {
					fail("(d) %s: %s fair %d above max(demand %d, guarantee %d)", s.Name, name, f, d, g)
				}
				// (f) No borrowing beyond the entitlement.
				ceiling := d
				if !q.Borrow {
					if f > max(base, e) {
						fail("(f) %s: %s fair %d above max(base %d, entitlement %d) without borrowing", s.Name, name, f, base, e)
					}
					ceiling = min(ceiling, max(base, e))
				}
				c[name] = ceiling
				res[name] = max(ceiling-base, 0)
			}
			caps[s.Name], residuals[s.Name] = c, res
		}
		// (b) The children never get more than the parent has, summed
		// exactly: Vector.Add saturates.
		for _, name := range names {
			limit := big.NewInt(p[name])
			for _, f := range []struct {
				what string
				get  func(*Share) Vector
			}{
				{"FairShares", func(s *Share) Vector { return s.FairShare }},
				{"Guarantees", func(s *Share) Vector { return s.Guarantee }},
				{"Entitlements", func(s *Share) Vector { return s.Entitlement }},
			} {
				sum := new(big.Int)
				for _, s := range kids {
					sum.Add(sum, big.NewInt(f.get(s)[name]))
				}
				if sum.Cmp(limit) > 0 {
					fail("(b) children of %q: %s of %s sum to %v, above the parent's %d", parent, f.what, name, sum, p[name])
				}
			}
		}
		if !conserving {
			continue
		}
		// (e) Work conservation: a child below its cap is held back by a
		// resource that its residual needs and the parent handed out.
		n := int64(len(kids))
		for _, s := range kids {
			below := ""
			for _, name := range names {
				if s.FairShare[name] < caps[s.Name][name] {
					below = string(name)
				}
			}
			if below == "" {
				continue
			}
			held := false
			for _, name := range names {
				if residuals[s.Name][name] > 0 && sumFair[name] >= p[name]-n {
					held = true
				}
			}
			if !held {
				fail("(e) %s: fair %v below cap %v on %s, yet no resource its residual %v needs is exhausted (children %v of %v)",
					s.Name, s.FairShare, caps[s.Name], below, residuals[s.Name], sumFair, p)
			}
		}
	}
	return bad
}

func limitOf(q *Queue, name v1.ResourceName) int64 {
	if l, ok := q.Limit[name]; ok {
		return l
	}
	return math.MaxInt64
}

var resourcePool = []v1.ResourceName{cpu, memory, gpu}

// randomTree returns a random capacity and tree: up to 12 queues, 4
// levels and 3 resources.
func randomTree(rng *rand.Rand) (Vector, []Queue) {
	resources := resourcePool[:1+rng.IntN(len(resourcePool))]
	vec := func(maxAmount int64, p float64) Vector {
		v := Vector{}
		for _, name := range resources {
			if rng.Float64() < p {
				v[name] = rng.Int64N(maxAmount + 1)
			}
		}
		return v
	}
	capacity := vec(2000, 0.9)
	n := 1 + rng.IntN(12)
	depth := map[string]int{}
	var queues []Queue
	for i := range n {
		q := Queue{
			Name:      fmt.Sprintf("q%d", i),
			Weight:    rng.Int64N(6) - 1,
			Guarantee: vec(600, 0.4),
			Borrow:    rng.IntN(4) != 0,
			Lend:      rng.IntN(3) != 0,
			Demand:    vec(1500, 0.7),
		}
		if rng.IntN(5) < 3 {
			q.Limit = vec(1500, 0.5)
		}
		if i > 0 && rng.IntN(3) != 0 {
			if p := queues[rng.IntN(i)]; depth[p.Name] < 4 {
				q.Parent = p.Name
			}
		}
		depth[q.Name] = depth[q.Parent] + 1
		queues = append(queues, q)
	}
	// Shuffle, so that children may come before their parents.
	rng.Shuffle(len(queues), func(i, j int) { queues[i], queues[j] = queues[j], queues[i] })
	return capacity, queues
}

func dump(capacity Vector, queues []Queue) string {
	var b strings.Builder
	fmt.Fprintf(&b, "capacity %v\n", capacity)
	for _, q := range queues {
		fmt.Fprintf(&b, "  %s parent=%q weight=%d guarantee={%v} limit={%v} borrow=%v lend=%v demand={%v}\n",
			q.Name, q.Parent, q.Weight, q.Guarantee, q.Limit, q.Borrow, q.Lend, q.Demand)
	}
	return b.String()
}

func TestComputeProperties(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		capacity, queues := randomTree(rng)
		before := dump(capacity, queues)
		r := Compute(capacity, queues)
		bad := violations(capacity, queues, r, true)
		if len(r.Invalid) != 0 || len(r.Shares) != len(queues) {
			bad = append(bad, fmt.Sprintf("got %d shares and invalid %v for %d valid queues", len(r.Shares), r.Invalid, len(queues)))
		}
		if after := dump(capacity, queues); after != before {
			bad = append(bad, "Compute modified its input")
		}
		if len(bad) > 0 {
			var b strings.Builder
			for _, s := range sortedShares(r) {
				fmt.Fprintf(&b, "  %s: guarantee={%v} entitlement={%v} demand={%v} fair={%v}\n", s.Name, s.Guarantee, s.Entitlement, s.Demand, s.FairShare)
			}
			t.Fatalf("seed %d:\n%s\ntree:\n%sshares:\n%s", seed, strings.Join(bad, "\n"), before, b.String())
		}
	}
}

func sortedShares(r Result) []*Share {
	var out []*Share
	for _, q := range slices.Sorted(maps.Keys(r.Shares)) {
		out = append(out, r.Shares[q])
	}
	return out
}

// TestComputeGarbage feeds random trees with invalid queues mixed in and
// amounts up to math.MaxInt64: Compute must not panic, must account for
// every queue exactly once, and must keep the guarantees on the rest.
func TestComputeGarbage(t *testing.T) {
	amounts := []int64{0, 1, 7, 1000, math.MaxInt64 / 3, math.MaxInt64 - 1, math.MaxInt64, -1}
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		vec := func() Vector {
			v := Vector{}
			for _, name := range resourcePool {
				if rng.IntN(2) == 0 {
					v[name] = amounts[rng.IntN(len(amounts))]
				}
			}
			if rng.IntN(10) == 0 {
				return nil
			}
			return v
		}
		names := []string{"", "a", "b", "c", "d", "e", "f", "g", "h"}
		var queues []Queue
		for range 1 + rng.IntN(15) {
			q := Queue{
				Name:      names[rng.IntN(len(names))],
				Parent:    names[rng.IntN(len(names))],
				Weight:    []int64{-1, 0, 1, 3, math.MaxInt64}[rng.IntN(5)],
				Guarantee: vec(),
				Limit:     vec(),
				Borrow:    rng.IntN(2) == 0,
				Lend:      rng.IntN(2) == 0,
				Demand:    vec(),
			}
			if rng.IntN(5) != 0 {
				q.Parent = ""
			}
			queues = append(queues, q)
		}
		capacity := vec()

		r := Compute(capacity, queues)
		bad := violations(capacity, queues, r, false)
		for _, q := range queues {
			_, invalid := r.Invalid[q.Name]
			_, valid := r.Shares[q.Name]
			if invalid == valid {
				bad = append(bad, fmt.Sprintf("%q: invalid %v, computed %v", q.Name, invalid, valid))
			}
			if err := r.Invalid[q.Name]; err != nil && q.Name != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", q.Name)) {
				bad = append(bad, fmt.Sprintf("%q: error %q does not name the queue", q.Name, err))
			}
		}
		if len(bad) > 0 {
			t.Fatalf("seed %d:\n%s\ntree:\n%s", seed, strings.Join(bad, "\n"), dump(capacity, queues))
		}
	}
}
