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

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The methods below are the cache's: it calls them, holding its own lock,
// when a pending pod is added, changes or leaves, and when an assumption
// expires. See the cache's package documentation for the lock order.

// PodChanged is called by the cache, under its lock, when pod, pending and
// of job id, was added or changed. relevant says whether something the
// scheduler looks at changed (anything but the status).
func (q *SchedulingQueue) PodChanged(id framework.JobID, pod *v1.Pod, relevant bool) {
	q.lock.Lock()
	defer q.lock.Unlock()
	defer q.updateGaugesLocked()
	e, ok := q.jobs[id]
	if !ok {
		// A job enters the queue at its first pod's creation, not when
		// this process first saw it: after a restart the initial list
		// arrives in no particular order, and FIFO must still hold.
		now := q.clock.Now()
		if created := pod.CreationTimestamp.Time; !created.IsZero() && created.Before(now) {
			now = created
		}
		e = &jobEntry{
			QueuedJob: framework.QueuedJob{ID: id, Timestamp: now, InitialTimestamp: now, Queue: q.jobTenantQueues[id]},
			podIndex:  map[types.UID]int{},
		}
		e.setPod(pod)
		q.jobs[id] = e
		q.pushActiveLocked(e)
		return
	}
	e.setPod(pod)
	switch e.where {
	case inActive:
		heap.Fix(&q.activeQ, e.heapIndex)
	case inBackoff:
		// It is retried when its backoff ends anyway.
	case inUnschedulable:
		if relevant {
			q.requeueLocked(e)
		}
	case inFlight:
		if relevant {
			e.changedInFlight = true
		}
	case awaitingBinding:
		if relevant {
			q.moveToActiveLocked(e)
		}
	}
}

// PodRemoved is called by the cache, under its lock, when the pod with uid
// of job id is no longer pending. A job without pending pods leaves the
// queue.
func (q *SchedulingQueue) PodRemoved(id framework.JobID, uid types.UID) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok {
		return
	}
	e.deletePod(uid)
	switch {
	case len(e.Pods) == 0:
		q.leaveFlightLocked(e)
		q.detachLocked(e)
		q.setWaitsForRoomLocked(e, false)
		delete(q.jobs, id)
		q.updateGaugesLocked()
	case e.where == inActive:
		heap.Fix(&q.activeQ, e.heapIndex)
	}
}

// AssumptionExpired is called by the cache, under its lock, when a pod of
// job id that the scheduler had assumed was not reported bound in time and
// is pending again. A job awaiting binding is retried after its backoff,
// as after a failed attempt; a job in flight is retried when its cycle
// ends; an unschedulable job is requeued.
func (q *SchedulingQueue) AssumptionExpired(id framework.JobID, reason string) {
	q.lock.Lock()
	defer q.lock.Unlock()
	e, ok := q.jobs[id]
	if !ok {
		return
	}
	switch e.where {
	case awaitingBinding:
		now := q.clock.Now()
		e.Timestamp = now
		e.backoffExpiry = now.Add(q.backoffDuration(e.Attempts))
		e.strictBackoff = true
		e.lastFailure = reason
		q.moveToBackoffLocked(e)
	case inFlight:
		e.changedInFlight = true
	case inUnschedulable:
		e.lastFailure = reason
		q.requeueLocked(e)
	}
	q.updateGaugesLocked()
}
