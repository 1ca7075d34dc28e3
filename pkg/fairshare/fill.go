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
	"math/bits"
)

// floorSlack is the relative amount added to an extra before it is
// rounded down, so that an amount the float64 arithmetic computes as
// 2999.9999999999995 is the 3000 it stands for. What the slack gives too
// much is taken back so the extras never exceed what is left.
const floorSlack = 1e-12

// fill divides the remaining capacity R among n children by weighted
// progressive filling and returns their extras, an n-by-m matrix like r.
//
// Child i wants its residual r_i and gets x_i(t) = min(1, w_i*t/dom_i) *
// r_i at time t, where dom_i is the dominant share of r_i relative to the
// parent's share P (resources with P = 0 do not count). Every child thus
// grows along its own residual's direction with a dominant share of w_i*t,
// and stops (freezes) when it has its whole residual or when a resource
// its residual needs runs out. A child whose residual needs a resource of
// which nothing is left (R = 0, which includes every resource with P = 0)
// freezes at once: the residual is a direction, and no progress along it
// is possible without that resource.
//
// The filling is exact up to float64 rounding: between two events (a
// child completing, a resource running out) all rates are constant, so
// the loop jumps from event to event. Every event freezes at least one
// child, so there are at most n rounds of O(n*m) each. The extras are
// rounded down (after a slack against float64 error), and what rounding
// leaves above R on a resource is taken back, so they never sum to more
// than R.
func fill(P, R, r, w []int64) []int64 {
	n, m := len(w), len(P)
	x := make([]int64, n*m)
	// done[i] is the time child i completes, dom_i/w_i; its residual
	// grows at r_i/done[i] until then. frac[i] is the part of the residual
	// it has when it freezes.
	done := make([]float64, n)
	frac := make([]float64, n)
	active := make([]bool, n)
	exhausted := make([]bool, m)
	for j := range m {
		exhausted[j] = R[j] <= 0
	}
	nActive := 0
	for i := range n {
		dom, needs, blocked := 0.0, false, false
		for j := range m {
			if rij := r[i*m+j]; rij > 0 {
				needs = true
				if exhausted[j] {
					blocked = true
					break
				}
				dom = max(dom, float64(rij)/float64(P[j]))
			}
		}
		if needs && !blocked {
			active[i] = true
			done[i] = dom / float64(w[i])
			nActive++
		}
	}

	used := make([]float64, m)
	rate := make([]float64, m)
	runsOut := make([]float64, m)
	t := 0.0
	for nActive > 0 {
		next := math.Inf(1)
		clear(rate)
		for i := range n {
			if !active[i] {
				continue
			}
			next = min(next, done[i])
			for j := range m {
				rate[j] += float64(r[i*m+j]) / done[i]
			}
		}
		for j := range m {
			runsOut[j] = math.Inf(1)
			if rate[j] > 0 && !exhausted[j] {
				runsOut[j] = t + max(float64(R[j])-used[j], 0)/rate[j]
				next = min(next, runsOut[j])
			}
		}
		next = max(next, t)
		for j := range m {
			used[j] += rate[j] * (next - t)
		}
		t = next
		for j := range m {
			if runsOut[j] <= t {
				exhausted[j] = true
				used[j] = float64(R[j])
			}
		}
		// The event that set next either completes a child or exhausts a
		// resource that an active child needs, so this freezes at least
		// one child and the loop ends. Should float64 arithmetic ever fail
		// that, the children still active freeze where they are.
		stuck := nActive
		for i := range n {
			if !active[i] {
				continue
			}
			if done[i] <= t {
				active[i], frac[i] = false, 1
				nActive--
				continue
			}
			for j := range m {
				if r[i*m+j] > 0 && exhausted[j] {
					active[i], frac[i] = false, t/done[i]
					nActive--
					break
				}
			}
		}
		if nActive == stuck {
			for i := range n {
				if active[i] {
					active[i], frac[i] = false, t/done[i]
				}
			}
			nActive = 0
		}
	}

	for i := range n {
		if frac[i] <= 0 {
			continue
		}
		for j := range m {
			rij := r[i*m+j]
			if rij <= 0 {
				continue
			}
			if frac[i] >= 1 {
				x[i*m+j] = rij
				continue
			}
			f := float64(rij) * frac[i]
			f = math.Floor(f + f*floorSlack)
			if f >= float64(rij) {
				x[i*m+j] = rij
			} else if f > 0 {
				x[i*m+j] = int64(f)
			}
		}
	}

	// Take back what rounding gave beyond R, from the largest extras
	// first. Only a resource that ran out can be over, so every child that
	// loses here is one that froze, or could have, on that resource.
	for j := range m {
		var sum, carry uint64
		for i := range n {
			var c uint64
			sum, c = bits.Add64(sum, uint64(x[i*m+j]), 0)
			carry |= c
		}
		if carry != 0 {
			sum = math.MaxUint64
		}
		for sum > uint64(R[j]) {
			top := 0
			for i := range n {
				if x[i*m+j] > x[top*m+j] {
					top = i
				}
			}
			take := min(uint64(x[top*m+j]), sum-uint64(R[j]))
			if take == 0 {
				break
			}
			x[top*m+j] -= int64(take)
			sum -= take
		}
	}
	return x
}
