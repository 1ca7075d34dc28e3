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

package preemption

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// placeSubGroups places the pending pods of a multi-level job as the
// scheduler's cycle does: sub-group by sub-group, then the pods in no
// sub-group. A sub-group that does not reach its quorum has its
// placements and the victims chosen for them undone at once, since the
// cycle would not bind them, and the next sub-groups may use the room.
// It reports true when a wait may stop early (see waitAccepts), checked
// only where no sub-group is left part placed.
func (sim *simulation) placeSubGroups(ctx context.Context) (bool, error) {
	job := sim.c.Job
	grouped := 0
	for i := range job.SubGroups {
		g := &job.SubGroups[i]
		grouped += len(g.Pending)
		if len(g.Pending) == 0 {
			continue
		}
		if t := g.Topology; t != nil && t.Required && t.Key != "" {
			if err := sim.placeSubGroupWithin(ctx, g, t.Key); err != nil {
				return false, err
			}
			if sim.waitAccepts(ctx) {
				return true, nil
			}
			continue
		}
		mark, start, chosen := len(sim.undo), len(sim.placed), len(sim.order)
		for _, pod := range g.Pending {
			if err := sim.placePod(ctx, pod); err != nil {
				return false, err
			}
		}
		if placed := len(sim.placed) - start; !g.Holds(placed) {
			klog.FromContext(ctx).V(5).Info("Sub-group below its quorum in the preemption simulation; undoing its placements",
				"job", job.ID.String(), "subGroup", g.Key, "minMember", g.MinMember, "bound", g.Bound, "placed", placed, "victims", len(sim.order)-chosen)
			sim.rollback(mark)
		}
		if sim.waitAccepts(ctx) {
			return true, nil
		}
	}
	for _, pod := range job.Pending[grouped:] {
		if err := sim.placePod(ctx, pod); err != nil {
			return false, err
		}
		if sim.waitAccepts(ctx) {
			return true, nil
		}
	}
	return false, nil
}

// subGroupDomainTries bounds the domains a sub-group that must run within
// one domain tries in a simulation: each try is a victim search for its
// pods, so a sub-group that fits in none of a few domains is left out
// rather than searched for across every rack of a large cluster.
const subGroupDomainTries = 3

// placeSubGroupWithin places the pending pods of g, a sub-group that must
// run within one domain of the node label key, as the cycle would: all in
// one domain, among the simulation's nodes. The domain is the one of its
// pods already bound when it has some; otherwise the one its first pod
// lands in, and when the rest do not reach the quorum there, the
// placements and victims are undone and the next try starts outside the
// domains tried (at most subGroupDomainTries). A sub-group that reaches
// its quorum in none is left with nothing placed and nobody evicted for
// it: the cycle would not bind it part within a domain, and victims taken
// in a domain it then does not use would be evicted for nothing.
func (sim *simulation) placeSubGroupWithin(ctx context.Context, g *framework.SubGroup, key string) error {
	scope := sim.nodes
	defer func() { sim.nodes = scope }()
	base := scope
	if base == nil {
		base = sim.snapshot.NodeInfos()
	}
	domainOf := func(node string) (string, bool) {
		n, ok := sim.snapshot.Get(node)
		if !ok || n.Node == nil {
			return "", false
		}
		v, ok := n.Node.Labels[key]
		return v, ok
	}
	within := func(keep func(value string) bool) []*framework.NodeInfo {
		out := make([]*framework.NodeInfo, 0, len(base))
		for _, n := range base {
			if n.Node == nil {
				continue
			}
			if v, ok := n.Node.Labels[key]; ok && keep(v) {
				out = append(out, n)
			}
		}
		return out
	}
	tries, anchor := subGroupDomainTries, ""
	if len(g.PlacedNodes) > 0 {
		// It runs already: it stays in the domain of its pods.
		v, ok := domainOf(g.PlacedNodes[0])
		if !ok {
			return nil
		}
		tries, anchor = 1, v
	}
	tried := map[string]bool{}
	logger := klog.FromContext(ctx)
	for try := 0; try < tries; try++ {
		mark, start := len(sim.undo), len(sim.placed)
		domain := anchor
		if domain != "" {
			sim.nodes = within(func(v string) bool { return v == domain })
		} else {
			sim.nodes = within(func(v string) bool { return !tried[v] })
		}
		if len(sim.nodes) == 0 {
			return nil
		}
		for _, pod := range g.Pending {
			if err := sim.placePod(ctx, pod); err != nil {
				return err
			}
			if domain == "" && len(sim.placed) > start {
				// The first pod placed picks the domain of the rest.
				v, _ := domainOf(sim.placements[string(sim.placed[start].UID)])
				domain = v
				tried[v] = true
				sim.nodes = within(func(v string) bool { return v == domain })
			}
		}
		placed := len(sim.placed) - start
		if g.Holds(placed) {
			return nil
		}
		logger.V(5).Info("Sub-group below its quorum within one domain in the preemption simulation; undoing its placements",
			"job", sim.c.Job.ID.String(), "subGroup", g.Key, "level", key, "domain", domain, "minMember", g.MinMember, "bound", g.Bound, "placed", placed)
		sim.rollback(mark)
		if domain == "" {
			// Not even one pod found a place: no other domain will do.
			return nil
		}
	}
	return nil
}
