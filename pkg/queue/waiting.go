package queue

import (
	"sort"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// WaitingJob is a job whose last attempt failed and that waits in the
// backoff or the unschedulable queue: unmet demand.
type WaitingJob struct {
	ID framework.JobID
	// Reason is the last attempt's failure.
	Reason string
}

// Waiting lists the jobs that failed their last attempt and wait for it to
// be retried, sorted by ID. Jobs not tried yet, or being tried, are left
// out: nobody knows yet whether they fit.
func (q *SchedulingQueue) Waiting() []WaitingJob {
	q.lock.Lock()
	defer q.lock.Unlock()
	var out []WaitingJob
	for _, e := range q.jobs {
		if (e.where == inUnschedulable || e.where == inBackoff) && e.lastFailure != "" {
			out = append(out, WaitingJob{ID: e.ID, Reason: e.lastFailure})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out
}
