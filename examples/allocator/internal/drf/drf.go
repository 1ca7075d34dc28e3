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
	"math"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// maxSteps bounds the progressive filling of one call, so that a report
// asking for a huge demand in tiny units cannot stall a round. Each step
// grants one unit.
const maxSteps = 100000

// Node is a node and the capacity divided on it.
type Node struct {
	// Name is the node's name.
	Name string
	// Allocatable is the node's status.allocatable.
	Allocatable resources.Resource
}

// Framework is a registered framework.
type Framework struct {
	// Name is the framework's name.
	Name string
	// Weight scales the framework's share: with weight 2 it is entitled to
	// twice what a framework of weight 1 gets. Non-positive counts as 1.
	Weight float64
}

// Key names one grant: a framework on a node.
type Key struct {
	Framework string
	Node      string
}

// Grant is the capacity granted to a framework on a node.
type Grant struct {
	// Resources is the capacity granted.
	Resources resources.Resource
	// IdleSince is since when part of the grant (granted − used > 0 for
	// some resource) has been unused without interruption; zero when it
	// is fully used or the framework's usage is not known.
	IdleSince time.Time
}

// Input is everything Allocate decides from.
type Input struct {
	// Nodes are the nodes to divide. Allocate sorts a copy by name.
	Nodes []Node
	// Frameworks are the registered frameworks. Allocate sorts a copy by
	// name.
	Frameworks []Framework
	// Reports holds the latest demand report of each framework that has
	// one. A framework without a report is "unknown": it gets its weighted
	// share of unallocated capacity, is never hungry, and its grants are
	// not taken back since its usage is unknown. A report's demand (Unmet,
	// LargestUnit, LargestGang) always counts; its Used counts only when
	// Synced is true. Without a synced report the framework's usage is
	// unknown: it may be hungry, but it never lends idle capacity, its
	// unused grant is never shed first, and its grant is never raised to
	// its usage.
	Reports map[string]*demand.Report
	// Unreadable holds the frameworks whose demand endpoint could not be
	// read this time: their grants stay exactly as they were.
	Unreadable map[string]bool
	// Previous are the grants of the last call (its Result.Grants).
	Previous map[Key]Grant
	// Revoked are the (framework, node) pairs an administrator revoked:
	// they get nothing.
	Revoked map[Key]bool
	// Held is, per framework and node, the capacity the framework may
	// still occupy whatever its grant now says: a grant version it has
	// not yet been seen to give up, or what it uses. Allocate never plans
	// to hand it to another framework: what is free on a node is its
	// allocatable less, for every framework, the largest of its grant,
	// its reported usage and its held capacity. Frameworks that are not
	// in Frameworks (no longer registered) count too. Lending idle
	// capacity still shrinks the lender's grant; the caller gives it to
	// the borrower only once the lender no longer holds it.
	Held map[Key]resources.Resource
	// Now is the time of this call.
	Now time.Time
	// IdleTimeout is how long part of a grant must have been unused,
	// continuously, before it may be handed to a hungry framework.
	IdleTimeout time.Duration
}

// FrameworkResult is what Allocate found about one framework.
type FrameworkResult struct {
	// Granted is the sum of the framework's grants.
	Granted resources.Resource
	// DominantShare is the largest fraction of any resource of the
	// cluster the framework is granted, divided by its weight.
	DominantShare float64
	// Hungry is true when its report has unmet demand.
	Hungry bool
}

// Result is the allocation.
type Result struct {
	// Grants are the non-zero grants.
	Grants map[Key]Grant
	// Frameworks has an entry for every framework of the Input.
	Frameworks map[string]FrameworkResult
}

// state is Allocate's working set.
type state struct {
	in       Input
	nodes    []Node
	fws      []Framework
	weight   map[string]float64
	alloc    map[string]vec            // node -> allocatable
	grant    map[string]map[string]vec // node -> framework -> granted
	used     map[string]map[string]vec // framework -> node -> used (known reports only)
	sum      map[string]vec            // framework -> total granted
	total    vec                       // cluster allocatable
	revoked  map[Key]bool
	known    map[string]bool           // report read and valid: its demand counts
	usage    map[string]bool           // known, and its report synced: its usage counts
	readable map[string]bool           // not unreadable
	held     map[string]map[string]vec // node -> framework -> held (frameworks of the input)
	heldElse map[string]vec            // node -> held by frameworks not in the input
}

// Allocate computes the grants for in. It is pure and deterministic; see
// the package documentation for the rules.
func Allocate(in Input) Result {
	s := newState(in)
	s.carryOver()
	s.raiseToUsage()
	hungry := s.fill()
	s.baseline()
	return s.result(hungry)
}

func newState(in Input) *state {
	s := &state{
		in:       in,
		nodes:    append([]Node(nil), in.Nodes...),
		fws:      append([]Framework(nil), in.Frameworks...),
		weight:   map[string]float64{},
		alloc:    map[string]vec{},
		grant:    map[string]map[string]vec{},
		used:     map[string]map[string]vec{},
		sum:      map[string]vec{},
		total:    vec{},
		revoked:  map[Key]bool{},
		known:    map[string]bool{},
		usage:    map[string]bool{},
		readable: map[string]bool{},
		held:     map[string]map[string]vec{},
		heldElse: map[string]vec{},
	}
	sort.Slice(s.nodes, func(i, j int) bool { return s.nodes[i].Name < s.nodes[j].Name })
	sort.Slice(s.fws, func(i, j int) bool { return s.fws[i].Name < s.fws[j].Name })
	for k, r := range in.Revoked {
		if r {
			s.revoked[k] = true
		}
	}
	for _, f := range s.fws {
		w := f.Weight
		if !(w > 0) || math.IsInf(w, 0) {
			w = 1
		}
		s.weight[f.Name] = w
		s.sum[f.Name] = vec{}
		s.readable[f.Name] = !in.Unreadable[f.Name]
		s.used[f.Name] = map[string]vec{}
		if r := in.Reports[f.Name]; r != nil && s.readable[f.Name] {
			s.known[f.Name] = true
			if r.Synced {
				s.usage[f.Name] = true
				for node, l := range r.Used {
					s.used[f.Name][node] = listVec(l)
				}
			}
		}
	}
	for _, n := range s.nodes {
		a := toVec(n.Allocatable)
		s.alloc[n.Name] = a
		s.total.add(a)
		s.grant[n.Name] = map[string]vec{}
		s.held[n.Name] = map[string]vec{}
		s.heldElse[n.Name] = vec{}
		for _, f := range s.fws {
			s.grant[n.Name][f.Name] = vec{}
		}
	}
	for k, h := range in.Held {
		if _, ok := s.held[k.Node]; !ok {
			continue // not a node of the input
		}
		if _, ok := s.weight[k.Framework]; ok {
			s.held[k.Node][k.Framework] = toVec(h)
		} else {
			s.heldElse[k.Node].add(toVec(h))
		}
	}
	return s
}

// usedOn is what framework f uses on node (zero when unknown).
func (s *state) usedOn(f, node string) vec {
	if u := s.used[f][node]; u != nil {
		return u
	}
	return vec{}
}

// free is node's allocatable that is neither granted, nor in use, nor
// held. Each framework occupies the largest of its grant, its reported
// usage and its held capacity there: pods still running above a revoked
// or shrunken grant, and a grant version the framework may still apply,
// keep their capacity out of the others' reach until they go.
func (s *state) free(node string) vec {
	f := s.alloc[node].clone()
	for _, fw := range s.fws {
		occ := s.grant[node][fw.Name].max(s.usedOn(fw.Name, node)).max(s.held[node][fw.Name])
		f.sub(occ)
	}
	f.sub(s.heldElse[node])
	return f
}

// carryOver starts from the previous grants of the nodes and frameworks
// still present, leaving out revoked pairs, and brings every node within
// its allocatable.
func (s *state) carryOver() {
	for _, n := range s.nodes {
		for _, f := range s.fws {
			k := Key{Framework: f.Name, Node: n.Name}
			if p, ok := s.in.Previous[k]; ok && !s.revoked[k] {
				s.grant[n.Name][f.Name] = toVec(p.Resources)
			}
		}
		s.capNode(n.Name)
	}
}

// capNode shrinks the grants on node until they sum to at most its
// allocatable: first what known frameworks leave unused, then, if the
// node shrank below its usage, anything (frameworks by name).
func (s *state) capNode(node string) {
	excess := vec{}
	for _, g := range s.grant[node] {
		excess.add(g)
	}
	excess.sub(s.alloc[node])
	if len(excess) == 0 {
		return
	}
	for _, pass := range []bool{true, false} {
		for _, f := range s.fws {
			g := s.grant[node][f.Name]
			take := g
			if pass {
				if !s.usage[f.Name] {
					continue
				}
				take = g.minus(s.usedOn(f.Name, node))
			}
			t := take.min(excess)
			g.sub(t)
			excess.sub(t)
		}
	}
}

// raiseToUsage raises each known framework's grant to its usage, as far
// as the node's free capacity allows.
func (s *state) raiseToUsage() {
	for _, n := range s.nodes {
		free := s.free(n.Name)
		for _, f := range s.fws {
			k := Key{Framework: f.Name, Node: n.Name}
			if !s.usage[f.Name] || s.revoked[k] {
				continue
			}
			g := s.grant[n.Name][f.Name]
			t := s.usedOn(f.Name, n.Name).minus(g).min(free)
			g.add(t)
			free.sub(t)
		}
	}
}

// share is f's weighted dominant share of the cluster.
func (s *state) share(f string) float64 {
	var m float64
	for r, q := range s.sum[f] {
		if t := s.total[r]; t > 0 {
			m = max(m, float64(q)/float64(t))
		}
	}
	return m / s.weight[f]
}

func (s *state) computeSums() {
	for _, f := range s.fws {
		sum := vec{}
		for _, n := range s.nodes {
			sum.add(s.grant[n.Name][f.Name])
		}
		s.sum[f.Name] = sum
	}
}

// fill hands free and idle capacity to hungry frameworks by progressive
// filling, and returns the set of hungry frameworks.
func (s *state) fill() map[string]bool {
	s.computeSums()
	hungry := map[string]bool{}
	remaining := map[string]vec{}
	var active []string // sorted by name, as s.fws
	for _, f := range s.fws {
		if !s.known[f.Name] {
			continue
		}
		if u := listVec(s.in.Reports[f.Name].Unmet); len(u) > 0 {
			hungry[f.Name] = true
			remaining[f.Name] = u
			active = append(active, f.Name)
		}
	}
	if len(active) == 0 {
		return hungry
	}
	// What may be handed out on each node: the free capacity, and the
	// long-idle part of non-hungry known frameworks' grants (lend).
	free := map[string]vec{}
	lend := map[string]map[string]vec{}
	avail := map[string]vec{}
	// spare is each hungry framework's own unused grant per node: a unit
	// placed there needs only what the spare does not cover.
	spare := map[string]map[string]vec{}
	for _, f := range active {
		spare[f] = map[string]vec{}
		for _, n := range s.nodes {
			if sp := s.grant[n.Name][f].minus(s.usedOn(f, n.Name)); len(sp) > 0 {
				spare[f][n.Name] = sp
			}
		}
	}
	for _, n := range s.nodes {
		free[n.Name] = s.free(n.Name)
		avail[n.Name] = free[n.Name].clone()
		lend[n.Name] = map[string]vec{}
		for _, f := range s.fws {
			k := Key{Framework: f.Name, Node: n.Name}
			p, ok := s.in.Previous[k]
			if !s.usage[f.Name] || hungry[f.Name] || !ok || p.IdleSince.IsZero() ||
				s.in.Now.Sub(p.IdleSince) <= s.in.IdleTimeout {
				continue
			}
			l := s.grant[n.Name][f.Name].minus(s.usedOn(f.Name, n.Name))
			if len(l) > 0 {
				lend[n.Name][f.Name] = l
				avail[n.Name].add(l)
			}
		}
	}
	for step := 0; step < maxSteps && len(active) > 0; step++ {
		// The hungry framework with the lowest weighted dominant share;
		// ties go to the first by name.
		pick, best := 0, s.share(active[0])
		for i := 1; i < len(active); i++ {
			if sh := s.share(active[i]); sh < best {
				pick, best = i, sh
			}
		}
		f := active[pick]
		node, unit := s.place(f, remaining[f], avail, spare[f])
		if node == "" {
			active = append(active[:pick], active[pick+1:]...)
			continue
		}
		fromSpare := unit.min(spare[f][node])
		need := unit.minus(fromSpare)
		if sp := spare[f][node]; sp != nil {
			sp.sub(fromSpare)
		}
		s.take(node, f, need, free[node], lend[node])
		avail[node].sub(need)
		remaining[f].sub(unit)
		if len(remaining[f]) == 0 {
			active = append(active[:pick], active[pick+1:]...)
		}
	}
	return hungry
}

// place chooses where hungry framework f gets its next unit: the first
// node (by name) where the unit fits in what is available there plus f's
// own unused grant (spare), preferring nodes where f's largest waiting
// gang would fit whole, and never on a node where f's grant is revoked.
// It returns "" if no node fits.
func (s *state) place(f string, remaining vec, avail, spare map[string]vec) (string, vec) {
	r := s.in.Reports[f]
	largest := listVec(r.LargestUnit)
	if !largest.overlaps(remaining) {
		largest = nil
	}
	unitOn := func(node string) vec {
		room := avail[node].clone()
		room.add(spare[node])
		if largest != nil {
			if room.fits(largest) {
				return largest
			}
			return nil
		}
		u := remaining.min(room)
		if len(u) == 0 || !u.covers(remaining) {
			return nil
		}
		return u
	}
	if r.LargestGang != nil {
		gang := listVec(r.LargestGang.Total)
		for _, n := range s.nodes {
			if s.revoked[Key{Framework: f, Node: n.Name}] {
				continue
			}
			// f's whole unused grant there counts, including what this
			// round has given it so far.
			room := avail[n.Name].clone()
			room.add(s.grant[n.Name][f].minus(s.usedOn(f, n.Name)))
			if len(gang) > 0 && room.fits(gang) {
				if u := unitOn(n.Name); u != nil {
					return n.Name, u
				}
			}
		}
	}
	for _, n := range s.nodes {
		if s.revoked[Key{Framework: f, Node: n.Name}] {
			continue
		}
		if u := unitOn(n.Name); u != nil {
			return n.Name, u
		}
	}
	return "", nil
}

// take grants unit on node to f, from the free capacity first, then from
// the lenders' idle capacity, the lender with the highest weighted
// dominant share first (ties by name).
func (s *state) take(node, f string, unit, free vec, lend map[string]vec) {
	rest := unit.minus(free)
	free.sub(unit)
	if len(rest) > 0 {
		lenders := make([]string, 0, len(lend))
		for l := range lend {
			lenders = append(lenders, l)
		}
		sort.Slice(lenders, func(i, j int) bool {
			si, sj := s.share(lenders[i]), s.share(lenders[j])
			if si != sj {
				return si > sj
			}
			return lenders[i] < lenders[j]
		})
		for _, l := range lenders {
			t := rest.min(lend[l])
			lend[l].sub(t)
			s.grant[node][l].sub(t)
			s.sum[l].sub(t)
			rest.sub(t)
		}
	}
	s.grant[node][f].add(unit)
	s.sum[f].add(unit)
}

// baseline divides what is still unallocated on each node among the
// frameworks that may receive it, in proportion to their weights. The
// remainder of the integer division goes one unit at a time to the
// frameworks in name order.
func (s *state) baseline() {
	for _, n := range s.nodes {
		var eligible []string
		var total float64
		for _, f := range s.fws {
			if s.readable[f.Name] && !s.revoked[Key{Framework: f.Name, Node: n.Name}] {
				eligible = append(eligible, f.Name)
				total += s.weight[f.Name]
			}
		}
		if len(eligible) == 0 {
			continue
		}
		free := s.free(n.Name)
		names := make([]v1.ResourceName, 0, len(free))
		for r := range free {
			names = append(names, r)
		}
		sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
		for _, r := range names {
			q := free[r]
			left := q
			for _, f := range eligible {
				part := int64(math.Floor(float64(q) * s.weight[f] / total))
				part = min(part, left)
				s.grant[n.Name][f].put(r, s.grant[n.Name][f][r]+part)
				left -= part
			}
			for i := 0; left > 0; i = (i + 1) % len(eligible) {
				g := s.grant[n.Name][eligible[i]]
				g.put(r, g[r]+1)
				left--
			}
		}
	}
}

func (s *state) result(hungry map[string]bool) Result {
	s.computeSums()
	res := Result{Grants: map[Key]Grant{}, Frameworks: map[string]FrameworkResult{}}
	for _, f := range s.fws {
		res.Frameworks[f.Name] = FrameworkResult{
			Granted:       s.sum[f.Name].resource(),
			DominantShare: s.share(f.Name),
			Hungry:        hungry[f.Name],
		}
	}
	for _, n := range s.nodes {
		for _, f := range s.fws {
			g := s.grant[n.Name][f.Name]
			if len(g) == 0 {
				continue
			}
			k := Key{Framework: f.Name, Node: n.Name}
			out := Grant{Resources: g.resource()}
			prev, had := s.in.Previous[k]
			switch {
			case !s.readable[f.Name]:
				out.IdleSince = prev.IdleSince
			case s.usage[f.Name] && len(g.minus(s.usedOn(f.Name, n.Name))) > 0:
				out.IdleSince = s.in.Now
				if had && !prev.IdleSince.IsZero() {
					out.IdleSince = prev.IdleSince
				}
			}
			res.Grants[k] = out
		}
	}
	return res
}
