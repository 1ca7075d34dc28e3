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

package cache

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Demand reports what this scheduler could not place and what its pods use
// per node (see pkg/demand). The waiting work is that of the jobs whose
// last attempt failed (queue.Waiting); their pending pods' requests make up
// Unmet, and the gang among them with the largest total request is
// LargestGang (a job of one pod is not a gang). Report.Framework is left
// for the caller to fill in.
func (c *SchedulerCache) Demand() *demand.Report {
	waiting := c.queue.Waiting()
	now := c.opts.Clock.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	var queues []demand.Queue
	if snap := c.tenants.Snapshot(c.capacityFuncLocked()); snap != nil {
		for name, q := range snap.Queues {
			queues = append(queues, demand.Queue{Name: name, Parent: q.Parent, Allocated: q.Allocated.ToList(),
				Pending: q.Pending.ToList(), FairShare: q.FairShare.ToList(), PendingJobs: q.PendingJobs})
		}
		sort.Slice(queues, func(i, j int) bool { return queues[i].Name < queues[j].Name })
	}
	var unmet, largestUnit resources.Resource
	var largest *demand.Gang
	var largestTotal resources.Resource
	r := &demand.Report{Time: metav1.NewTime(now.Truncate(time.Millisecond)), Queues: queues}
	for _, w := range waiting {
		job, ok := c.jobs[w.ID]
		if !ok {
			continue
		}
		var total resources.Resource
		members := 0
		for _, t := range job.Tasks {
			if t.Status != framework.TaskPending {
				continue
			}
			members++
			// Requests, not QueueRequests: Unmet is asked of the
			// allocator's grants, which cap what pods request on nodes
			// (Used); claim devices count against tenant queues only,
			// whose Allocated and Pending above include them.
			total.Add(t.Requests)
			largestUnit = maxOf(largestUnit, t.Requests)
		}
		if members == 0 {
			continue
		}
		r.Waiting += members
		unmet.Add(total)
		if w.ID.Gang && (largest == nil || larger(total, largestTotal)) {
			largestTotal = total
			largest = &demand.Gang{Name: w.ID.String(), Members: members, MinMember: int(job.MinAvailable()), Reason: w.Reason}
		}
	}
	if largest != nil {
		largest.Total = withoutPods(largestTotal).ToList()
		r.LargestGang = largest
	}
	r.Unmet = withoutPods(unmet).ToList()
	r.LargestUnit = withoutPods(largestUnit).ToList()
	for name, item := range c.nodes {
		if item.info.Placeholder || item.info.OwnRequested.IsZero() {
			continue
		}
		if r.Used == nil {
			r.Used = map[string]v1.ResourceList{}
		}
		r.Used[name] = withoutPods(item.info.OwnRequested).ToList()
	}
	return r
}

// maxOf returns the per-resource maximum of a and b.
func maxOf(a, b resources.Resource) resources.Resource {
	m := a.Clone()
	m.Sub(m.Min(b))
	m.Add(b)
	return m
}

// larger orders totals by CPU, then memory: a stable, simple notion of
// "the largest gang" for the report.
func larger(a, b resources.Resource) bool {
	if a.MilliCPU != b.MilliCPU {
		return a.MilliCPU > b.MilliCPU
	}
	return a.Memory > b.Memory
}

// withoutPods drops the pod count, which grants do not cover.
func withoutPods(r resources.Resource) resources.Resource {
	r = r.Clone()
	r.Pods = 0
	return r
}
