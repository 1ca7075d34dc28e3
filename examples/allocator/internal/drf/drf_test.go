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

package drf

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// res builds a Resource from cpu (cores, as a quantity string) and memory.
func res(cpu, memory string) resources.Resource {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[v1.ResourceMemory] = resource.MustParse(memory)
	}
	return resources.FromList(l)
}

func list(cpu, memory string) v1.ResourceList { return res(cpu, memory).ToList() }

func node(name, cpu, memory string) Node { return Node{Name: name, Allocatable: res(cpu, memory)} }

func key(f, n string) Key { return Key{Framework: f, Node: n} }

// want is an expected grant by "framework.node": cpu and memory.
type want map[string][2]string

func check(t *testing.T, got Result, w want) {
	t.Helper()
	for k, g := range got.Grants {
		name := k.Framework + "." + k.Node
		e, ok := w[name]
		if !ok {
			t.Errorf("unexpected grant %s: %s", name, g.Resources)
			continue
		}
		if exp := res(e[0], e[1]); !reflect.DeepEqual(toVec(g.Resources), toVec(exp)) {
			t.Errorf("grant %s = %s, want %s", name, g.Resources, exp)
		}
	}
	for name := range w {
		found := false
		for k := range got.Grants {
			found = found || k.Framework+"."+k.Node == name
		}
		if !found {
			t.Errorf("grant %s missing", name)
		}
	}
}

// prev turns a want into previous grants, all idle since idleSince (zero:
// not idle).
func prev(w want, idleSince time.Time) map[Key]Grant {
	p := map[Key]Grant{}
	for name, e := range w {
		var f, n string
		for i := range name {
			if name[i] == '.' {
				f, n = name[:i], name[i+1:]
				break
			}
		}
		p[key(f, n)] = Grant{Resources: res(e[0], e[1]), IdleSince: idleSince}
	}
	return p
}

func TestAllocate(t *testing.T) {
	fws11 := []Framework{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}
	hungryCPU := func(unmet, unit string) *demand.Report {
		return &demand.Report{Unmet: list(unmet, ""), LargestUnit: list(unit, "")}
	}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "baseline 1:1 on each node",
			in: Input{
				Nodes:      []Node{node("n2", "2", "2Gi"), node("n1", "4", "8Gi")},
				Frameworks: fws11,
			},
			want: want{"a.n1": {"2", "4Gi"}, "b.n1": {"2", "4Gi"}, "a.n2": {"1", "1Gi"}, "b.n2": {"1", "1Gi"}},
		},
		{
			name: "baseline 2:1",
			in: Input{
				Nodes:      []Node{node("n1", "3", "3Gi")},
				Frameworks: []Framework{{Name: "a", Weight: 2}, {Name: "b", Weight: 1}},
			},
			want: want{"a.n1": {"2", "2Gi"}, "b.n1": {"1", "1Gi"}},
		},
		{
			name: "baseline 1:3 with odd amounts: remainder in name order, sum exact",
			in: Input{
				Nodes:      []Node{node("n1", "1001m", "")},
				Frameworks: []Framework{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}},
			},
			want: want{"a.n1": {"251m", ""}, "b.n1": {"750m", ""}},
		},
		{
			name: "baseline after reported usage",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
				},
			},
			want: want{"a.n1": {"2500m", ""}, "b.n1": {"1500m", ""}},
		},
		{
			name: "DRF example of the paper: A gets 3 tasks, B 2",
			in: Input{
				Nodes:      []Node{node("n1", "9", "18Gi")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Unmet: list("100", "400Gi"), LargestUnit: list("1", "4Gi")},
					"b": {Unmet: list("300", "100Gi"), LargestUnit: list("3", "1Gi")},
				},
			},
			// The 4Gi left over are split 1:1 by the baseline.
			want: want{"a.n1": {"3", "14Gi"}, "b.n1": {"6", "4Gi"}},
		},
		{
			name: "weighted DRF: weight 2 fills twice as far",
			in: Input{
				Nodes:      []Node{node("n1", "9", "")},
				Frameworks: []Framework{{Name: "a", Weight: 2}, {Name: "b", Weight: 1}},
				Reports: map[string]*demand.Report{
					"a": hungryCPU("100", "1"),
					"b": hungryCPU("100", "1"),
				},
			},
			want: want{"a.n1": {"6", ""}, "b.n1": {"3", ""}},
		},
		{
			name: "idle capacity moves to the hungry after the idle timeout, usage stays",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
					"b": hungryCPU("3", "1"),
				},
				Previous:    prev(want{"a.n1": {"3", ""}, "b.n1": {"1", ""}}, now.Add(-31*time.Second)),
				IdleTimeout: 30 * time.Second,
			},
			want: want{"a.n1": {"1", ""}, "b.n1": {"3", ""}},
		},
		{
			name: "idle capacity stays before the idle timeout",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
					"b": hungryCPU("3", "1"),
				},
				Previous:    prev(want{"a.n1": {"3", ""}, "b.n1": {"1", ""}}, now.Add(-30*time.Second)),
				IdleTimeout: 30 * time.Second,
			},
			want: want{"a.n1": {"3", ""}, "b.n1": {"1", ""}},
		},
		{
			name: "usage is never taken, even for a hungry framework",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("3", "")}},
					"b": hungryCPU("10", ""),
				},
				Previous:    prev(want{"a.n1": {"3", ""}, "b.n1": {"1", ""}}, now.Add(-time.Hour)),
				IdleTimeout: 30 * time.Second,
			},
			want: want{"a.n1": {"3", ""}, "b.n1": {"1", ""}},
		},
		{
			name: "nothing moves from one hungry framework to another",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": hungryCPU("1", "1"),
					"b": hungryCPU("10", "1"),
				},
				Previous:    prev(want{"a.n1": {"3", ""}, "b.n1": {"1", ""}}, now.Add(-time.Hour)),
				IdleTimeout: time.Second,
			},
			want: want{"a.n1": {"3", ""}, "b.n1": {"1", ""}},
		},
		{
			name: "an unreadable framework keeps its grants, idle or not",
			in: Input{
				Nodes:      []Node{node("n1", "6", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {},
					"b": hungryCPU("10", "1"),
				},
				Unreadable:  map[string]bool{"a": true},
				Previous:    prev(want{"a.n1": {"3", ""}, "b.n1": {"1", ""}}, now.Add(-time.Hour)),
				IdleTimeout: time.Second,
			},
			// The 2 unallocated go to b, not to a.
			want: want{"a.n1": {"3", ""}, "b.n1": {"3", ""}},
		},
		{
			name: "a revoked pair gets nothing, the others divide the node",
			in: Input{
				Nodes:      []Node{node("n1", "4", ""), node("n2", "4", "")},
				Frameworks: fws11,
				Revoked:    map[Key]bool{key("a", "n1"): true},
				Previous:   prev(want{"a.n1": {"2", ""}, "b.n1": {"2", ""}}, time.Time{}),
			},
			want: want{"b.n1": {"4", ""}, "a.n2": {"2", ""}, "b.n2": {"2", ""}},
		},
		{
			name: "a shrunken node sheds idle capacity first",
			in: Input{
				Nodes:      []Node{node("n1", "2", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
					"b": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
				},
				Previous: prev(want{"a.n1": {"2", ""}, "b.n1": {"2", ""}}, time.Time{}),
			},
			want: want{"a.n1": {"1", ""}, "b.n1": {"1", ""}},
		},
		{
			name: "deleted nodes and frameworks lose their grants",
			in: Input{
				Nodes:      []Node{node("n1", "2", "")},
				Frameworks: []Framework{{Name: "a", Weight: 1}},
				Previous:   prev(want{"a.n1": {"1", ""}, "b.n1": {"1", ""}, "a.gone": {"5", ""}}, time.Time{}),
			},
			want: want{"a.n1": {"2", ""}},
		},
		{
			name: "a unit goes to the first node where it fits",
			in: Input{
				Nodes:      []Node{node("n1", "1", ""), node("n2", "4", "")},
				Frameworks: fws11,
				Reports:    map[string]*demand.Report{"a": {}, "b": hungryCPU("2", "2")},
				Previous:   prev(want{"a.n1": {"1", ""}, "a.n2": {"2", ""}}, time.Time{}),
			},
			want: want{"a.n1": {"1", ""}, "a.n2": {"2", ""}, "b.n2": {"2", ""}},
		},
		{
			name: "without a largest unit, what is free up to the unmet demand",
			in: Input{
				Nodes:      []Node{node("n1", "1", ""), node("n2", "4", "")},
				Frameworks: fws11,
				Reports:    map[string]*demand.Report{"a": {}, "b": {Unmet: list("2500m", "")}},
				Previous:   prev(want{"a.n1": {"500m", ""}, "a.n2": {"2", ""}}, time.Time{}),
			},
			want: want{"a.n1": {"500m", ""}, "b.n1": {"500m", ""}, "a.n2": {"2", ""}, "b.n2": {"2", ""}},
		},
		{
			// batch's own 334m left unused plus idle's long-idle 2666m
			// make the 3-cpu unit: only the part batch lacks moves.
			name: "a unit counts the framework's own unused grant on the node",
			in: Input{
				Nodes:      []Node{node("n1", "8", "")},
				Frameworks: []Framework{{Name: "batch", Weight: 2}, {Name: "idle", Weight: 1}},
				Reports: map[string]*demand.Report{
					"batch": {Unmet: list("3", ""), LargestUnit: list("3", ""), Synced: true, Used: map[string]v1.ResourceList{"n1": list("5", "")}},
					"idle":  {Synced: true},
				},
				Previous:    prev(want{"batch.n1": {"5334m", ""}, "idle.n1": {"2666m", ""}}, now.Add(-time.Hour)),
				IdleTimeout: time.Minute,
			},
			want: want{"batch.n1": {"8", ""}},
		},
		{
			// a's grant is revoked but its pods still run there: b, hungry,
			// gets only what neither holds nor uses.
			name: "capacity still in use under a revoked grant is not handed out",
			in: Input{
				Nodes:      []Node{node("n1", "8", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("3", "")}},
					"b": {Unmet: list("8", ""), LargestUnit: list("1", ""), Synced: true, Used: map[string]v1.ResourceList{"n1": list("4", "")}},
				},
				Previous:    prev(want{"a.n1": {"4", ""}, "b.n1": {"4", ""}}, now.Add(-time.Hour)),
				Revoked:     map[Key]bool{key("a", "n1"): true},
				IdleTimeout: time.Minute,
			},
			want: want{"b.n1": {"5", ""}},
		},
		{
			// With spare of its own that covers the unit, nothing moves.
			name: "spare of its own is used before anyone else's",
			in: Input{
				Nodes:      []Node{node("n1", "8", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Unmet: list("2", ""), LargestUnit: list("1", ""), Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
					"b": {},
				},
				Previous:    prev(want{"a.n1": {"4", ""}, "b.n1": {"4", ""}}, now.Add(-time.Hour)),
				IdleTimeout: time.Minute,
			},
			want: want{"a.n1": {"4", ""}, "b.n1": {"4", ""}},
		},
		{
			name: "a node where the largest gang fits whole is preferred",
			in: Input{
				Nodes:      []Node{node("n1", "2", ""), node("n2", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{"a": {}, "b": {
					Unmet: list("4", ""), LargestUnit: list("1", ""),
					LargestGang: &demand.Gang{Name: "ns/g", Members: 4, MinMember: 4, Total: list("4", "")},
				}},
				Previous: prev(want{"a.n1": {"0", ""}, "a.n2": {"0", ""}}, time.Time{}),
			},
			// Without the preference b would get 2 on n1 and 2 on n2.
			want: want{"b.n2": {"4", ""}, "a.n1": {"1", ""}, "b.n1": {"1", ""}},
		},
		{
			// a's grant shrank to 1 but a may still apply its old 3.
			name: "held capacity is not divided by the baseline",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Previous:   prev(want{"a.n1": {"1", ""}}, time.Time{}),
				Held:       map[Key]resources.Resource{key("a", "n1"): res("3", "")},
			},
			want: want{"a.n1": {"1500m", ""}, "b.n1": {"500m", ""}},
		},
		{
			name: "held capacity is not given to the hungry",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports:    map[string]*demand.Report{"a": {Synced: true}, "b": hungryCPU("4", "1")},
				Previous:   prev(want{"a.n1": {"1", ""}}, time.Time{}),
				Held:       map[Key]resources.Resource{key("a", "n1"): res("3", "")},
			},
			want: want{"a.n1": {"1", ""}, "b.n1": {"1", ""}},
		},
		{
			name: "what a framework no longer registered holds counts",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Held:       map[Key]resources.Resource{key("gone", "n1"): res("2", ""), key("a", "elsewhere"): res("9", "")},
			},
			want: want{"a.n1": {"1", ""}, "b.n1": {"1", ""}},
		},
		{
			name: "a report that is not synced still makes its framework hungry",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Unmet: list("2", ""), LargestUnit: list("1", "")},
					"b": {Synced: true},
				},
				Previous:    prev(want{"a.n1": {"1", ""}, "b.n1": {"3", ""}}, now.Add(-time.Hour)),
				IdleTimeout: time.Second,
			},
			// One unit in a's own grant, one lent by b.
			want: want{"a.n1": {"2", ""}, "b.n1": {"2", ""}},
		},
		{
			name: "a framework whose report is not synced lends nothing",
			in: Input{
				Nodes:      []Node{node("n1", "4", "")},
				Frameworks: fws11,
				Reports: map[string]*demand.Report{
					"a": {Used: map[string]v1.ResourceList{"n1": list("1", "")}},
					"b": {Synced: true, Unmet: list("3", ""), LargestUnit: list("1", ""), Used: map[string]v1.ResourceList{"n1": list("1", "")}},
				},
				Previous:    prev(want{"a.n1": {"3", ""}, "b.n1": {"1", ""}}, now.Add(-time.Hour)),
				IdleTimeout: time.Second,
			},
			want: want{"a.n1": {"3", ""}, "b.n1": {"1", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			got := Allocate(tt.in)
			check(t, got, tt.want)
			checkInvariants(t, tt.in, got)
		})
	}
}

// checkInvariants checks what holds for every input: grants on a node sum
// to at most its allocatable, and a known framework's usage is never
// taken below what it was granted before.
func checkInvariants(t *testing.T, in Input, got Result) {
	t.Helper()
	for _, n := range in.Nodes {
		sum := vec{}
		for k, g := range got.Grants {
			if k.Node == n.Name {
				sum.add(toVec(g.Resources))
			}
		}
		if !toVec(n.Allocatable).fits(sum) {
			t.Errorf("node %s: grants sum to %s, above allocatable %s", n.Name, sum.resource(), n.Allocatable)
		}
	}
	for k, p := range in.Previous {
		r := in.Reports[k.Framework]
		if r == nil || in.Unreadable[k.Framework] || in.Revoked[k] {
			continue
		}
		nodeThere, fwThere := false, false
		for _, n := range in.Nodes {
			nodeThere = nodeThere || n.Name == k.Node
		}
		for _, f := range in.Frameworks {
			fwThere = fwThere || f.Name == k.Framework
		}
		if !nodeThere || !fwThere {
			continue
		}
		// What was granted and used must stay granted (as long as the
		// node did not shrink below its usage, which the inputs here
		// never do).
		if !r.Synced {
			continue // its usage is unknown
		}
		kept := toVec(p.Resources).min(listVec(r.Used[k.Node]))
		if g := toVec(got.Grants[k].Resources); !g.fits(kept) {
			t.Errorf("grant %v = %s dropped below the usage %s it had", k, g.resource(), kept.resource())
		}
	}
	for k, g := range got.Grants {
		if len(toVec(g.Resources)) == 0 {
			t.Errorf("grant %v is zero but listed", k)
		}
	}
}

func TestIdleSince(t *testing.T) {
	in := Input{
		Nodes:      []Node{node("n1", "4", "")},
		Frameworks: []Framework{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}},
		Reports: map[string]*demand.Report{
			"a": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
			"b": {Synced: true, Used: map[string]v1.ResourceList{"n1": list("1", "")}},
		},
		Previous: map[Key]Grant{
			key("a", "n1"): {Resources: res("1", ""), IdleSince: now.Add(-time.Minute)},
			key("b", "n1"): {Resources: res("2", ""), IdleSince: now.Add(-time.Minute)},
			key("c", "n1"): {Resources: res("1", "")},
		},
		Now: now,
	}
	got := Allocate(in)
	for _, tt := range []struct {
		fw   string
		want time.Time
	}{
		{"a", time.Time{}},           // fully used: not idle
		{"b", now.Add(-time.Minute)}, // still idle: keeps the time
		{"c", time.Time{}},           // usage unknown
	} {
		if g := got.Grants[key(tt.fw, "n1")]; !g.IdleSince.Equal(tt.want) {
			t.Errorf("%s: IdleSince = %v, want %v", tt.fw, g.IdleSince, tt.want)
		}
	}
	// A grant that becomes idle starts its clock now.
	in.Previous[key("a", "n1")] = Grant{Resources: res("2", "")}
	in.Previous[key("b", "n1")] = Grant{Resources: res("1", "")}
	got = Allocate(in)
	if g := got.Grants[key("a", "n1")]; !g.IdleSince.Equal(now) {
		t.Errorf("a: IdleSince = %v, want now", g.IdleSince)
	}
}

func TestResultFrameworks(t *testing.T) {
	got := Allocate(Input{
		Nodes:      []Node{node("n1", "4", "8Gi")},
		Frameworks: []Framework{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}},
		Reports:    map[string]*demand.Report{"b": {Unmet: list("100", "")}},
		Now:        now,
	})
	a, b := got.Frameworks["a"], got.Frameworks["b"]
	if a.Hungry || !b.Hungry {
		t.Errorf("hungry: a %v, b %v; want only b", a.Hungry, b.Hungry)
	}
	// b took the whole CPU (100% / weight 3); the memory nobody asked for
	// is split 1:3, so a has a quarter of it.
	if a.DominantShare != 0.25 || b.DominantShare != 1.0/3 {
		t.Errorf("dominant shares a %v, b %v; want 0.25, 0.333", a.DominantShare, b.DominantShare)
	}
}

// randomInput builds a random but valid input.
func randomInput(r *rand.Rand) Input {
	in := Input{Now: now, IdleTimeout: time.Duration(r.IntN(3)) * time.Minute,
		Reports: map[string]*demand.Report{}, Unreadable: map[string]bool{},
		Previous: map[Key]Grant{}, Revoked: map[Key]bool{}}
	for i := range r.IntN(5) + 1 {
		in.Nodes = append(in.Nodes, Node{Name: fmt.Sprintf("n%d", i), Allocatable: resources.Resource{
			MilliCPU: r.Int64N(16000), Memory: r.Int64N(64 << 30), Pods: r.Int64N(20),
			Scalar: map[v1.ResourceName]int64{"example.com/gpu": r.Int64N(4)}}})
	}
	some := func(max int64) resources.Resource {
		return resources.Resource{MilliCPU: r.Int64N(max), Memory: r.Int64N(max << 22), Pods: r.Int64N(3)}
	}
	for i := range r.IntN(4) + 1 {
		f := fmt.Sprintf("f%d", i)
		in.Frameworks = append(in.Frameworks, Framework{Name: f, Weight: float64(r.IntN(4)) + r.Float64()})
		switch r.IntN(4) {
		case 0: // unknown
		case 1:
			in.Unreadable[f] = true
			in.Reports[f] = &demand.Report{}
		default:
			rep := &demand.Report{Synced: r.IntN(4) > 0, Used: map[string]v1.ResourceList{}}
			if r.IntN(2) == 0 {
				rep.Unmet = some(20000).ToList()
				if r.IntN(2) == 0 {
					rep.LargestUnit = some(3000).ToList()
				}
			}
			in.Reports[f] = rep
		}
	}
	// Previous grants that fit each node, with usage within them.
	for _, n := range in.Nodes {
		left := toVec(n.Allocatable)
		for _, f := range in.Frameworks {
			k := key(f.Name, n.Name)
			g := toVec(some(8000)).min(left)
			left.sub(g)
			var idle time.Time
			if r.IntN(2) == 0 {
				idle = now.Add(-time.Duration(r.IntN(240)) * time.Second)
			}
			in.Previous[k] = Grant{Resources: g.resource(), IdleSince: idle}
			if rep := in.Reports[f.Name]; rep != nil && rep.Used != nil {
				u := toVec(some(8000)).min(g)
				rep.Used[n.Name] = u.resource().ToList()
			}
			if r.IntN(10) == 0 {
				in.Revoked[k] = true
			}
		}
	}
	return in
}

func TestAllocateProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		in := randomInput(r)
		got := Allocate(in)
		checkInvariants(t, in, got)
		if again := Allocate(in); !reflect.DeepEqual(got, again) {
			t.Fatalf("input %d: two calls differ:\n%+v\n%+v", i, got, again)
		}
		for k, g := range got.Grants {
			if in.Revoked[k] {
				t.Errorf("input %d: revoked %v granted %s", i, k, g.Resources)
			}
			if in.Unreadable[k.Framework] {
				if p := in.Previous[k]; !reflect.DeepEqual(toVec(p.Resources), toVec(g.Resources)) {
					t.Errorf("input %d: unreadable %v changed from %s to %s", i, k, p.Resources, g.Resources)
				}
			}
		}
		if t.Failed() {
			t.Fatalf("input %d: %+v", i, in)
		}
	}
}

// Without lending (nothing idle), no framework is planned into capacity
// another holds: on every node, the largest of each framework's grant,
// usage and held capacity sums to at most allocatable, given that it did
// before.
func TestAllocateRespectsHeld(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		in := randomInput(r)
		in.Held = map[Key]resources.Resource{}
		for k, p := range in.Previous {
			p.IdleSince = time.Time{}
			in.Previous[k] = p
		}
		occupied := func(k Key, g vec) vec {
			o := g.max(toVec(in.Held[k]))
			if rep := in.Reports[k.Framework]; rep != nil && rep.Synced && !in.Unreadable[k.Framework] {
				o = o.max(listVec(rep.Used[k.Node]))
			}
			return o
		}
		// Held beyond the previous grants, within what each node has left.
		for _, n := range in.Nodes {
			left := toVec(n.Allocatable)
			for _, f := range in.Frameworks {
				left.sub(toVec(in.Previous[key(f.Name, n.Name)].Resources))
			}
			for _, f := range in.Frameworks {
				k := key(f.Name, n.Name)
				extra := toVec(resources.Resource{MilliCPU: r.Int64N(4000), Memory: r.Int64N(4 << 30)}).min(left)
				left.sub(extra)
				h := toVec(in.Previous[k].Resources)
				h.add(extra)
				in.Held[k] = h.resource()
			}
		}
		got := Allocate(in)
		for _, n := range in.Nodes {
			sum := vec{}
			for _, f := range in.Frameworks {
				k := key(f.Name, n.Name)
				sum.add(occupied(k, toVec(got.Grants[k].Resources)))
			}
			if !toVec(n.Allocatable).fits(sum) {
				t.Fatalf("input %d: node %s: grants, usage and held capacity sum to %s, above allocatable %s\n%+v",
					i, n.Name, sum.resource(), n.Allocatable, in)
			}
		}
	}
}
