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

package allocator

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/held"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// snapshot is the store's grants after a round, by name.
type snapshot map[string]*v1alpha1.Grant

// model is a framework that honours the protocol and nothing more: it
// applies grant versions late (it sees the store as it was after some
// past round), places work adversarially up to the grant version it
// applied, releases work at random, and reports late, sometimes unsynced,
// sometimes not at all.
type model struct {
	name    string
	reports bool                          // has a demand URL
	at      int                           // index of the snapshot it applied
	occ     map[string]resources.Resource // node -> what it occupies
}

// applied is the version of grant name the model applied.
func (m *model) applied(hist []snapshot, name string) *v1alpha1.Grant { return hist[m.at][name] }

// possible is the most m might occupy on node, now or after applying
// any version already published: what it occupies, and every version of
// its grant from the one it applied on.
func (m *model) possible(hist []snapshot, node string) resources.Resource {
	name := m.name + "." + node
	p := m.occ[node]
	for _, s := range hist[m.at:] {
		if g := s[name]; g != nil {
			p = held.Max(p, valueOf(g))
		}
	}
	return p
}

// step moves m's view forward, places or releases work, and makes a
// report.
func (m *model) step(r *rand.Rand, h *harness, hist []snapshot, nodes []string) {
	if r.IntN(2) == 0 {
		m.at += r.IntN(len(hist) - m.at)
	}
	for _, n := range nodes {
		var v resources.Resource
		if g := m.applied(hist, m.name+"."+n); g != nil {
			v = valueOf(g)
		}
		switch r.IntN(10) {
		case 0, 1, 2, 3, 4, 5, 6: // place all the applied version allows
			m.occ[n] = held.Max(m.occ[n], v)
		case 7, 8: // release some
			o := m.occ[n]
			o.MilliCPU = r.Int64N(o.MilliCPU + 1)
			o.Memory = r.Int64N(o.Memory + 1)
			o.Pods = r.Int64N(o.Pods + 1)
			m.occ[n] = o
		}
	}
	if !m.reports {
		return
	}
	switch r.IntN(10) {
	case 0: // unreadable
		h.report(m.name, nil)
	case 1: // not synced: claims to have applied everything, uses nothing
		rep := MakeReport().Unsynced().Acks(h.observed(m.name)).Obj()
		h.report(m.name, rep)
	case 2, 3: // the last report is served again
	default:
		rep := demand.Report{Framework: m.name, Synced: true, Used: map[string]v1.ResourceList{},
			ObservedGrants: map[string]string{}, Time: metav1.NewTime(h.clock)}
		for name, g := range hist[m.at] {
			if g.Spec.Framework == m.name {
				rep.ObservedGrants[name] = g.ResourceVersion
			}
		}
		for n, o := range m.occ {
			if !o.IsZero() {
				rep.Used[n] = o.ToList()
			}
		}
		if r.IntN(2) == 0 {
			rep.Unmet = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(500*(1+r.Int64N(8)), resource.DecimalSI)}
			rep.LargestUnit = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
			rep.Waiting = 1
		}
		h.report(m.name, &rep)
	}
}

// TestNeverOverCommitted runs random sequences of rounds, late and lost
// reports, revocations, weight changes and node growth against
// adversarial frameworks, and checks after every step that on every node
// what the frameworks might occupy sums to at most its allocatable.
func TestNeverOverCommitted(t *testing.T) {
	for seed := range 30 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runNeverOverCommitted(t, uint64(seed)) })
	}
}

func runNeverOverCommitted(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var nodes []*v1.Node
	var nodeNames []string
	for i := range 1 + r.IntN(3) {
		n := makeNode(fmt.Sprint("n", i), fmt.Sprint(2+r.IntN(7)))
		n.Status.Allocatable[v1.ResourcePods] = *resource.NewQuantity(int64(4+r.IntN(8)), resource.DecimalSI)
		nodes = append(nodes, n)
		nodeNames = append(nodeNames, n.Name)
	}
	var models []*model
	reg := &frameworks.File{}
	for i := range 2 + r.IntN(2) {
		m := &model{name: fmt.Sprint("f", i), reports: i == 0 || r.IntN(4) > 0, occ: map[string]resources.Resource{}}
		models = append(models, m)
	}
	s := setup{nodes: nodes, registry: reg, idleTimeout: 2e9}
	if r.IntN(2) == 0 {
		s.stateFile = filepath.Join(t.TempDir(), "state.yaml")
	}
	h := newHarness(t, s)
	h.a.mu.Lock()
	for _, m := range models {
		spec := frameworks.Framework{Name: m.name}
		if m.reports {
			spec.DemandURL = h.url(m.name)
		}
		fw, err := newFramework(spec)
		if err != nil {
			t.Fatal(err)
		}
		h.a.fws[m.name] = fw
	}
	h.a.mu.Unlock()

	hist := []snapshot{{}}
	check := func(when string) {
		t.Helper()
		for _, n := range nodes {
			cur, err := h.a.nodes.Get(n.Name)
			if err != nil {
				t.Fatal(err)
			}
			alloc := resources.FromList(cur.Status.Allocatable)
			var sum resources.Resource
			parts := map[string]resources.Resource{}
			for _, m := range models {
				p := m.possible(hist, n.Name)
				parts[m.name] = p
				sum.Add(p)
			}
			if held.Exceeds(sum, alloc) {
				t.Fatalf("%s: node %s over-committed: frameworks might occupy %s > allocatable %s: %v",
					when, n.Name, sum, alloc, parts)
			}
		}
	}
	for step := range 40 {
		for _, m := range models {
			m.step(r, h, hist, nodeNames)
		}
		check(fmt.Sprintf("step %d, frameworks acted", step))
		switch r.IntN(10) {
		case 0, 1: // revoke or lift a revocation
			k := drf.Key{Framework: models[r.IntN(len(models))].name, Node: nodeNames[r.IntN(len(nodeNames))]}
			h.a.mu.Lock()
			if _, ok := h.a.revoked[k]; ok {
				delete(h.a.revoked, k)
			} else {
				h.a.revoked[k] = "property test"
			}
			h.a.mu.Unlock()
		case 2: // a weight changes
			m := models[r.IntN(len(models))]
			h.a.mu.Lock()
			fw := *h.a.fws[m.name]
			w := 0.5 + 3*r.Float64()
			fw.spec.Weight = &w
			h.a.fws[m.name] = &fw
			h.a.mu.Unlock()
		case 3: // a node grows
			n := nodes[r.IntN(len(nodes))].DeepCopy()
			q := n.Status.Allocatable[v1.ResourceCPU]
			q.Add(resource.MustParse("1"))
			n.Status.Allocatable[v1.ResourceCPU] = q
			nodes = replaceNode(nodes, n)
			h.setNode(n)
		}
		h.round()
		cur := snapshot{}
		objs, _ := h.a.Store().List("")
		for _, o := range objs {
			g := o.(*v1alpha1.Grant)
			cur[g.Name] = g
		}
		hist = append(hist, cur)
		check(fmt.Sprintf("step %d, after the round", step))
	}
	// The protocol must not stall: once revocations are lifted and every
	// framework applies each version at once, reports it and releases its
	// work, every node is wholly granted again within a few rounds.
	for _, m := range models {
		if !m.reports {
			return // it never acknowledges: what it held stays held
		}
	}
	h.a.mu.Lock()
	clear(h.a.revoked)
	h.a.mu.Unlock()
	for range 5 {
		for _, m := range models {
			h.report(m.name, MakeReport().Acks(h.observed(m.name)).Obj())
		}
		h.round()
	}
	for _, n := range nodes {
		var sum int64
		for _, m := range models {
			if c := h.cpu(m.name + "." + n.Name); c > 0 {
				sum += c
			}
		}
		if want := resources.FromList(n.Status.Allocatable).MilliCPU; sum != want {
			t.Errorf("node %s: grants sum to %dm once every framework acknowledged everything, want its %dm", n.Name, sum, want)
		}
	}
}

func replaceNode(nodes []*v1.Node, n *v1.Node) []*v1.Node {
	out := make([]*v1.Node, len(nodes))
	for i, o := range nodes {
		out[i] = o
		if o.Name == n.Name {
			out[i] = n
		}
	}
	return out
}
