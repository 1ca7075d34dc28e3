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
	"reflect"
	"strings"
	"testing"
)

// expect is what a test expects of one queue; a nil field is not checked.
type expect struct {
	fair, guarantee, entitlement, demand Vector
	depth                                int
}

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity Vector
		queues   []Queue
		// want lists every valid queue; tolerance is the rounding allowed
		// on each amount of FairShare.
		want      map[string]expect
		tolerance int64
	}{
		{
			name:     "empty input",
			capacity: Vector{cpu: 1000},
			want:     map[string]expect{},
		},
		{
			// Ghodsi et al. 2011: A's tasks are <1 CPU, 4 GB>, B's <3 CPU,
			// 1 GB>, and both have far more tasks than fit.
			name:     "DRF paper example",
			capacity: Vector{cpu: 9000, memory: 18},
			queues: []Queue{
				{Name: "a", Borrow: true, Lend: true, Demand: Vector{cpu: 1000 * 1000, memory: 4 * 1000}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 3000 * 1000, memory: 1 * 1000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 3000, memory: 12}, entitlement: Vector{cpu: 4500, memory: 9}, depth: 1},
				"b": {fair: Vector{cpu: 6000, memory: 2}, entitlement: Vector{cpu: 4500, memory: 9}, depth: 1},
			},
			tolerance: 1,
		},
		{
			name:     "weights 2:1",
			capacity: Vector{cpu: 9000},
			queues: []Queue{
				{Name: "a", Weight: 2, Borrow: true, Demand: Vector{cpu: 20000}},
				{Name: "b", Weight: 1, Borrow: true, Demand: Vector{cpu: 20000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 6000}, entitlement: Vector{cpu: 6000}},
				"b": {fair: Vector{cpu: 3000}, entitlement: Vector{cpu: 3000}},
			},
		},
		{
			name:     "weights of zero or less count as 1",
			capacity: Vector{cpu: 9000},
			queues: []Queue{
				{Name: "a", Weight: 0, Borrow: true, Demand: Vector{cpu: 20000}},
				{Name: "b", Weight: -7, Borrow: true, Demand: Vector{cpu: 20000}},
				{Name: "c", Weight: 1, Borrow: true, Demand: Vector{cpu: 20000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 3000}},
				"b": {fair: Vector{cpu: 3000}},
				"c": {fair: Vector{cpu: 3000}},
			},
		},
		{
			// Without its guarantee a would get a tenth.
			name:     "guarantees are met first",
			capacity: Vector{cpu: 10000},
			queues: []Queue{
				{Name: "a", Weight: 1, Guarantee: Vector{cpu: 8000}, Borrow: true, Lend: true, Demand: Vector{cpu: 20000}},
				{Name: "b", Weight: 9, Borrow: true, Lend: true, Demand: Vector{cpu: 20000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 8200}, guarantee: Vector{cpu: 8000}, entitlement: Vector{cpu: 8200}},
				"b": {fair: Vector{cpu: 1800}, guarantee: Vector{}, entitlement: Vector{cpu: 1800}},
			},
		},
		{
			name:     "work conservation: a small demand leaves the rest to the sibling",
			capacity: Vector{cpu: 10000, memory: 100},
			queues: []Queue{
				{Name: "a", Borrow: true, Lend: true, Demand: Vector{cpu: 2000, memory: 10}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 20000, memory: 200}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 2000, memory: 10}},
				// b grows along its demand's direction: when the cpus run
				// out it has 80 of memory, and 10 stay idle.
				"b": {fair: Vector{cpu: 8000, memory: 80}},
			},
		},
		{
			name:     "limit caps",
			capacity: Vector{cpu: 10000},
			queues: []Queue{
				{Name: "a", Limit: Vector{cpu: 3000, memory: 0}, Guarantee: Vector{cpu: 4000}, Borrow: true, Lend: true, Demand: Vector{cpu: 10000, memory: 5}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 3000}, guarantee: Vector{cpu: 3000}, entitlement: Vector{cpu: 3000}, demand: Vector{cpu: 3000}},
				"b": {fair: Vector{cpu: 7000}, entitlement: Vector{cpu: 3500}, demand: Vector{cpu: 10000}},
			},
		},
		{
			// a's reserve takes half of the cpus. Relative to the
			// parent's share, b's and c's residuals have the same dominant
			// share (all the cpus, all the memory), so both grow at the
			// same pace until the cpus run out at b (5000, 1000); c then
			// takes the rest of the memory.
			name:     "dominant shares are relative to the parent's share",
			capacity: Vector{cpu: 10000, memory: 10000},
			queues: []Queue{
				{Name: "a", Guarantee: Vector{cpu: 5000}, Borrow: true, Demand: Vector{cpu: 5000}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 10000, memory: 2000}},
				{Name: "c", Borrow: true, Lend: true, Demand: Vector{memory: 10000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 5000}},
				"b": {fair: Vector{cpu: 5000, memory: 1000}},
				"c": {fair: Vector{memory: 9000}},
			},
		},
		{
			name:     "a queue that may not borrow stops at its entitlement, leaving capacity idle",
			capacity: Vector{cpu: 10000},
			queues: []Queue{
				{Name: "a", Borrow: false, Lend: true, Demand: Vector{cpu: 10000}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 1000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 5000}, entitlement: Vector{cpu: 5000}},
				"b": {fair: Vector{cpu: 1000}, entitlement: Vector{cpu: 5000}},
			},
		},
		{
			name:     "a queue that does not lend keeps its unused guarantee",
			capacity: Vector{cpu: 10000},
			queues: []Queue{
				{Name: "a", Guarantee: Vector{cpu: 6000}, Borrow: true, Lend: false, Demand: Vector{cpu: 1000}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 6000}},
				"b": {fair: Vector{cpu: 4000}},
			},
		},
		{
			name:     "a queue that lends gives its unused guarantee away",
			capacity: Vector{cpu: 10000},
			queues: []Queue{
				{Name: "a", Guarantee: Vector{cpu: 6000}, Borrow: true, Lend: true, Demand: Vector{cpu: 1000}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 1000}},
				"b": {fair: Vector{cpu: 9000}},
			},
		},
		{
			name:     "guarantees exceeding the parent's share are scaled down",
			capacity: Vector{cpu: 6000, memory: 100},
			queues: []Queue{
				{Name: "a", Guarantee: Vector{cpu: 6000, memory: 10}, Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
				{Name: "b", Guarantee: Vector{cpu: 3000, memory: 20}, Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 4000}, guarantee: Vector{cpu: 4000, memory: 10}},
				"b": {fair: Vector{cpu: 2000}, guarantee: Vector{cpu: 2000, memory: 20}},
			},
		},
		{
			// The root gives org1 and org2 8000 and 4000 (weights 2:1);
			// org1 gives team-a its guarantee and half of the rest, team-b
			// the other half, which team-b splits 3:1.
			name:     "three levels",
			capacity: Vector{cpu: 12000},
			queues: []Queue{
				{Name: "b1", Parent: "team-b", Weight: 3, Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
				{Name: "b2", Parent: "team-b", Weight: 1, Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
				{Name: "org1", Weight: 2, Borrow: true, Lend: true},
				{Name: "org2", Weight: 1, Borrow: true, Lend: true},
				{Name: "team-a", Parent: "org1", Guarantee: Vector{cpu: 2000}, Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
				{Name: "team-b", Parent: "org1", Borrow: true, Lend: true},
				{Name: "c1", Parent: "org2", Borrow: true, Lend: true, Demand: Vector{cpu: 10000}},
			},
			want: map[string]expect{
				"org1":   {fair: Vector{cpu: 8000}, demand: Vector{cpu: 30000}, depth: 1},
				"org2":   {fair: Vector{cpu: 4000}, demand: Vector{cpu: 10000}, depth: 1},
				"team-a": {fair: Vector{cpu: 5000}, entitlement: Vector{cpu: 5000}, depth: 2},
				"team-b": {fair: Vector{cpu: 3000}, demand: Vector{cpu: 20000}, depth: 2},
				"b1":     {fair: Vector{cpu: 2250}, depth: 3},
				"b2":     {fair: Vector{cpu: 750}, depth: 3},
				"c1":     {fair: Vector{cpu: 4000}, depth: 2},
			},
		},
		{
			name:     "a parent's own demand adds to its subtree's",
			capacity: Vector{cpu: 12000},
			queues: []Queue{
				{Name: "org", Limit: Vector{cpu: 2500}, Borrow: true, Lend: true, Demand: Vector{cpu: 1000}},
				{Name: "leaf", Parent: "org", Borrow: true, Lend: true, Demand: Vector{cpu: 2000}},
			},
			want: map[string]expect{
				"org":  {fair: Vector{cpu: 2500}, demand: Vector{cpu: 2500}},
				"leaf": {fair: Vector{cpu: 2000}, demand: Vector{cpu: 2000}},
			},
		},
		{
			// a's residual needs a GPU and there is none: it keeps its
			// guarantee and gets nothing more; b takes the rest.
			name:     "a demand needing a resource without capacity",
			capacity: Vector{cpu: 10000},
			queues: []Queue{
				{Name: "a", Guarantee: Vector{cpu: 1000, gpu: 1}, Borrow: true, Lend: true, Demand: Vector{cpu: 5000, gpu: 1}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 20000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{cpu: 1000}, guarantee: Vector{cpu: 1000}, demand: Vector{cpu: 5000, gpu: 1}},
				"b": {fair: Vector{cpu: 9000}},
			},
		},
		{
			name:     "zero capacity",
			capacity: nil,
			queues: []Queue{
				{Name: "a", Guarantee: Vector{cpu: 1000}, Borrow: true, Lend: false, Demand: Vector{cpu: 5000}},
				{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 5000}},
				{Name: "c", Parent: "a", Guarantee: Vector{cpu: 1000}, Demand: Vector{cpu: 5000}},
			},
			want: map[string]expect{
				"a": {fair: Vector{}, guarantee: Vector{}, entitlement: Vector{}, demand: Vector{cpu: 10000}},
				"b": {fair: Vector{}, guarantee: Vector{}, entitlement: Vector{}},
				"c": {fair: Vector{}, guarantee: Vector{}, entitlement: Vector{}},
			},
		},
		{
			name:     "negative capacity counts as zero",
			capacity: Vector{cpu: -5000, memory: 10},
			queues: []Queue{
				{Name: "a", Borrow: true, Lend: true, Demand: Vector{memory: 20}},
			},
			want: map[string]expect{
				"a": {fair: Vector{memory: 10}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compute(tc.capacity, tc.queues)
			if len(r.Invalid) != 0 {
				t.Fatalf("unexpected invalid queues: %v", r.Invalid)
			}
			if len(r.Shares) != len(tc.want) {
				t.Errorf("got %d shares, want %d", len(r.Shares), len(tc.want))
			}
			for name, want := range tc.want {
				got := r.Shares[name]
				if got == nil {
					t.Errorf("%s: no share", name)
					continue
				}
				if got.Name != name {
					t.Errorf("%s: Name is %q", name, got.Name)
				}
				if want.fair != nil && !near(got.FairShare, want.fair, tc.tolerance) {
					t.Errorf("%s: FairShare %v, want %v (±%d)", name, got.FairShare, want.fair, tc.tolerance)
				}
				for _, f := range []struct {
					what      string
					got, want Vector
				}{{"Guarantee", got.Guarantee, want.guarantee}, {"Entitlement", got.Entitlement, want.entitlement}, {"Demand", got.Demand, want.demand}} {
					if f.want != nil && !near(f.got, f.want, 0) {
						t.Errorf("%s: %s %v, want %v", name, f.what, f.got, f.want)
					}
				}
				if want.depth != 0 && got.Depth != want.depth {
					t.Errorf("%s: Depth %d, want %d", name, got.Depth, want.depth)
				}
			}
			checkTree(t, tc.capacity, tc.queues, r, true)
		})
	}
}

// near reports whether every amount of got is within tolerance of want.
func near(got, want Vector, tolerance int64) bool {
	for _, name := range sortedNames(got, want) {
		if d := got[name] - want[name]; d > tolerance || d < -tolerance {
			return false
		}
	}
	return true
}

func TestComputeDoesNotRoundTheDRFExampleAway(t *testing.T) {
	// The DRF example again, with memory in GiB: rounding costs at most a
	// unit, which the exact filling should not even lose here.
	const gi = 1 << 30
	r := Compute(Vector{cpu: 9000, memory: 18 * gi}, []Queue{
		{Name: "a", Borrow: true, Lend: true, Demand: Vector{cpu: 100 * 1000, memory: 100 * 4 * gi}},
		{Name: "b", Borrow: true, Lend: true, Demand: Vector{cpu: 100 * 3000, memory: 100 * 1 * gi}},
	})
	for name, want := range map[string]Vector{
		"a": {cpu: 3000, memory: 12 * gi},
		"b": {cpu: 6000, memory: 2 * gi},
	} {
		if got := r.Shares[name].FairShare; !near(got, want, 1) {
			t.Errorf("%s: FairShare %v, want %v", name, got, want)
		}
	}
}

func TestComputeInvalid(t *testing.T) {
	queues := []Queue{
		{Name: "ok", Borrow: true, Lend: true, Demand: Vector{cpu: 1000}},
		{Name: "ok-child", Parent: "ok", Borrow: true, Lend: true, Demand: Vector{cpu: 1000}},
		{Name: "orphan", Parent: "nope", Demand: Vector{cpu: 1000}},
		{Name: "orphan-child", Parent: "orphan", Demand: Vector{cpu: 1000}},
		{Name: "a", Parent: "b"},
		{Name: "b", Parent: "a"},
		{Name: "kid", Parent: "a", Demand: Vector{cpu: 1000}},
		{Name: "grandkid", Parent: "kid", Demand: Vector{cpu: 1000}},
		{Name: "self", Parent: "self"},
		{Name: "dup", Demand: Vector{cpu: 1}},
		{Name: "dup-child", Parent: "dup"},
		{Name: "dup", Parent: "ok"},
		{Name: "neg", Demand: Vector{cpu: 10, memory: -1}},
		{Name: "neg-limit", Limit: Vector{gpu: -1}},
		{Name: "neg-guarantee", Guarantee: Vector{cpu: -1}},
		{Name: "", Demand: Vector{cpu: 1000}},
		{Name: "", Parent: "ok"},
		{Name: "ok2", Borrow: true, Lend: true, Weight: -1, Demand: Vector{cpu: 5000}},
	}
	before := fmt.Sprint(queues)
	r := Compute(Vector{cpu: 4000}, queues)
	if fmt.Sprint(queues) != before {
		t.Error("Compute modified its input")
	}

	wantErr := map[string][]string{
		"orphan":        {`"orphan"`, `parent "nope" does not exist`},
		"orphan-child":  {`"orphan-child"`, `ancestor "orphan"`, `parent "nope" does not exist`},
		"a":             {`"a"`, "cycle a -> b -> a"},
		"b":             {`"b"`, "cycle b -> a -> b"},
		"kid":           {`"kid"`, `ancestor "a"`, "cycle"},
		"grandkid":      {`"grandkid"`, `ancestor "a"`},
		"self":          {`"self"`, "cycle self -> self"},
		"dup":           {`"dup"`, "duplicate name (2 queues)"},
		"dup-child":     {`"dup-child"`, `ancestor "dup"`},
		"neg":           {`"neg"`, "negative demand memory=-1"},
		"neg-limit":     {`"neg-limit"`, "negative limit nvidia.com/gpu=-1"},
		"neg-guarantee": {`"neg-guarantee"`, "negative guarantee cpu=-1"},
		"":              {"index 15: empty name", "index 16: empty name"},
	}
	for name, parts := range wantErr {
		err := r.Invalid[name]
		if err == nil {
			t.Errorf("%q is not reported invalid", name)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%q: error %q does not contain %q", name, err, p)
			}
		}
		if r.Shares[name] != nil {
			t.Errorf("%q is both invalid and computed", name)
		}
	}
	if len(r.Invalid) != len(wantErr) {
		t.Errorf("got %d invalid queues, want %d: %v", len(r.Invalid), len(wantErr), r.Invalid)
	}

	// The rest is computed as if the invalid queues did not exist.
	want := map[string]Vector{
		"ok":       {cpu: 2000},
		"ok-child": {cpu: 1000},
		"ok2":      {cpu: 2000},
	}
	if len(r.Shares) != len(want) {
		t.Errorf("got %d shares, want %d", len(r.Shares), len(want))
	}
	for name, fair := range want {
		if s := r.Shares[name]; s == nil || !reflect.DeepEqual(s.FairShare, fair) {
			t.Errorf("%s: got %+v, want FairShare %v", name, s, fair)
		}
	}
}

func TestComputeLongCycle(t *testing.T) {
	const n = 1000
	var queues []Queue
	for i := range n {
		queues = append(queues, Queue{Name: fmt.Sprintf("q%d", i), Parent: fmt.Sprintf("q%d", (i+1)%n)})
	}
	r := Compute(Vector{cpu: 1000}, queues)
	if len(r.Invalid) != n || len(r.Shares) != 0 {
		t.Fatalf("got %d invalid and %d shares, want %d and 0", len(r.Invalid), len(r.Shares), n)
	}
	err := r.Invalid["q7"].Error()
	for _, p := range []string{`queue "q7"`, "q7 -> q8 -> ", "(1000 queues)", "-> q6 -> q7"} {
		if !strings.Contains(err, p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
	if len(err) > 200 {
		t.Errorf("error is %d bytes long: %q", len(err), err)
	}
}
