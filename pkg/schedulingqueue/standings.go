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
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Place is a pending job's place in its tenant queue.
type Place struct {
	// Queue is the job's tenant queue, "" for the default one.
	Queue string
	// Position counts from 1, the job that goes first; Length is how
	// many jobs the tenant queue has waiting.
	Position, Length int
	// Priority and PendingPods are the job's.
	Priority    int32
	PendingPods int
	// Ahead is what the pending pods of the job and of every job ahead of
	// it in its tenant queue request.
	Ahead resources.Resource
}

// Places returns the place of every job waiting in the queue (active,
// in backoff, parked as unschedulable, or in a cycle; not those whose
// placement is being bound). Within a tenant queue the jobs are in the
// order its reservations and anti-starvation go by: higher priority
// first, then the one that entered the queue first (then by ID). The
// pods' requests are summed outside the queue's lock.
func (q *SchedulingQueue) Places() map[framework.JobID]Place {
	type waiting struct {
		id       framework.JobID
		queue    string
		priority int32
		since    int64
		pods     []*v1.Pod
	}
	q.lock.Lock()
	list := make([]waiting, 0, len(q.jobs))
	for _, e := range q.jobs {
		if e.where == awaitingBinding {
			continue
		}
		list = append(list, waiting{id: e.ID, queue: e.Queue, priority: e.Priority, since: e.InitialTimestamp.UnixNano(), pods: slices.Clone(e.Pods)})
	}
	q.lock.Unlock()

	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		switch {
		case a.queue != b.queue:
			return a.queue < b.queue
		case a.priority != b.priority:
			return a.priority > b.priority
		case a.since != b.since:
			return a.since < b.since
		}
		return a.id.String() < b.id.String()
	})
	out := make(map[framework.JobID]Place, len(list))
	for start := 0; start < len(list); {
		end := start
		for end < len(list) && list[end].queue == list[start].queue {
			end++
		}
		var ahead resources.Resource
		for i := start; i < end; i++ {
			w := list[i]
			for _, pod := range w.pods {
				ahead.Add(resources.PodRequests(pod))
			}
			out[w.id] = Place{Queue: w.queue, Position: i - start + 1, Length: end - start,
				Priority: w.priority, PendingPods: len(w.pods), Ahead: ahead.Clone()}
		}
		start = end
	}
	return out
}
