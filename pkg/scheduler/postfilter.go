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
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// postFilter runs after a cycle found no placement for c's job (no pod,
// or fewer than its quorum, placed; the cycle's placements are undone):
// the profile's PostFilter plugins may make room, through the RoomMaker
// of the preemption library's engine, and what they did ends the pods'
// unschedulable messages (c.preemption). The job is parked by the caller
// either way; the victims' deletion brings it back.
func (s *Scheduler) postFilter(ctx context.Context, c *cycle) {
	if !c.fwk.HasPostFilterPlugins() {
		return
	}
	pc := &preemption.Cycle{Framework: c.fwk, State: c.state, Job: c.job, Placements: c.roomPlacements()}
	res, st, waitOn := c.fwk.RunPostFilterPlugins(ctx, c.state, c.job, s.preemption.RoomMaker(pc))
	if pc.FitsElsewhere() {
		// The job's pods are nominated where they fit as the cluster is:
		// no plugin rejected it for good, any event may help.
		c.noNodes = true
	}
	if !st.IsSuccess() && !st.IsRejected() {
		klog.FromContext(ctx).Error(st.AsError(), "PostFilter failed")
	}
	if st.IsRejected() {
		// Every plugin declined: what those that may change their mind
		// wait for (Reclaim's queue shares moving, say) may help the job
		// too.
		for _, name := range waitOn {
			c.rejectedBy[name] = true
		}
	}
	if res != nil {
		c.preemption = res.Message
	}
}

// nominatedNode is the node preemption chose for pod: this scheduler's
// nomination, or, for one made before a restart, the pod's
// status.nominatedNodeName.
func (s *Scheduler) nominatedNode(pod *v1.Pod) string {
	if n := s.nominated.NodeOf(pod.UID); n != "" {
		return n
	}
	return pod.Status.NominatedNodeName
}

// defaultVictimWait bounds how long a job waits for its preemption's
// victims without trying to place itself: longer than the 30 s a pod is
// given to terminate by default, after which its retries run whole again
// (a victim stuck terminating, or room that came elsewhere, may then
// serve it).
const defaultVictimWait = 45 * time.Second

// awaitVictims parks c's job without trying to place it while the room
// its preemption made is still taken and nothing else could serve it:
// so many of its nominated pods sit on nodes where one of their victims
// still runs that the pods left cannot reach its quorum (one pod for a
// job that is no gang), and the room idle on the other nodes could not
// hold the pods it lacks (roomElsewhere). Each victim that goes raises
// an event that retries the job; tried whole, such a retry places the
// pods whose room is free and undoes them when the quorum fails, over
// and over while a gang's victims go (a gang of 100 on 100 nodes, each
// second or so). Nothing is written to the pods: their condition
// already says what the preemption did. It reports whether it parked
// the job.
func (s *Scheduler) awaitVictims(ctx context.Context, c *cycle) bool {
	if s.victimWait <= 0 {
		return false
	}
	busy, noms, since := s.nominated.VictimsLeft(c.job.ID, s.snapshot.Get)
	if len(busy) == 0 || time.Since(since) > s.victimWait {
		return false
	}
	var blocked []*framework.TaskInfo
	var placeable resources.Resource
	for _, nom := range noms {
		if busy[nom.Node] {
			blocked = append(blocked, nom.Task)
		} else {
			placeable.Add(nom.Task.Requests)
		}
	}
	need := max(int(c.job.MinAvailable)-c.job.Bound, 1)
	short := need - (len(c.job.Pending) - len(blocked))
	if len(blocked) == 0 || short <= 0 || s.roomElsewhere(busy, placeable, blocked, short) {
		return false
	}
	klog.FromContext(ctx).V(3).Info("Waiting for the pods preempted for the job to go; not placing it",
		"blocked", len(blocked), "waited", time.Since(since).Round(time.Millisecond))
	attempt := schedulingqueue.Attempt{Reason: fmt.Sprintf("%d nominated pods wait for their victims to go", len(blocked)),
		AnyEvent: true, ForRoom: true, Reserved: true, Profile: c.profile}
	if err := s.queue.AddUnschedulable(c.qj, attempt); err != nil {
		klog.FromContext(ctx).Error(err, "Parking a job that waits for its victims")
	}
	return true
}

// roomElsewhere reports whether the nodes without victims (busy) may
// hold short of the blocked pods once the job's other nominated pods
// (placeable) have taken their room: the CPU, memory and pod count idle
// there, summed, against short times the least each blocked pod
// requests. It is a necessary condition of a placement, cheap to check,
// not a placement: true means a cycle is worth running.
func (s *Scheduler) roomElsewhere(busy map[string]bool, placeable resources.Resource, blocked []*framework.TaskInfo, short int) bool {
	least := blocked[0].Requests
	for _, t := range blocked[1:] {
		least.MilliCPU = min(least.MilliCPU, t.Requests.MilliCPU)
		least.Memory = min(least.Memory, t.Requests.Memory)
		least.Pods = min(least.Pods, t.Requests.Pods)
	}
	var cpu, memory, pods int64
	for _, ni := range s.snapshot.NodeInfos() {
		if busy[ni.Name()] || ni.Node == nil || ni.Placeholder {
			continue
		}
		sch, req, ext := &ni.Schedulable, &ni.Requested, &ni.External
		cpu += max(resources.SubSat(resources.SubSat(sch.MilliCPU, req.MilliCPU), ext.MilliCPU), 0)
		memory += max(resources.SubSat(resources.SubSat(sch.Memory, req.Memory), ext.Memory), 0)
		pods += max(resources.SubSat(resources.SubSat(sch.Pods, req.Pods), ext.Pods), 0)
	}
	n := int64(short)
	return cpu-placeable.MilliCPU >= n*least.MilliCPU && memory-placeable.Memory >= n*least.Memory && pods-placeable.Pods >= n*max(least.Pods, 1)
}

// holdNominated places the nominated pods of other jobs of at least c's
// priority on their nodes in the snapshot, so that c's cycle (its filter
// path, and preemption's simulation on the same snapshot) cannot take the
// room preemption made for them. Nominations whose pod is no longer
// pending are dropped; the room of a deleted one is released. The
// snapshot's next update takes the pods off. The cycle's state lists the
// pods placed (framework.WriteNominated), for the plugins that hold what
// the NodeInfos do not show: the devices of their ResourceClaims.
//
// A reservation's room is not held from a job that backfills: one whose
// pods all have an expected runtime (framework.EstimatedRuntime: what
// they or their Job say) and end, started now, before the reservation
// expects its job to start. The cycle's state records each such
// reservation (framework.NoteBackfill): a pod placed in its room says so
// on its binding (framework.BackfilledIntoAnnotation).
//
// A reservation's pods on a node are its room as it will be once the
// running pods it awaits there have ended; while those run, their room
// is the reservation's already, so only the reserved pods beyond what
// they still use are placed (counting both would hold the room twice,
// and take from another job room the reservation left it: the room of a
// pod evicted for that job, say).
func (s *Scheduler) holdNominated(ctx context.Context, c *cycle) {
	// Logged at 4 only, and checked first: the arguments would cost an
	// allocation per nomination in every cycle.
	v4 := klog.FromContext(ctx).V(4)
	now := time.Now()
	runtime, estimated := jobRuntime(c.job, now)
	var covers map[reservedOn]*resources.Resource
	var held []*framework.TaskInfo
	defer func() { framework.WriteNominated(c.state, held) }()
	for _, nom := range s.nominated.Others(c.job.ID, c.qj.Priority) {
		job, status, ok := s.cache.TaskState(nom.Pod.UID)
		if !ok || job != nom.Job || status != framework.TaskPending {
			if v4.Enabled() {
				v4.Info("Dropping the nomination of a pod no longer pending", "pod", klog.KObj(nom.Pod), "node", nom.Node, "status", status, "known", ok)
			}
			s.nominated.Drop(nom.Pod.UID)
			if !ok || job != nom.Job {
				s.nominated.Release([]schedulingqueue.Nomination{nom})
			}
			continue
		}
		if nom.Reserved != nil {
			if estimated && nom.Reserved.Backfills(now, runtime) {
				if v4.Enabled() {
					v4.Info("Job may backfill: not holding a reservation's room", "pod", klog.KObj(nom.Pod), "node", nom.Node,
						"runtime", runtime, "reservationStart", nom.Reserved.Start)
				}
				framework.NoteBackfill(c.state, nom.Node, framework.Backfill{Job: nom.Job, Start: nom.Reserved.Start})
				continue
			}
			k := reservedOn{nom.Job, nom.Node}
			cover, ok := covers[k]
			if !ok {
				if covers == nil {
					covers = map[reservedOn]*resources.Resource{}
				}
				cover = s.awaitedUse(nom.Node, nom.Awaits)
				covers[k] = cover
			}
			if cover.Fits(nom.Task.Requests) {
				if v4.Enabled() {
					v4.Info("Reserved pod's room is still used by the pods it awaits", "pod", klog.KObj(nom.Pod), "node", nom.Node, "awaitedUse", cover.String())
				}
				cover.Sub(nom.Task.Requests)
				continue
			}
		}
		s.snapshot.AddTask(nom.Node, nom.Task)
		held = append(held, nom.Task)
	}
}

// reservedOn is a job's reservation on one node.
type reservedOn struct {
	job  framework.JobID
	node string
}

// awaitedUse sums what the pods of awaits (UID → node) still running on
// node, as the snapshot has it, request.
func (s *Scheduler) awaitedUse(node string, awaits map[types.UID]string) *resources.Resource {
	var use resources.Resource
	if len(awaits) == 0 {
		return &use
	}
	ni, ok := s.snapshot.Get(node)
	if !ok {
		return &use
	}
	for _, t := range ni.Pods {
		if t.Counted && awaits[t.GetUID()] == node {
			use.Add(t.Requests)
		}
	}
	return &use
}

// jobRuntime returns the longest expected runtime of job's pending pods,
// started at now; false when one of them has none.
func jobRuntime(job *framework.Job, now time.Time) (time.Duration, bool) {
	var longest time.Duration
	for _, pod := range job.Pending {
		d, ok := framework.EstimatedRuntime(pod, job.RuntimeBounds.Of(pod), now)
		if !ok {
			return 0, false
		}
		longest = max(longest, d)
	}
	return longest, len(job.Pending) > 0
}

// background runs the preemption engine's API calls as the scheduler's
// binds run: waited for on shutdown (bindWG), within the bound on calls
// in flight (binds).
type background struct{ s *Scheduler }

// Go implements preemption.Background.
func (b background) Go(f func()) {
	b.s.bindWG.Add(1)
	go func() {
		defer b.s.bindWG.Done()
		f()
	}()
}

// Acquire implements preemption.Background. A preemption's evictions are
// a batch whose outcome is not one call's: its place does not adapt the
// bound.
func (b background) Acquire() (release func()) {
	b.s.binds.acquire()
	return b.s.binds.releaseNoSignal
}
