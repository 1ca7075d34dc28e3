package scheduler

import (
	"context"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// nomination is a pending pod that preemption made room for on a node.
type nomination struct {
	pod      *v1.Pod
	node     string
	job      framework.JobID
	priority int32
	// task is pod as assumed on node, built once: holdNominated puts it
	// on the snapshot in every cycle while the nomination lasts.
	task *framework.TaskInfo
}

// nominator remembers, per preemptor job, where preemption made room for
// its pods and which victims are still to go. The scheduling loop reads
// and writes it; the goroutine that evicts the victims clears it when an
// eviction fails, hence the lock.
//
// A nomination holds capacity: a cycle for a job of lower or equal
// priority sees the nominated pods of other jobs on their nodes (see
// holdNominated), so it cannot take the room the victims leave. A
// nomination ends when its pod is no longer pending (bound, assumed or
// deleted; checked lazily), when its job's next preemption replaces it,
// or when its job gives up (clear).
type nominator struct {
	mu sync.Mutex
	// pods maps each nominated pod's UID to its nomination.
	pods map[types.UID]nomination
	// victims maps a preemptor job to the victims it is waiting for, by
	// UID, with their nodes.
	victims map[framework.JobID]map[types.UID]string
	// sorted are the values of pods sorted by pod name, rebuilt by others
	// after pods changed (stale set): every cycle reads them, few change
	// them.
	sorted []nomination
	stale  bool
}

func newNominator() *nominator {
	return &nominator{pods: map[types.UID]nomination{}, victims: map[framework.JobID]map[types.UID]string{}}
}

// nominate replaces job's nominations with placements (pod UID → node) of
// pods, waiting for victims (UID → node).
func (n *nominator) nominate(job framework.JobID, priority int32, pods []*v1.Pod, placements map[string]string, victims map[types.UID]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.clearLocked(job)
	for _, pod := range pods {
		if node, ok := placements[string(pod.UID)]; ok {
			n.pods[pod.UID] = nomination{pod: pod, node: node, job: job, priority: priority,
				task: framework.NewAssumedTaskInfo(pod, node, framework.NewTaskInfo(pod).Requests)}
			n.stale = true
		}
	}
	if len(victims) > 0 {
		n.victims[job] = victims
	}
}

// clear drops job's nominations and returns them, sorted by pod name.
func (n *nominator) clear(job framework.JobID) []nomination {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clearLocked(job)
}

func (n *nominator) clearLocked(job framework.JobID) []nomination {
	var noms []nomination
	for uid, nom := range n.pods {
		if nom.job == job {
			noms = append(noms, nom)
			delete(n.pods, uid)
			n.stale = true
		}
	}
	delete(n.victims, job)
	sort.Slice(noms, func(i, j int) bool { return noms[i].pod.Name < noms[j].pod.Name })
	return noms
}

// nodeOf returns the node pod is nominated to, or "".
func (n *nominator) nodeOf(uid types.UID) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pods[uid].node
}

// has reports whether job has a nomination.
func (n *nominator) has(job framework.JobID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nom := range n.pods {
		if nom.job == job {
			return true
		}
	}
	return false
}

// waitingFor counts the victims of job's last preemption that snapshot
// still has on their nodes, and forgets the others.
func (n *nominator) waitingFor(job framework.JobID, snapshot *cache.Snapshot) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	left := 0
	for uid, node := range n.victims[job] {
		if ni, ok := snapshot.Get(node); ok && hasTask(ni, uid) {
			left++
			continue
		}
		delete(n.victims[job], uid)
	}
	return left
}

// goingVictims returns the victims every preemption waits for that
// snapshot still has on their nodes without a deletion timestamp: their
// eviction is under way but does not show yet.
func (n *nominator) goingVictims(snapshot *cache.Snapshot) []*framework.TaskInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*framework.TaskInfo
	for _, victims := range n.victims {
		for uid, node := range victims {
			ni, ok := snapshot.Get(node)
			if !ok {
				continue
			}
			for _, t := range ni.Pods {
				if t.Pod.UID == uid && t.Pod.DeletionTimestamp == nil {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

func hasTask(ni *framework.NodeInfo, uid types.UID) bool {
	for _, t := range ni.Pods {
		if t.Pod.UID == uid {
			return true
		}
	}
	return false
}

// others returns the nominations of jobs other than job whose priority is
// at least priority, sorted by pod name for a stable order.
func (n *nominator) others(job framework.JobID, priority int32) []nomination {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stale {
		n.sorted = n.sorted[:0]
		for _, nom := range n.pods {
			n.sorted = append(n.sorted, nom)
		}
		sort.Slice(n.sorted, func(i, j int) bool { return n.sorted[i].pod.Name < n.sorted[j].pod.Name })
		n.stale = false
	}
	var out []nomination
	for _, nom := range n.sorted {
		if nom.job != job && nom.priority >= priority {
			out = append(out, nom)
		}
	}
	return out
}

// placed forgets the nominations of pods, which a cycle of job placed,
// and, once none of job's is left, the victims it waited for.
func (n *nominator) placed(job framework.JobID, pods []*v1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, pod := range pods {
		if _, ok := n.pods[pod.UID]; ok {
			delete(n.pods, pod.UID)
			n.stale = true
		}
	}
	for _, nom := range n.pods {
		if nom.job == job {
			return
		}
	}
	delete(n.victims, job)
}

// drop forgets the nomination of the pod with uid.
func (n *nominator) drop(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.pods[uid]; ok {
		delete(n.pods, uid)
		n.stale = true
	}
}

// nominatedNode is the node preemption chose for pod: this scheduler's
// nomination, or, for one made before a restart, the pod's
// status.nominatedNodeName.
func (s *Scheduler) nominatedNode(pod *v1.Pod) string {
	if n := s.nominated.nodeOf(pod.UID); n != "" {
		return n
	}
	return pod.Status.NominatedNodeName
}

// holdNominated places the nominated pods of other jobs of at least c's
// priority on their nodes in the snapshot, so that c's cycle cannot take
// the room preemption made for them. Nominations whose pod is no longer
// pending are dropped; the room of a deleted one is released. The
// snapshot's next update takes the pods off.
func (s *Scheduler) holdNominated(c *cycle) {
	for _, nom := range s.nominated.others(c.job.ID, c.qj.Priority) {
		job, status, ok := s.cache.TaskState(nom.pod.UID)
		if !ok || job != nom.job || status != framework.TaskPending {
			s.nominated.drop(nom.pod.UID)
			if !ok || job != nom.job {
				s.release([]nomination{nom})
			}
			continue
		}
		s.snapshot.AddTask(nom.node, nom.task)
	}
}

// giveUp drops job's nominations: the room they held is released and
// their pods' status.nominatedNodeName cleared.
func (s *Scheduler) giveUp(ctx context.Context, job framework.JobID) {
	noms := s.nominated.clear(job)
	if len(noms) == 0 {
		return
	}
	s.release(noms)
	pods := make([]*v1.Pod, len(noms))
	for i, nom := range noms {
		pods[i] = nom.pod
	}
	s.clearNominatedNodeNames(ctx, pods)
}

// release tells the queue that the room noms held is free: to the jobs it
// kept out, that is as if a pod on each node went away.
func (s *Scheduler) release(noms []nomination) {
	for _, nom := range noms {
		held := *nom.pod
		held.Spec.NodeName = nom.node
		s.queue.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, &held, nil)
	}
}
