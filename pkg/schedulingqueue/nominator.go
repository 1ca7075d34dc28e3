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

package schedulingqueue

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Nomination is a pending pod that preemption made room for on a node.
type Nomination struct {
	Pod      *v1.Pod
	Node     string
	Job      framework.JobID
	Priority int32
	// Task is Pod as assumed on Node, built once: the scheduling cycle
	// puts it on its snapshot in every cycle while the nomination lasts.
	Task *framework.TaskInfo
	// Reserved is set when the room is reserved, waiting for running
	// pods to end, rather than made by evicting victims: a job that ends
	// before Reserved.Start may use it meanwhile (backfill).
	Reserved *framework.Reservation
	// Awaits are, for a reservation, the running pods it waits for (UID
	// → node), shared by the job's nominations and never changed: while
	// they run, the room they use is the room the reservation holds, so
	// a cycle counts the reserved pods on a node only beyond what its
	// awaited pods still use there (pkg/scheduler's holdNominated).
	Awaits map[types.UID]string
}

// Mover is what the Nominator needs of the scheduling queue: the move of
// the jobs a cluster event may help (SchedulingQueue implements it).
type Mover interface {
	MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any)
}

// Nominator remembers, per preemptor job, where preemption made room for
// its pods and which victims are still to go. The scheduling loop and the
// preemption library (pkg/framework/preemption) read and write it; the
// goroutine that evicts the victims gives the room up when an eviction
// fails, hence the lock.
//
// A nomination holds capacity: a cycle for a job of lower or equal
// priority sees the nominated pods of other jobs on their nodes (Others),
// so it cannot take the room the victims leave. A nomination ends when its
// pod is no longer pending (bound, assumed or deleted; checked lazily by
// the cycle, which calls Drop), when its job's next preemption replaces it,
// or when its job gives up (GiveUp).
type Nominator struct {
	// queue is told when room a nomination held is free again.
	queue Mover
	// mu guards the fields below; it is a leaf (nothing is called with it
	// held).
	mu sync.Mutex
	// pods maps each nominated pod's UID to its nomination.
	pods map[types.UID]Nomination
	// victims maps a preemptor job to the victims it is waiting for, by
	// UID, with their nodes; victimsSince to when its preemption chose
	// them.
	victims      map[framework.JobID]map[types.UID]string
	victimsSince map[framework.JobID]time.Time
	// onNode indexes victims by node: how many jobs wait for each (one,
	// but for a victim two preemptions chose), so that GoingVictims walks
	// each node's pods once rather than once per victim.
	onNode map[string]map[types.UID]int
	// borrowed maps a preemptor job to the victims of other preemptions
	// whose room it was nominated to take (UID → node): it waits for them
	// as for its own, while they are still going (Borrow).
	borrowed map[framework.JobID]map[types.UID]string
	// sorted are the values of pods sorted by pod name, rebuilt by Others
	// after pods changed (stale set): every cycle reads them, few change
	// them.
	sorted []Nomination
	stale  bool
}

// NewNominator returns an empty Nominator that tells q when the room of a
// nomination is released.
func NewNominator(q Mover) *Nominator {
	return &Nominator{queue: q, pods: map[types.UID]Nomination{}, victims: map[framework.JobID]map[types.UID]string{},
		victimsSince: map[framework.JobID]time.Time{}, onNode: map[string]map[types.UID]int{},
		borrowed: map[framework.JobID]map[types.UID]string{}}
}

// Nominate replaces job's nominations with placements (pod UID → node) of
// pods, waiting for victims (UID → node).
func (n *Nominator) Nominate(job framework.JobID, priority int32, pods []*v1.Pod, placements map[string]string, victims map[types.UID]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nominateLocked(job, priority, pods, placements, nil, nil)
	if len(victims) > 0 {
		n.victims[job] = victims
		n.victimsSince[job] = time.Now()
		for uid, node := range victims {
			on := n.onNode[node]
			if on == nil {
				on = map[types.UID]int{}
				n.onNode[node] = on
			}
			on[uid]++
		}
	}
}

// Borrow records that job's nominations, just made by Nominate, take the
// room that the victims of other preemptions (UID → node) leave: job
// waits for them as for victims of its own (WaitingFor, VictimsLeft)
// while they are still going, evicting none. A borrowed victim no
// preemption evicts any more and that is not terminating is no longer
// waited for: the preemption that chose it gave up (its eviction was
// refused, say), so its room may never free.
func (n *Nominator) Borrow(job framework.JobID, victims map[types.UID]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(victims) == 0 {
		return
	}
	n.borrowed[job] = victims
	if _, ok := n.victimsSince[job]; !ok {
		n.victimsSince[job] = time.Now()
	}
}

// forgetVictimsLocked forgets the victims job waits for, and takes its
// own out of the going victims.
func (n *Nominator) forgetVictimsLocked(job framework.JobID) {
	for uid, node := range n.victims[job] {
		n.unindexLocked(uid, node)
	}
	n.stopWaitingLocked(job)
}

// stopWaitingLocked forgets that job waits for victims, its own and
// borrowed, leaving its own among the going victims.
func (n *Nominator) stopWaitingLocked(job framework.JobID) {
	delete(n.victims, job)
	delete(n.borrowed, job)
	delete(n.victimsSince, job)
}

// borrowedLeftLocked returns the victims job borrowed that nodes still
// has on their nodes and that are still going (terminating, or another
// preemption's victims), and forgets the others.
func (n *Nominator) borrowedLeftLocked(job framework.JobID, nodes func(name string) (*framework.NodeInfo, bool)) map[types.UID]string {
	b := n.borrowed[job]
	for uid, node := range b {
		if n.onNode[node][uid] > 0 {
			continue
		}
		if ni, ok := nodes(node); ok {
			if t := taskOn(ni, uid); t != nil && t.Counted && t.GetDeletionTimestamp() != nil {
				continue
			}
		}
		delete(b, uid)
	}
	if len(b) == 0 {
		delete(n.borrowed, job)
	}
	return b
}

// taskOn returns ni's task of the pod with uid, or nil.
func taskOn(ni *framework.NodeInfo, uid types.UID) *framework.TaskInfo {
	for _, t := range ni.Pods {
		if t.GetUID() == uid {
			return t
		}
	}
	return nil
}

// unindexLocked takes one job's wait for victim uid on node out of
// onNode. A victim GoingVictims found gone is out of it already.
func (n *Nominator) unindexLocked(uid types.UID, node string) {
	on := n.onNode[node]
	if on[uid] > 1 {
		on[uid]--
		return
	}
	delete(on, uid)
	if len(on) == 0 {
		delete(n.onNode, node)
	}
}

// Reserve replaces job's nominations with placements (pod UID → node) of
// pods that hold room reserved as r says, waiting for running pods to end
// rather than for victims.
func (n *Nominator) Reserve(job framework.JobID, priority int32, pods []*v1.Pod, placements map[string]string, r framework.Reservation, awaits map[types.UID]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nominateLocked(job, priority, pods, placements, &r, awaits)
}

func (n *Nominator) nominateLocked(job framework.JobID, priority int32, pods []*v1.Pod, placements map[string]string, r *framework.Reservation, awaits map[types.UID]string) {
	if r != nil {
		// Nodes the job's reservation held before and still holds keep
		// the time since when.
		var before map[string]time.Time
		for _, nom := range n.pods {
			if nom.Job == job && nom.Reserved != nil {
				before = nom.Reserved.HeldSince
				break
			}
		}
		now := time.Now()
		r.Made = now
		r.HeldSince = make(map[string]time.Time, len(r.Nodes))
		for _, node := range r.Nodes {
			if t, ok := before[node]; ok {
				r.HeldSince[node] = t
			} else {
				r.HeldSince[node] = now
			}
		}
	}
	n.clearLocked(job)
	for _, pod := range pods {
		if node, ok := placements[string(pod.UID)]; ok {
			n.pods[pod.UID] = Nomination{Pod: pod, Node: node, Job: job, Priority: priority, Reserved: r, Awaits: awaits,
				Task: framework.NewAssumedTaskInfo(pod, node, job)}
			n.stale = true
		}
	}
}

// Clear drops job's nominations and returns them, sorted by pod name.
func (n *Nominator) Clear(job framework.JobID) []Nomination {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clearLocked(job)
}

func (n *Nominator) clearLocked(job framework.JobID) []Nomination {
	var noms []Nomination
	for uid, nom := range n.pods {
		if nom.Job == job {
			noms = append(noms, nom)
			delete(n.pods, uid)
			n.stale = true
		}
	}
	n.forgetVictimsLocked(job)
	sort.Slice(noms, func(i, j int) bool { return noms[i].Pod.Name < noms[j].Pod.Name })
	return noms
}

// GiveUp drops job's nominations, releases the room they held (Release)
// and returns the pods, sorted by name, whose status.nominatedNodeName
// the caller clears: those preemption nominated (a reservation's pods do
// not have it set).
func (n *Nominator) GiveUp(job framework.JobID) []*v1.Pod {
	noms := n.Clear(job)
	n.Release(noms)
	var pods []*v1.Pod
	for _, nom := range noms {
		if nom.Reserved == nil {
			pods = append(pods, nom.Pod)
		}
	}
	return pods
}

// Placements returns where job's pods are nominated, pod UID to node.
func (n *Nominator) Placements(job framework.JobID) map[types.UID]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[types.UID]string{}
	for uid, nom := range n.pods {
		if nom.Job == job {
			out[uid] = nom.Node
		}
	}
	return out
}

// Reservation returns the reservation job's nominations hold, if they
// hold one.
func (n *Nominator) Reservation(job framework.JobID) (framework.Reservation, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nom := range n.pods {
		if nom.Job == job && nom.Reserved != nil {
			return *nom.Reserved, true
		}
	}
	return framework.Reservation{}, false
}

// Reservations returns every reservation held, by job.
func (n *Nominator) Reservations() map[framework.JobID]framework.Reservation {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[framework.JobID]framework.Reservation{}
	for _, nom := range n.pods {
		if nom.Reserved != nil {
			out[nom.Job] = *nom.Reserved
		}
	}
	return out
}

// Release tells the queue that the room noms held is free: to the jobs it
// kept out, that is as if a pod on each node went away.
func (n *Nominator) Release(noms []Nomination) {
	for _, nom := range noms {
		held := *nom.Pod
		held.Spec.NodeName = nom.Node
		n.queue.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, &held, nil)
	}
}

// NodeOf returns the node the pod with uid is nominated to, or "".
func (n *Nominator) NodeOf(uid types.UID) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pods[uid].Node
}

// Has reports whether job has a nomination.
func (n *Nominator) Has(job framework.JobID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nom := range n.pods {
		if nom.Job == job {
			return true
		}
	}
	return false
}

// WaitingFor counts the victims of job's last preemption that nodes (the
// cycle's snapshot, by name) still has on their nodes, with those it
// borrowed that are still going (see Borrow), and forgets the others.
func (n *Nominator) WaitingFor(job framework.JobID, nodes func(name string) (*framework.NodeInfo, bool)) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	left := len(n.borrowedLeftLocked(job, nodes))
	for uid, node := range n.victims[job] {
		if ni, ok := nodes(node); ok && ni.HasPod(uid) {
			left++
			continue
		}
		delete(n.victims[job], uid)
		n.unindexLocked(uid, node)
	}
	return left
}

// VictimsLeft returns the nodes (of nodes, the cycle's snapshot, by name)
// where a victim the last preemption chose for job, or one it borrowed
// that is still going, still runs (holds room), job's nominations of that
// preemption (not a reservation's), and since when job has waited for
// those victims; no nodes when none is left.
func (n *Nominator) VictimsLeft(job framework.JobID, nodes func(name string) (*framework.NodeInfo, bool)) (busy map[string]bool, noms []Nomination, since time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, victims := range []map[types.UID]string{n.victims[job], n.borrowedLeftLocked(job, nodes)} {
		for uid, node := range victims {
			if busy[node] {
				continue
			}
			if ni, ok := nodes(node); ok && holdsRoom(ni, uid) {
				if busy == nil {
					busy = map[string]bool{}
				}
				busy[node] = true
			}
		}
	}
	if len(busy) == 0 {
		return nil, nil, time.Time{}
	}
	for _, nom := range n.pods {
		if nom.Job == job && nom.Reserved == nil {
			noms = append(noms, nom)
		}
	}
	return busy, noms, n.victimsSince[job]
}

// holdsRoom reports whether ni has the task of the pod with uid and it
// still counts against the node: a victim that has ended (a Job's pod
// kept by its finalizer after its eviction, say) no longer takes room.
func holdsRoom(ni *framework.NodeInfo, uid types.UID) bool {
	t := taskOn(ni, uid)
	return t != nil && t.Counted
}

// GoingVictims returns the victims every preemption waits for that nodes
// (the cycle's snapshot, by name) still has on their nodes, taking room:
// those without a deletion timestamp, whose eviction is under way but
// does not show yet, and those terminating. Each node with victims is
// walked once; the victims no longer on their
// nodes are gone for good, and are left out of the next calls (their
// preemptors' own lists keep them until WaitingFor or the preemptor's
// placement drops them).
func (n *Nominator) GoingVictims(nodes func(name string) (*framework.NodeInfo, bool)) []*framework.TaskInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*framework.TaskInfo
	for node, on := range n.onNode {
		ni, ok := nodes(node)
		if !ok {
			delete(n.onNode, node)
			continue
		}
		found := 0
		for _, t := range ni.Pods {
			if _, victim := on[t.GetUID()]; !victim {
				continue
			}
			found++
			if t.Counted {
				out = append(out, t)
			}
		}
		if found == len(on) {
			continue
		}
		present := make(map[types.UID]bool, found)
		for _, t := range ni.Pods {
			present[t.GetUID()] = true
		}
		for uid := range on {
			if !present[uid] {
				delete(on, uid)
			}
		}
		if len(on) == 0 {
			delete(n.onNode, node)
		}
	}
	return out
}

// Others returns the nominations of jobs other than job whose priority is
// at least priority, sorted by pod name for a stable order.
func (n *Nominator) Others(job framework.JobID, priority int32) []Nomination {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stale {
		n.sorted = n.sorted[:0]
		for _, nom := range n.pods {
			n.sorted = append(n.sorted, nom)
		}
		sort.Slice(n.sorted, func(i, j int) bool { return n.sorted[i].Pod.Name < n.sorted[j].Pod.Name })
		n.stale = false
	}
	var out []Nomination
	for _, nom := range n.sorted {
		if nom.Job != job && nom.Priority >= priority {
			out = append(out, nom)
		}
	}
	return out
}

// Placed forgets the nominations of pods, which a cycle of job placed,
// and, once none of job's is left, that job waits for its victims. Those
// stay going (GoingVictims) until they are gone: their evictions were
// sent, and a victim gang's pods on other nodes may go well after the
// job's own nodes are free, while other preemptions borrow their room.
func (n *Nominator) Placed(job framework.JobID, pods []*v1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, pod := range pods {
		if _, ok := n.pods[pod.UID]; ok {
			delete(n.pods, pod.UID)
			n.stale = true
		}
	}
	for _, nom := range n.pods {
		if nom.Job == job {
			return
		}
	}
	n.stopWaitingLocked(job)
}

// NotGoing takes victims (UID → node) whose eviction was refused or never
// sent out of the going victims, whichever preemption chose them: they
// keep running, so their room is not free and they may be chosen again.
func (n *Nominator) NotGoing(victims map[types.UID]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for uid, node := range victims {
		on := n.onNode[node]
		delete(on, uid)
		if len(on) == 0 {
			delete(n.onNode, node)
		}
	}
}

// Drop forgets the nomination of the pod with uid.
func (n *Nominator) Drop(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.pods[uid]; ok {
		delete(n.pods, uid)
		n.stale = true
	}
}
