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
	"container/heap"
	"maps"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Jobs belong to tenant queues (Queue objects; see docs/queues.md and
// pkg/tenancy), and the active queue pops the jobs of the tenant queue
// of the lowest rank first (by default, the one furthest below its fair
// share; the rank is the tenancy.OrderPolicy's); the LessFunc orders the
// jobs of one tenant queue, and jobs of tenant queues of equal rank.
// pkg/tenancy computes the ranks and pushes them here
// (SetTenantQueueRanks), with each job's tenant queue
// (SetJobTenantQueue): the scheduling queue never calls back into it.
// The scheduling queue implements tenancy.SchedulingQueue.

// SetJobTenantQueue records the tenant queue of job id
// (framework.DefaultQueue or "" for the default one). pkg/tenancy calls
// it, under the cache's lock and its own, when a job's tenant queue is
// first known or changes, and with "" when the job leaves the cache. Only
// jobs outside the default tenant queue are remembered.
func (q *SchedulingQueue) SetJobTenantQueue(id framework.JobID, name string) {
	if name == framework.DefaultQueue {
		name = ""
	}
	q.lock.Lock()
	defer q.lock.Unlock()
	if name == "" {
		delete(q.jobTenantQueues, id)
	} else {
		q.jobTenantQueues[id] = name
	}
	e, ok := q.jobs[id]
	if !ok || e.Queue == name {
		return
	}
	waits := e.waitsForRoom
	q.setWaitsForRoomLocked(e, false)
	e.Queue = name
	q.setWaitsForRoomLocked(e, waits)
	if e.where == inActive {
		heap.Fix(&q.activeQ, e.heapIndex)
	}
}

// SetTenantQueueRanks sets the order of the tenant queues: a job of a
// tenant queue of lower rank is popped before any job of a tenant queue
// of higher rank. A tenant queue ranks is silent about ranks 0 (the
// default tenant queue is ""); nil ranks every tenant queue equal. The
// active queue is reordered when the ranks change.
func (q *SchedulingQueue) SetTenantQueueRanks(ranks map[string]int) {
	q.lock.Lock()
	defer q.lock.Unlock()
	if maps.Equal(q.tenantRanks, ranks) {
		return
	}
	q.tenantRanks = maps.Clone(ranks)
	heap.Init(&q.activeQ)
}

// lessActiveLocked orders the active queue: tenant queue rank, then the
// LessFunc.
func (q *SchedulingQueue) lessActiveLocked(a, b *jobEntry) bool {
	if len(q.tenantRanks) > 0 {
		if ra, rb := q.tenantRanks[a.Queue], q.tenantRanks[b.Queue]; ra != rb {
			return ra < rb
		}
	}
	return q.less(&a.QueuedJob, &b.QueuedJob)
}

// RoomWaiters returns the first waiter for room of each tenant queue
// ("" for the default one) that has one: the highest priority, then the
// one that entered the queue first. Anti-starvation (the Capacity
// plugin) keeps the jobs behind it from taking the room it waits for.
func (q *SchedulingQueue) RoomWaiters() map[string]framework.RoomWaiter {
	q.lock.Lock()
	defer q.lock.Unlock()
	if len(q.roomWaiters) == 0 {
		return nil
	}
	out := make(map[string]framework.RoomWaiter, len(q.roomWaiters))
	for tenant, set := range q.roomWaiters {
		first := q.firstWaiter[tenant]
		if first == nil {
			for _, e := range set {
				if first == nil || waiterBefore(e, first) {
					first = e
				}
			}
			q.firstWaiter[tenant] = first
		}
		out[tenant] = framework.RoomWaiter{ID: first.ID, Priority: first.Priority, Since: first.InitialTimestamp}
	}
	return out
}

// waiterBefore orders waiters for room: higher priority, then earlier
// entry, then ID.
func waiterBefore(a, b *jobEntry) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.InitialTimestamp.Equal(b.InitialTimestamp) {
		return a.InitialTimestamp.Before(b.InitialTimestamp)
	}
	return a.ID.String() < b.ID.String()
}

// setWaitsForRoomLocked records whether e waits for room. When the first
// waiter of its tenant queue stops waiting (it was scheduled, or left),
// the jobs held back behind it are retried (framework.EventQueueChange).
func (q *SchedulingQueue) setWaitsForRoomLocked(e *jobEntry, waits bool) {
	if e.waitsForRoom == waits {
		return
	}
	e.waitsForRoom = waits
	tenant := e.Queue
	set := q.roomWaiters[tenant]
	if waits {
		if set == nil {
			set = map[framework.JobID]*jobEntry{}
			q.roomWaiters[tenant] = set
		}
		set[e.ID] = e
		if first := q.firstWaiter[tenant]; first != nil && waiterBefore(e, first) {
			q.firstWaiter[tenant] = e
		}
		return
	}
	delete(set, e.ID)
	if len(set) == 0 {
		delete(q.roomWaiters, tenant)
	}
	if q.firstWaiter[tenant] == e {
		delete(q.firstWaiter, tenant)
		q.moveUnschedulableLocked(framework.EventQueueChange, func(p *jobEntry) bool {
			return q.worthRequeuingLocked(klog.Background(), p, framework.EventQueueChange, nil, &framework.QueueChange{Queue: tenant})
		})
	}
}
