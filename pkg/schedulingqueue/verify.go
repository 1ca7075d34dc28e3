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
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Membership is what the queue holds for one job, for the cache's
// consistency checker: where the job is and the UIDs of its pending pods.
type Membership struct {
	// Location is "active", "backoff", "unschedulable", "inFlight" or
	// "awaitingBinding".
	Location string
	// Pods are the UIDs of the job's pending pods, in no order.
	Pods []types.UID
	// Problem, when set, says how the queue's own records of the job
	// disagree: its location and the heap or map that should hold it, or
	// its pods and their index.
	Problem string
}

// Memberships returns the membership of every job in the queue. It holds
// the queue's lock while it copies, which takes time in proportion to the
// pending pods.
func (q *SchedulingQueue) Memberships() map[framework.JobID]Membership {
	q.lock.Lock()
	defer q.lock.Unlock()
	out := make(map[framework.JobID]Membership, len(q.jobs))
	for id, e := range q.jobs {
		out[id] = q.membershipLocked(e)
	}
	// A job in a heap or the unschedulable map but not in jobs.
	for _, h := range []*jobHeap{&q.activeQ, &q.backoffQ} {
		for _, e := range h.items {
			if q.jobs[e.ID] != e {
				out[e.ID] = Membership{Location: e.where.String(), Problem: "in a queue heap but not among the queue's jobs"}
			}
		}
	}
	for id, e := range q.unschedulable {
		if q.jobs[id] != e {
			out[id] = Membership{Location: e.where.String(), Problem: "in the unschedulable map but not among the queue's jobs"}
		}
	}
	return out
}

// MembershipOf returns the membership of the job id, if the queue has it.
func (q *SchedulingQueue) MembershipOf(id framework.JobID) (Membership, bool) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok {
		return Membership{}, false
	}
	return q.membershipLocked(e), true
}

func (q *SchedulingQueue) membershipLocked(e *jobEntry) Membership {
	m := Membership{Location: e.where.String(), Pods: make([]types.UID, len(e.Pods))}
	for i, p := range e.Pods {
		m.Pods[i] = p.UID
		if j, ok := e.podIndex[p.UID]; !ok || j != i {
			m.Problem = fmt.Sprintf("pod %s is at index %d but indexed at %d", p.UID, i, j)
		}
	}
	if len(e.podIndex) != len(e.Pods) {
		m.Problem = fmt.Sprintf("%d pods but %d indexed", len(e.Pods), len(e.podIndex))
	}
	if len(e.Pods) == 0 {
		m.Problem = "queued without pending pods"
	}
	inHeap := func(h *jobHeap) bool {
		return e.heapIndex >= 0 && e.heapIndex < len(h.items) && h.items[e.heapIndex] == e
	}
	switch e.where {
	case inActive:
		if !inHeap(&q.activeQ) {
			m.Problem = "located in the active queue but not in its heap"
		}
	case inBackoff:
		if !inHeap(&q.backoffQ) {
			m.Problem = "located in the backoff queue but not in its heap"
		}
	case inUnschedulable:
		if q.unschedulable[e.ID] != e {
			m.Problem = "located in the unschedulable queue but not in its map"
		}
	}
	if e.where != inUnschedulable && q.unschedulable[e.ID] == e {
		m.Problem = fmt.Sprintf("located in %s but also in the unschedulable map", e.where)
	}
	return m
}
