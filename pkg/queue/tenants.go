package queue

import (
	"container/heap"
	"maps"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Jobs belong to queues of tenants (see docs/queues.md), and the active
// queue pops the jobs of the tenant queue that is furthest below its fair
// share first; the LessFunc orders the jobs of one tenant queue, and jobs
// of tenant queues of equal rank. The cache computes the ranks from the
// queues' shares and pushes them here (SetQueueRanks), with each job's
// queue (SetJobQueue): the queue itself never calls back into the cache.

// SetJobQueue records the tenant queue of job id (framework.DefaultQueue
// or "" for the default one). The cache calls it, under its lock, when a
// job's queue is first known or changes, and with "" when the job leaves
// the cache. Only jobs outside the default queue are remembered.
func (q *SchedulingQueue) SetJobQueue(id framework.JobID, name string) {
	if name == framework.DefaultQueue {
		name = ""
	}
	q.lock.Lock()
	defer q.lock.Unlock()
	if name == "" {
		delete(q.jobQueues, id)
	} else {
		q.jobQueues[id] = name
	}
	e, ok := q.jobs[id]
	if !ok || e.Queue == name {
		return
	}
	e.Queue = name
	if e.where == inActive {
		heap.Fix(&q.activeQ, e.heapIndex)
	}
}

// SetQueueRanks sets the order of the tenant queues: a job of a queue of
// lower rank is popped before any job of a queue of higher rank. A queue
// ranks is silent about ranks 0 (the default queue is ""); nil ranks
// every queue equal. The active queue is reordered when the ranks change.
func (q *SchedulingQueue) SetQueueRanks(ranks map[string]int) {
	q.lock.Lock()
	defer q.lock.Unlock()
	if maps.Equal(q.queueRanks, ranks) {
		return
	}
	q.queueRanks = maps.Clone(ranks)
	heap.Init(&q.activeQ)
}

// lessActiveLocked orders the active queue: tenant queue rank, then the
// LessFunc.
func (q *SchedulingQueue) lessActiveLocked(a, b *jobEntry) bool {
	if len(q.queueRanks) > 0 {
		if ra, rb := q.queueRanks[a.Queue], q.queueRanks[b.Queue]; ra != rb {
			return ra < rb
		}
	}
	return q.less(&a.QueuedJob, &b.QueuedJob)
}
