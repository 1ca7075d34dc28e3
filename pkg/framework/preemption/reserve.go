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
	"errors"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// A reservation is the victim search run as a wait: the pods taken off
// the snapshot are not evicted but waited for, so every running pod of
// another job is a candidate (gangs are not taken whole: their pods end
// on their own; PodDisruptionBudgets do not apply), those expected to end
// soonest are taken first, and the best node is the one whose pods are
// expected to free the room soonest.

// waitMode is a simulation's reservation policy.
type waitMode struct {
	policy framework.ReservePolicy
	// ends caches each candidate's expected end.
	ends map[types.UID]expectedEnd
	// held are the nodes the job's reservation holds now: of two places
	// as good, the held one is kept, so that a reservation does not
	// wander from one cycle to the next and leave room behind for others
	// to take.
	held map[string]bool
	// phantoms are the pods of other jobs' nominations that the cycle
	// put on the snapshot (framework.Nominated) to hold their room: they
	// show as assumed but are not running, and never end on their own.
	phantoms map[*framework.TaskInfo]bool
}

// expectedEnd is when a running pod is expected to end; known is false
// when nothing says.
type expectedEnd struct {
	at    time.Time
	known bool
}

// end returns t's expected end: now for a pod already going (terminating,
// or another preemption's victim), else the policy's estimate.
func (sim *simulation) end(t *framework.TaskInfo) expectedEnd {
	if e, ok := sim.wait.ends[t.GetUID()]; ok {
		return e
	}
	var e expectedEnd
	switch {
	case t.GetDeletionTimestamp() != nil || sim.going[t.GetUID()]:
		e = expectedEnd{at: sim.wait.policy.Now, known: true}
	case sim.wait.policy.End != nil:
		e.at, e.known = sim.wait.policy.End(t)
		if e.known && e.at.Before(sim.wait.policy.Now) {
			// Overdue: it may end any moment, but no sooner than now.
			e.at = sim.wait.policy.Now
		}
	}
	sim.wait.ends[t.GetUID()] = e
	return e
}

// endsLater orders the pods to wait for: the one expected to end later
// first (kept running first by the reprieve of selectVictimsOnNode). A
// pod without an estimate ends after any with one; of two without, the
// one that started later ends later.
func (sim *simulation) endsLater(a, b *framework.TaskInfo) bool {
	ea, eb := sim.end(a), sim.end(b)
	if ea.known != eb.known {
		return !ea.known
	}
	if ea.known && !ea.at.Equal(eb.at) {
		return ea.at.After(eb.at)
	}
	return startTime(a).After(startTime(b))
}

// waitEligible reports whether t is a pod a reservation may wait for: a
// counted pod of another job on its node, bound or being bound (a pod
// the scheduler just placed starts about now; leaving it out would make
// the reservation move off a node a backfilled pod took, and so give
// the rest of its room away), not a nomination held on the snapshot, and
// not chosen already.
func (sim *simulation) waitEligible(t *framework.TaskInfo) bool {
	if !t.Counted || t.Job == sim.c.Job.ID || sim.wait.phantoms[t] {
		return false
	}
	if t.Status != framework.TaskBound && t.Status != framework.TaskAssumed {
		return false
	}
	if only := sim.wait.policy.WaitOnly; only != nil && !only(t) {
		return false
	}
	_, chosen := sim.victims[t.GetUID()]
	return !chosen
}

// waitCost is what a reservation candidate costs: how many of the pods it
// waits for give no estimate, then when the last of those that do is
// expected to end, then how many there are.
type waitCost struct {
	unknown int
	last    time.Time
	pods    int
}

func (sim *simulation) waitCost(ts []*framework.TaskInfo) waitCost {
	c := waitCost{pods: len(ts)}
	for _, t := range ts {
		e := sim.end(t)
		if !e.known {
			c.unknown++
			continue
		}
		if e.at.After(c.last) {
			c.last = e.at
		}
	}
	return c
}

// less reports whether waiting for c frees the room sooner than for d:
// fewer pods without an estimate, then an earlier last end, then fewer
// pods.
func (c waitCost) less(d waitCost) bool {
	if c.unknown != d.unknown {
		return c.unknown < d.unknown
	}
	if !c.last.Equal(d.last) {
		return c.last.Before(d.last)
	}
	return c.pods < d.pods
}

// betterWait reports whether a is a better reservation candidate than b:
// the room frees sooner.
func (sim *simulation) betterWait(a, b *candidate) bool {
	if b == nil {
		return true
	}
	ca, cb := sim.waitCost(a.victims), sim.waitCost(b.victims)
	if ca.less(cb) || cb.less(ca) {
		return ca.less(cb)
	}
	return sim.wait.held[a.node.Name()] && !sim.wait.held[b.node.Name()]
}

// reserve is Reserve for cycle c.
func (e *Engine) reserve(ctx context.Context, c *Cycle, policy framework.ReservePolicy) (framework.Reservation, error) {
	logger := klog.FromContext(ctx)
	snapshot, nominator := e.opts.Snapshot, e.opts.Nominator
	if c.Job.Err != nil || len(c.Job.Pending) == 0 || len(snapshot.NodeInfos()) == 0 {
		return framework.Reservation{}, nil
	}
	if policy.Now.IsZero() {
		return framework.Reservation{}, errors.New("reserving: the policy has no time")
	}
	if left := nominator.WaitingFor(c.Job.ID, snapshot.Get); left > 0 {
		// Reserving now would replace the nominations that name them,
		// and the plugin that evicted would evict again.
		return framework.Reservation{Evicting: left}, nil
	}
	going := newGoingSet(nominator.GoingVictims(snapshot.Get))
	if policy.Defer != nil {
		if anyEligible(snapshot.NodeInfos(), c.Job.ID, policy.Defer, going.uids) {
			return framework.Reservation{Deferred: true}, nil
		}
	}
	held := map[string]bool{}
	if _, ok := nominator.Reservation(c.Job.ID); ok {
		for _, node := range nominator.Placements(c.Job.ID) {
			held[node] = true
		}
	}
	phantoms := map[*framework.TaskInfo]bool{}
	for _, t := range framework.Nominated(c.State) {
		phantoms[t] = true
	}
	res, err := e.simulate(ctx, c, SearchBounds{}, going, &waitMode{policy: policy, ends: map[types.UID]expectedEnd{}, held: held, phantoms: phantoms})
	if err != nil {
		return framework.Reservation{}, err
	}
	if !res.Fits {
		logger.V(3).Info("The job does not fit even with every running pod gone; nothing reserved")
		return framework.Reservation{}, nil
	}
	if len(res.Victims) == 0 {
		if policy.Probe {
			return framework.Reservation{Fits: true, FitsNow: true}, nil
		}
		nominator.Nominate(c.Job.ID, c.Job.Priority, res.Placed, res.Placements, nil)
		c.fitsElsewhere = true
		logger.V(2).Info("Job fits without waiting when placed differently; nominating its pods", "placements", len(res.Placements))
		return framework.Reservation{Fits: true, FitsNow: true}, nil
	}
	r := framework.Reservation{Fits: true, StartKnown: true, Start: policy.Now, WaitFor: len(res.Victims)}
	for _, v := range res.Victims {
		end := res.ends[v.Task.GetUID()]
		if !end.known {
			r.StartKnown = false
			continue
		}
		if end.at.After(r.Start) {
			r.Start = end.at
		}
	}
	if !r.StartKnown {
		r.Start = time.Time{}
	}
	for _, node := range res.Placements {
		r.Nodes = append(r.Nodes, node)
	}
	sort.Strings(r.Nodes)
	r.Nodes = slices.Compact(r.Nodes)
	if policy.Probe {
		return r, nil
	}
	awaits := make(map[types.UID]string, len(res.Victims))
	for _, v := range res.Victims {
		awaits[v.Task.GetUID()] = v.Task.NodeName
	}
	nominator.Reserve(c.Job.ID, c.Job.Priority, res.Placed, res.Placements, r, awaits)
	logger.V(2).Info("Reserved room for the job until running pods end", "nodes", r.Nodes, "waitFor", r.WaitFor,
		"startKnown", r.StartKnown, "start", r.Start)
	return r, nil
}
