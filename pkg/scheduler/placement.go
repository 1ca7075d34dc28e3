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
	"strings"

	v1 "k8s.io/api/core/v1"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// maxTriedNamesInMessage bounds how many tried placements an unplaced
// job's message names.
const maxTriedNamesInMessage = 3

// placeJob places the cycle's pending pods and asks the Permit plugins
// whether the job may start so. Without a placement plan (no
// PlacementPlugin had a say) the pods are placed over all nodes; with
// one, each of its placements is tried in turn with all the pods, and the
// first the Permit plugins admit wins, then all nodes if the plan allows
// it. It returns nil when the job may start (c.placed and c.placements
// hold where), a rejection when it may not (nothing stays placed), or an
// error.
func (s *Scheduler) placeJob(ctx context.Context, c *cycle) (*framework.Status, error) {
	if c.plan == nil {
		return s.tryNodes(ctx, c, nil)
	}
	logger := klog.FromContext(ctx)
	var tried []string
	var last *framework.Status
	for _, p := range c.plan.Placements {
		c.resetAttempt()
		st, err := s.tryNodes(ctx, c, p.Nodes)
		if err != nil {
			return nil, err
		}
		if st.IsSuccess() {
			logger.V(3).Info("Job placed within a domain", "placement", p.Name, "nodes", len(p.Nodes), "attempts", len(tried)+1)
			c.placement = p.Name
			return nil, nil
		}
		tried = append(tried, p.Name)
		last = st
	}
	if c.plan.Anywhere {
		c.resetAttempt()
		return s.tryNodes(ctx, c, nil)
	}
	// The pods' own node diagnoses are about the last domain tried only;
	// the plan's verdict speaks for the job.
	c.resetAttempt()
	c.failures = map[string]string{}
	msg := c.plan.Unplaced
	if len(tried) > 0 {
		names := tried[:min(len(tried), maxTriedNamesInMessage)]
		more := ""
		if len(tried) > len(names) {
			more = fmt.Sprintf(" and %d more", len(tried)-len(names))
		}
		msg = withNote(msg, fmt.Sprintf("tried %s%s", strings.Join(names, ", "), more))
		if last != nil && last.Message() != "" {
			msg += ", the last: " + last.Message()
		}
	}
	if msg == "" {
		msg = "no placement proposed for the job fits it"
	}
	return framework.NewStatus(framework.Unschedulable, msg).WithPlugin(c.planBy), nil
}

// tryNodes places every pending pod of the cycle's job, filtering nodes
// (nil: all of the snapshot's), and runs the Permit plugins. A rejection
// undoes the placements; so does an empty placement that Permit let
// through, which is a rejection too when a plan proposes other nodes.
func (s *Scheduler) tryNodes(ctx context.Context, c *cycle, nodes []*framework.NodeInfo) (*framework.Status, error) {
	c.nodes = nodes
	c.job.Untried = 0
	if len(c.job.SubGroups) > 0 {
		if err := s.placeSubGroups(ctx, c); err != nil {
			s.undoPlacements(ctx, c)
			return nil, err
		}
	} else {
		for i, pod := range c.job.Pending {
			placed := len(c.placed)
			if err := s.placePod(ctx, c, pod); err != nil {
				s.undoPlacements(ctx, c)
				return nil, err
			}
			left := len(c.job.Pending) - i - 1
			if left > 0 && len(c.placed) == placed && c.fwk.PermitOutOfReach(c.job, placed, left) && c.allAlike(pod, c.job.Pending[i+1:]) {
				// The pods left cannot bring the job to its quorum, and
				// each would fit nowhere as this one did: Permit rejects
				// the job whatever they find, and they say why as it does.
				c.job.Untried = left
				why := c.failures[podKey(pod)]
				for _, p := range c.job.Pending[i+1:] {
					c.failures[podKey(p)] = why
				}
				break
			}
		}
	}
	st := c.fwk.RunPermitPlugins(ctx, c.state, c.job, c.placements)
	if !st.IsSuccess() {
		s.undoPlacements(ctx, c)
		if !st.IsRejected() {
			return nil, fmt.Errorf("permit: %w", st.AsError())
		}
		c.noteRejection(st)
		return st, nil
	}
	if len(c.placed) == 0 && c.plan != nil {
		return framework.NewStatus(framework.Unschedulable, "no pod fits"), nil
	}
	return nil, nil
}

// allAlike reports whether the profile judges every pod of rest alike
// to pod (frameworkruntime.Framework.Alike), so that rest would fit
// nowhere either and say why as pod does.
func (c *cycle) allAlike(pod *v1.Pod, rest []*v1.Pod) bool {
	if _, ok := c.failures[podKey(pod)]; !ok {
		return false
	}
	for _, p := range rest {
		if !c.fwk.Alike(pod, p) {
			return false
		}
	}
	return true
}

// resetAttempt forgets what the last placement attempt found, but not
// which plugins rejected something: each may be what frees the job.
func (c *cycle) resetAttempt() {
	clear(c.failures)
	c.noNodes = false
	c.miss = nil
}

// candidateNodes returns the nodes a pod of c is filtered against: the
// current placement's, or all of the snapshot's.
func (c *cycle) candidateNodes(all []*framework.NodeInfo) []*framework.NodeInfo {
	if c.nodes != nil {
		return c.nodes
	}
	return all
}

// roomPlacements returns the sets of nodes preemption may try to make
// room in for c's job, best first: one nil (all nodes) without a plan.
func (c *cycle) roomPlacements() [][]*framework.NodeInfo {
	if c.plan == nil {
		return [][]*framework.NodeInfo{nil}
	}
	var out [][]*framework.NodeInfo
	for _, p := range c.plan.Room {
		out = append(out, p.Nodes)
	}
	if c.plan.Anywhere {
		out = append(out, nil)
	}
	return out
}

// undoPlacements unreserves every placement of the cycle and takes the pods
// off the snapshot.
func (s *Scheduler) undoPlacements(ctx context.Context, c *cycle) {
	s.undoFrom(ctx, c, 0)
	c.placed, c.placements = nil, map[string]string{}
}

// undoFrom unreserves the placements of the cycle from the start-th on,
// the last first, and takes their pods off the snapshot.
func (s *Scheduler) undoFrom(ctx context.Context, c *cycle, start int) {
	for i := len(c.placed) - 1; i >= start; i-- {
		pod := c.placed[i]
		nodeName := c.placements[string(pod.UID)]
		c.fwk.RunUnreservePlugins(ctx, c.state, pod, nodeName)
		s.snapshot.RemovePod(nodeName, pod.UID)
		delete(c.placements, string(pod.UID))
		c.changes++
	}
	c.placed = c.placed[:start]
}

// podMiss is a pod that fit nowhere and why.
type podMiss struct {
	pod     *v1.Pod
	nodes   []*framework.NodeInfo
	changes int
	failure string
}

// noteMiss records that pod, filtered against nodes, fit nowhere.
func (c *cycle) noteMiss(pod *v1.Pod, nodes []*framework.NodeInfo) {
	c.miss = &podMiss{pod: pod, nodes: nodes, changes: c.changes, failure: c.failures[podKey(pod)]}
}
