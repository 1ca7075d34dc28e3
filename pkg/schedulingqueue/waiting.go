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
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
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

// oldestPendingSeconds returns how long the job that entered the queue
// first, among those not placed yet, has waited, in seconds; 0 when there
// is none. It is the source of the PendingJobOldest gauge, so it runs at
// scrape time, not in the scheduling loop. It scans every job rather than
// keeping an index ordered by InitialTimestamp that every add and removal
// would pay for: a scrape comes every few seconds at most, and the scan
// holds the lock for well under a millisecond per 10,000 jobs
// (BenchmarkOldestPendingSeconds).
func (q *SchedulingQueue) oldestPendingSeconds() float64 {
	q.lock.Lock()
	var oldest time.Time
	found := false
	for _, e := range q.jobs {
		// A job awaiting binding has been placed: what it waits for is
		// the API server, which the bind metrics watch.
		if e.where != awaitingBinding && (!found || e.InitialTimestamp.Before(oldest)) {
			oldest, found = e.InitialTimestamp, true
		}
	}
	q.lock.Unlock()
	if !found {
		return 0
	}
	return max(0, q.clock.Since(oldest).Seconds())
}

// unschedulableByPlugin counts the jobs of the unschedulable sub-queue per
// plugin that rejected them in their last attempt, and profile. It is the
// source of the UnschedulableJobs gauge, run at scrape time like
// oldestPendingSeconds; the sub-queue is a map, scanned under the lock.
func (q *SchedulingQueue) unschedulableByPlugin() map[metrics.LabelValues]float64 {
	q.lock.Lock()
	defer q.lock.Unlock()
	out := map[metrics.LabelValues]float64{}
	for _, e := range q.unschedulable {
		for _, pl := range e.rejectedBy {
			out[metrics.LabelValues{pl, e.profile}]++
		}
	}
	return out
}
