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
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Queue is one queue of the tree, as input to Compute.
type Queue struct {
	// Name identifies the queue; it must be unique and not empty.
	Name string
	// Parent is the name of the parent queue; "" makes the queue a child
	// of the root.
	Parent string
	// Weight is the queue's share of what is left after its siblings'
	// guarantees, relative to its siblings' weights. A weight <= 0 counts
	// as 1.
	Weight int64
	// Guarantee is reserved for the queue whenever it demands it, before
	// anything is divided by weight.
	Guarantee Vector
	// Limit is a ceiling per resource. A resource absent from Limit is
	// unlimited, so a nil Limit is no limit at all.
	Limit Vector
	// Borrow lets the queue use more than its Entitlement when its
	// siblings leave capacity idle.
	Borrow bool
	// Lend lets the queue's siblings use the part of its Guarantee it does
	// not demand. When false, that part stays reserved for the queue even
	// if it sits idle.
	Lend bool
	// Demand is what the queue's own jobs use plus what they wait for
	// (allocated and pending requests). Only leaf queues should have jobs;
	// the own Demand of a queue with children is added to its subtree's,
	// and what its children leave of its FairShare is what its own jobs
	// may use.
	Demand Vector
}

// Share is the result of Compute for one queue. Zero amounts are left out
// of its vectors.
type Share struct {
	// Name is the queue's name.
	Name string
	// Depth is 1 for a child of the root, 2 for a grandchild, and so on.
	Depth int
	// Parent is the queue's parent, "" for a child of the root.
	Parent string
	// Guarantee is the guarantee actually honoured: min(Guarantee, Limit),
	// scaled down proportionally on every resource where the siblings'
	// guarantees together exceed their parent's share.
	Guarantee Vector
	// Entitlement is the queue's share when every sibling wants
	// everything: Guarantee plus its weighted part of what the siblings'
	// guarantees leave of the parent's share, capped at Limit. It does not
	// depend on anybody's demand at the first level; deeper, it is
	// relative to the parent's FairShare.
	Entitlement Vector
	// Demand is the demand of the queue's subtree (its own and all its
	// descendants', each capped at its own limit), capped at Limit. The
	// sums saturate at math.MaxInt64.
	Demand Vector
	// FairShare is what the queue may use now: its base (the honoured
	// guarantee, or the part of it that it demands if it lends) plus its
	// part of what the bases leave, divided by weighted Dominant Resource
	// Fairness.
	FairShare Vector
}

// Result is the outcome of Compute.
type Result struct {
	// Shares holds the share of every valid queue, by name.
	Shares map[string]*Share
	// Invalid holds the queues that were left out, by name, each with an
	// error naming the queue and its problem: a parent that does not
	// exist, a parent cycle, a duplicate name, a negative amount, or an
	// empty name (under the key ""). The descendants of such a queue are
	// left out too, with an error naming that ancestor.
	Invalid map[string]error
}

// Compute divides capacity, the root's share (everything the scheduler
// may use), among the queues, top-down: every parent's share is divided
// among its children, and a child's FairShare is the share its own
// children divide. Negative amounts in capacity count as 0. Compute does
// not modify its arguments, and it never panics: invalid queues are
// reported in Result.Invalid and the rest is still computed.
func Compute(capacity Vector, queues []Queue) Result {
	result := Result{Shares: map[string]*Share{}, Invalid: map[string]error{}}
	root, order := buildTree(queues, result.Invalid)

	// Subtree demands, bottom-up: order lists parents before children.
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		d := Vector{}
		d.Add(n.q.Demand)
		for _, c := range n.children {
			d.Add(c.demand)
		}
		n.demand = capAt(d, n.q.Limit)
	}

	p := Vector{}
	for name, a := range capacity {
		if a > 0 {
			p[name] = a
		}
	}
	divide(p, root.children)
	for _, n := range order {
		divide(n.share.FairShare, n.children)
		result.Shares[n.q.Name] = n.share
	}
	return result
}

// node is a queue while Compute works on it.
type node struct {
	q        *Queue
	children []*node
	dups     int   // how many more queues have the same name
	selfErr  error // the queue's own problem, if any
	state    uint8 // unvisited, onPath or resolved
	// err says why the queue is left out; nil for a valid queue. culprit
	// is the queue whose own problem left it out, possibly itself, and
	// culpritErr that queue's error.
	err        error
	culprit    string
	culpritErr error
	depth      int
	demand     Vector // the subtree's demand, capped at the limit
	share      *Share
}

const (
	unvisited uint8 = iota
	onPath
	resolved
)

// buildTree validates the queues, reports the invalid ones in invalid,
// and links the valid ones under a root node. It returns the root and the
// valid queues in breadth-first order, so parents come before children;
// siblings keep their input order.
func buildTree(queues []Queue, invalid map[string]error) (*node, []*node) {
	nodes := make(map[string]*node, len(queues))
	var named []*node
	for i := range queues {
		q := &queues[i]
		if q.Name == "" {
			invalid[""] = errors.Join(invalid[""], fmt.Errorf("queue at index %d: empty name", i))
			continue
		}
		if n, ok := nodes[q.Name]; ok {
			n.dups++
			continue
		}
		n := &node{q: q}
		nodes[q.Name] = n
		named = append(named, n)
	}
	for _, n := range named {
		if n.dups > 0 {
			n.selfErr = fmt.Errorf("queue %q: duplicate name (%d queues)", n.q.Name, n.dups+1)
		} else {
			n.selfErr = checkAmounts(n.q)
		}
	}

	// Resolve every queue by walking up its parents until the root, a
	// queue resolved before, a queue with a problem of its own, or a queue
	// already on the walk (a cycle); then settle the walk top-down. Every
	// queue is walked once, so this is linear.
	var path []*node
	for _, start := range named {
		path = path[:0]
		for cur := start; cur.state != resolved; {
			if cur.state == onPath {
				markCycle(path, cur)
				break
			}
			cur.state = onPath
			path = append(path, cur)
			if cur.selfErr != nil {
				cur.fail(cur.selfErr)
				break
			}
			if cur.q.Parent == "" {
				cur.depth = 1
				cur.state = resolved
				break
			}
			parent, ok := nodes[cur.q.Parent]
			if !ok {
				cur.fail(fmt.Errorf("queue %q: parent %q does not exist", cur.q.Name, cur.q.Parent))
				break
			}
			cur = parent
		}
		for i := len(path) - 1; i >= 0; i-- {
			n := path[i]
			if n.state == resolved {
				continue
			}
			parent := nodes[n.q.Parent]
			if parent.err != nil {
				n.err = fmt.Errorf("queue %q: ancestor %q is invalid: %w", n.q.Name, parent.culprit, parent.culpritErr)
				n.culprit, n.culpritErr = parent.culprit, parent.culpritErr
			} else {
				n.depth = parent.depth + 1
			}
			n.state = resolved
		}
	}

	root := &node{}
	for _, n := range named {
		if n.err != nil {
			invalid[n.q.Name] = n.err
			continue
		}
		n.share = &Share{Name: n.q.Name, Depth: n.depth, Parent: n.q.Parent}
		if n.q.Parent == "" {
			root.children = append(root.children, n)
		} else {
			parent := nodes[n.q.Parent]
			parent.children = append(parent.children, n)
		}
	}
	order := append([]*node(nil), root.children...)
	for i := 0; i < len(order); i++ {
		order = append(order, order[i].children...)
	}
	return root, order
}

// fail leaves n out because of its own problem err.
func (n *node) fail(err error) {
	n.err, n.culprit, n.culpritErr = err, n.q.Name, err
	n.state = resolved
}

// markCycle leaves out the queues of the cycle that the walk path closes
// by reaching again its member back.
func markCycle(path []*node, back *node) {
	k := 0
	for path[k] != back {
		k++
	}
	cycle := path[k:]
	for i, n := range cycle {
		n.fail(fmt.Errorf("queue %q: parent cycle %s", n.q.Name, cycleString(cycle, i)))
	}
}

// cycleString renders the cycle from its i-th member along the parent
// links, back to that member: "a -> b -> a". A long cycle is elided in
// the middle, so that the errors of all its members stay linear in size.
func cycleString(cycle []*node, i int) string {
	const maxShown = 8
	var names []string
	for j := 0; j < len(cycle); j++ {
		if len(cycle) > maxShown && j == maxShown-2 {
			names = append(names, fmt.Sprintf("... (%d queues)", len(cycle)))
			j = len(cycle) - 1
		}
		names = append(names, cycle[(i+j)%len(cycle)].q.Name)
	}
	names = append(names, cycle[i].q.Name)
	return strings.Join(names, " -> ")
}

// checkAmounts returns an error naming the first negative amount of q, in
// a stable order, or nil.
func checkAmounts(q *Queue) error {
	for _, f := range []struct {
		what string
		v    Vector
	}{{"guarantee", q.Guarantee}, {"limit", q.Limit}, {"demand", q.Demand}} {
		negative := false
		for _, a := range f.v {
			negative = negative || a < 0
		}
		if !negative {
			continue
		}
		for _, name := range sortedNames(f.v) {
			if a := f.v[name]; a < 0 {
				return fmt.Errorf("queue %q: negative %s %s=%d", q.Name, f.what, name, a)
			}
		}
	}
	return nil
}

// capAt returns v with every amount capped at the same resource's amount
// in limit; a resource absent from limit is not capped.
func capAt(v, limit Vector) Vector {
	for name, l := range limit {
		if a, ok := v[name]; ok && a > l {
			v.set(name, l)
		}
	}
	return v
}

// sortedNames returns the resources that any of vs mentions, sorted.
func sortedNames(vs ...Vector) []v1.ResourceName {
	var names []v1.ResourceName
	for _, v := range vs {
		for name := range v {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// divide divides the parent's share p among its children and fills in
// their Shares. It works on dense n-by-m matrices, row i for the i-th
// child and column j for the j-th resource that p or a child's guarantee
// or demand mentions; all other resources are 0 throughout.
func divide(p Vector, kids []*node) {
	n := len(kids)
	if n == 0 {
		return
	}
	vs := []Vector{p}
	for _, k := range kids {
		vs = append(vs, k.q.Guarantee, k.demand)
	}
	names := sortedNames(vs...)
	m := len(names)

	// One allocation for all the vectors and matrices.
	buf := make([]int64, 4*m+3*n+6*n*m)
	take := func(k int) []int64 {
		s := buf[:k:k]
		buf = buf[k:]
		return s
	}
	P, R, left := take(m), take(m), take(m)
	w, col, out := take(n), take(n), take(n)
	lim, g, d := take(n*m), take(n*m), take(n*m) // lim is math.MaxInt64 where unlimited
	base, e, r := take(n*m), take(n*m), take(n*m)
	for j, name := range names {
		P[j] = p[name]
	}
	for i, k := range kids {
		w[i] = max(k.q.Weight, 1)
		for j, name := range names {
			l, ok := k.q.Limit[name]
			if !ok {
				l = math.MaxInt64
			}
			lim[i*m+j] = l
			g[i*m+j] = min(k.q.Guarantee[name], l)
			d[i*m+j] = k.demand[name]
		}
	}

	// 1. Honoured guarantees, scaled down where they exceed p together.
	for j := range m {
		var sum int64 // at most P[j], so neither it nor P[j]-sum overflows
		exceeded := false
		for i := range n {
			col[i] = g[i*m+j]
			if col[i] > P[j]-sum {
				exceeded = true
			} else {
				sum += col[i]
			}
		}
		if exceeded {
			proportional(col, P[j], out)
			sum = 0
			for i := range n {
				g[i*m+j] = out[i]
				sum += out[i]
			}
		}
		left[j] = P[j] - sum // p minus the honoured guarantees
	}

	// 2.-3. Bases, and what they leave of p.
	copy(R, P)
	for i, k := range kids {
		for j := range m {
			b := g[i*m+j]
			if k.q.Lend {
				b = min(b, d[i*m+j])
			}
			base[i*m+j] = b
			R[j] -= b
		}
	}

	// 4. Entitlements: the guarantee plus the weighted part of what the
	// guarantees leave, capped at the limit.
	for j := range m {
		proportional(w, left[j], out)
		for i := range n {
			e[i*m+j] = min(g[i*m+j]+out[i], lim[i*m+j])
		}
	}

	// 5. Residuals: what each child still wants beyond its base, up to its
	// entitlement if it may not borrow.
	for i, k := range kids {
		for j := range m {
			c := d[i*m+j]
			if !k.q.Borrow {
				c = min(c, max(base[i*m+j], e[i*m+j]))
			}
			r[i*m+j] = max(c-base[i*m+j], 0)
		}
	}

	// 6.-7. Weighted progressive filling of R over the residuals.
	x := fill(P, R, r, w)
	for i, k := range kids {
		s := k.share
		s.Guarantee, s.Entitlement, s.FairShare = make(Vector, m), make(Vector, m), make(Vector, m)
		s.Demand = k.demand.Clone()
		for j, name := range names {
			s.Guarantee.set(name, g[i*m+j])
			s.Entitlement.set(name, e[i*m+j])
			s.FairShare.set(name, base[i*m+j]+x[i*m+j])
		}
	}
}
