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

package scheduler

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// placeSubGroups places the pending pods of a multi-level job (one with
// sub-groups, see framework.SplitSubGroups) over the nodes of the
// current attempt: sub-group by sub-group, each within a domain of its
// own topology level when it has one (asked of the Placement plugins
// with the sub-group as the job, over the whole's nodes, so the domain
// is nested in the whole's), then the pods in no sub-group. A sub-group
// that does not reach its quorum gives its room back at once: never a
// sub-gang below its quorum, and the next sub-group may use the room.
// Whether enough sub-groups reached theirs is the Permit plugins' call.
func (s *Scheduler) placeSubGroups(ctx context.Context, c *cycle) error {
	whole := c.nodes
	defer func() { c.nodes = whole }()
	grouped := 0
	for i := range c.job.SubGroups {
		g := &c.job.SubGroups[i]
		grouped += len(g.Pending)
		if len(g.Pending) == 0 {
			continue
		}
		if err := s.placeSubGroup(ctx, c, g, whole); err != nil {
			return err
		}
	}
	c.nodes = whole
	for _, pod := range c.job.Pending[grouped:] {
		if err := s.placePod(ctx, c, pod); err != nil {
			return err
		}
	}
	return nil
}

// placeSubGroup places g's pending pods within whole (nil: all nodes):
// in each domain its topology proposes, in turn, until one holds its
// quorum; without a topology, over whole. Below its quorum everywhere,
// its placements are undone and its pods say why.
func (s *Scheduler) placeSubGroup(ctx context.Context, c *cycle, g *framework.SubGroup, whole []*framework.NodeInfo) error {
	attempts := [][]*framework.NodeInfo{whole}
	var plan *framework.PlacementPlan
	if g.Topology != nil {
		nodes := whole
		if nodes == nil {
			nodes = s.snapshot.NodeInfos()
		}
		sub := &framework.Job{ID: c.job.ID, MinAvailable: g.MinMember, Pending: g.Pending, ClaimDevices: c.job.ClaimDevices, Bound: g.Bound,
			Queue: c.job.Queue, QueueVia: c.job.QueueVia, Priority: c.job.Priority, Since: c.job.Since,
			Topology: g.Topology, PlacedNodes: g.PlacedNodes, Parent: c.job, SubGroup: g.Key}
		p, by, st := c.fwk.RunPlacementPlugins(ctx, c.state, sub, nodes)
		switch {
		case st.IsRejected():
			c.noteRejection(st)
			s.subGroupFailed(ctx, c, g, st.Message())
			return nil
		case !st.IsSuccess():
			return fmt.Errorf("placing %s: %w", g, st.AsError())
		case p != nil:
			plan = p
			attempts = attempts[:0]
			for _, pl := range p.Placements {
				attempts = append(attempts, pl.Nodes)
			}
			if p.Anywhere {
				attempts = append(attempts, whole)
			}
			if !p.Anywhere {
				// Room freed anywhere may give it a domain.
				c.rejectedBy[by] = true
			}
		}
	}
	start := len(c.placed)
	for _, nodes := range attempts {
		c.nodes = nodes
		for _, pod := range g.Pending {
			if err := s.placePod(ctx, c, pod); err != nil {
				return err
			}
		}
		if g.Holds(len(c.placed) - start) {
			return nil
		}
		s.undoFrom(ctx, c, start)
	}
	msg := ""
	if plan != nil && !plan.Anywhere {
		msg = plan.Unplaced
	}
	s.subGroupFailed(ctx, c, g, msg)
	return nil
}

// subGroupFailed records why g is not placed on its pods that have no
// reason of their own yet: msg, or its quorum.
func (s *Scheduler) subGroupFailed(ctx context.Context, c *cycle, g *framework.SubGroup, msg string) {
	if msg == "" {
		msg = fmt.Sprintf("%s of gang %s cannot reach its quorum: %d of its pods must run together, %d run", g, c.job.ID, g.MinMember, g.Bound)
	}
	for _, pod := range g.Pending {
		if _, ok := c.failures[podKey(pod)]; !ok {
			c.failures[podKey(pod)] = msg
		}
	}
	klog.FromContext(ctx).V(4).Info("Sub-group not placed", "subGroup", g.Key, "minMember", g.MinMember, "bound", g.Bound, "reason", msg)
}
