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
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// Sizes of the sections in which View copies nodes and jobs, each under
// its own hold of the cache's lock.
const (
	viewNodeChunk = 64
	viewJobChunk  = 1024
)

// View is a copy of the cache's state for the tools that inspect it (the
// consistency checker and the dump of pkg/cache/debugger). TaskInfos and
// v1 objects are shared with the cache and must not be modified; the
// NodeInfos are clones and every map and slice is the View's own.
//
// It is taken in sections (see SchedulerCache.View), so its parts may be
// from slightly different moments: each node is consistent with its pods,
// each job with its tasks, but a task may have moved between the copy of
// its node, that of its job and that of the tasks without a job record.
type View struct {
	// Generation is the cache's node generation when the copy began.
	Generation int64
	// Nodes are the listed nodes and the placeholders, by name.
	Nodes map[string]*framework.NodeInfo
	// Outside are the nodes outside the node selector that have usage
	// accounted to them, kept aside (see eventhandlers.ExternalUsageCache).
	Outside map[string]*framework.NodeInfo
	// Excluded names every node known to be outside the node selector.
	Excluded map[string]bool
	// Tasks are every pod the cache tracks, pending, assumed or bound.
	Tasks map[types.UID]*framework.TaskInfo
	// Assumed describes the assumption of each assumed task.
	Assumed map[types.UID]AssumedView
	// Jobs are the job records with their tasks.
	Jobs map[framework.JobID]JobView
	// Jobless are the tasks kept without a job record (see
	// KeepsJobRecord), by the job Job builds for them.
	Jobless map[framework.JobID]*framework.TaskInfo
	// External is the usage set with SetExternalUsage, by key.
	External map[string]ExternalUsage
	// Caps are the caps set with SetNodeCap, by node; RequireCaps says
	// whether a node without one has none of the cluster for us
	// (RequireNodeCaps).
	Caps        map[string]*resources.Resource
	RequireCaps bool
	// CapExceeded names the nodes the cache records as over their cap.
	CapExceeded map[string]bool
	// Queue is where each job is in the scheduling queue, copied under
	// the queue's own lock after the rest.
	Queue map[framework.JobID]schedulingqueue.Membership
	// LongestHold is the longest time the copy held the cache's lock (or
	// the queue's) in one go.
	LongestHold time.Duration
}

// AssumedView describes an assumed task.
type AssumedView struct {
	// BindingFinished: the bind call succeeded (FinishBinding); the
	// assumption expires at Deadline unless the informer reports the pod
	// bound first.
	BindingFinished bool
	Deadline        time.Time
	// InformerPending: the informer still reports the pod pending, so
	// the pod is still queued.
	InformerPending bool
}

// JobView is a job as View copies it.
type JobView struct {
	MinAvailable    int32
	ValidationError error
	Tasks           []*framework.TaskInfo
}

// ExternalUsage is one entry of SetExternalUsage.
type ExternalUsage struct {
	Node  string
	Usage resources.Resource
}

// holdTimer measures the holds of a lock.
type holdTimer struct {
	longest time.Duration
	since   time.Time
}

func (h *holdTimer) start() { h.since = time.Now() }
func (h *holdTimer) stop() {
	if d := time.Since(h.since); d > h.longest {
		h.longest = d
	}
}

// View copies the cache and its queue, holding the cache's read lock in
// sections: the small maps and the names of nodes and jobs, the tasks,
// then chunks of nodes and of jobs. The queue is copied under its own
// lock, after. The scheduler never needs it; debugging tools do, and
// they must not stall the scheduler while they read.
func (c *SchedulerCache) View() *View {
	var hold holdTimer
	cv := &View{}

	// The slices filled under the lock are allocated before, so that no
	// allocation (and no garbage-collection assist) lengthens a hold.
	c.mu.RLock()
	nNodes, nTasks, nJobs, nJobless := len(c.nodes), len(c.tasks), len(c.jobs), c.jobless.len()
	c.mu.RUnlock()
	slack := func(n int) int { return n + n/16 + 16 }
	nodeNames := make([]string, 0, slack(nNodes))
	tasks := make([]*framework.TaskInfo, 0, slack(nTasks))
	jobless := make([]*framework.TaskInfo, 0, slack(nJobless))
	jobIDs := make([]framework.JobID, 0, slack(nJobs))

	hold.start()
	c.mu.RLock()
	cv.Generation = c.generation
	cv.Outside = make(map[string]*framework.NodeInfo, len(c.outside))
	for name, info := range c.outside {
		cv.Outside[name] = info.Clone()
	}
	cv.Excluded = make(map[string]bool, len(c.excluded))
	for name := range c.excluded {
		cv.Excluded[name] = true
	}
	cv.External = make(map[string]ExternalUsage, len(c.external))
	for key, u := range c.external {
		cv.External[key] = ExternalUsage{Node: u.node, Usage: u.usage.Clone()}
	}
	cv.Caps = make(map[string]*resources.Resource, len(c.caps))
	for name, limit := range c.caps {
		cv.Caps[name] = limit
	}
	cv.RequireCaps = c.requireCaps
	cv.CapExceeded = make(map[string]bool, len(c.capExceeded))
	for name := range c.capExceeded {
		cv.CapExceeded[name] = true
	}
	cv.Assumed = make(map[types.UID]AssumedView, len(c.assumed))
	for uid, a := range c.assumed {
		cv.Assumed[uid] = AssumedView{BindingFinished: a.bindingFinished, Deadline: a.deadline, InformerPending: a.pending != nil}
	}
	for name := range c.nodes {
		nodeNames = append(nodeNames, name)
	}
	c.mu.RUnlock()
	hold.stop()

	// The tasks are copied into a slice under the lock (the cheapest copy
	// there is) and indexed after it is released.
	hold.start()
	c.mu.RLock()
	for _, t := range c.tasks {
		tasks = append(tasks, t)
	}
	c.mu.RUnlock()
	hold.stop()
	cv.Tasks = make(map[types.UID]*framework.TaskInfo, len(tasks))
	for _, t := range tasks {
		cv.Tasks[t.GetUID()] = t
	}

	hold.start()
	c.mu.RLock()
	for t := range c.jobless.all() {
		jobless = append(jobless, t)
	}
	c.mu.RUnlock()
	hold.stop()
	cv.Jobless = make(map[framework.JobID]*framework.TaskInfo, len(jobless))
	for _, t := range jobless {
		cv.Jobless[t.Job] = t
	}

	hold.start()
	c.mu.RLock()
	for id := range c.jobs {
		jobIDs = append(jobIDs, id)
	}
	c.mu.RUnlock()
	hold.stop()

	cv.Nodes = make(map[string]*framework.NodeInfo, len(nodeNames))
	for chunk := range slices.Chunk(nodeNames, viewNodeChunk) {
		hold.start()
		c.mu.RLock()
		for _, name := range chunk {
			// A node removed since its name was taken is simply not
			// copied; one added since is not seen.
			if item, ok := c.nodes[name]; ok {
				cv.Nodes[name] = item.info.Clone()
			}
		}
		c.mu.RUnlock()
		hold.stop()
	}

	// The jobs' tasks go into one buffer, allocated before, each job
	// recording its span of it.
	type span struct {
		id       framework.JobID
		job      JobView
		from, to int
	}
	buf := make([]*framework.TaskInfo, 0, slack(nTasks))
	spans := make([]span, 0, len(jobIDs))
	for chunk := range slices.Chunk(jobIDs, viewJobChunk) {
		hold.start()
		c.mu.RLock()
		for _, id := range chunk {
			j, ok := c.jobs[id]
			if !ok {
				continue
			}
			from := len(buf)
			for _, t := range j.Tasks {
				buf = append(buf, t)
			}
			spans = append(spans, span{id: id, from: from, to: len(buf),
				job: JobView{MinAvailable: j.MinAvailable(), ValidationError: j.ValidationError()}})
		}
		c.mu.RUnlock()
		hold.stop()
	}
	cv.Jobs = make(map[framework.JobID]JobView, len(spans))
	for _, sp := range spans {
		sp.job.Tasks = buf[sp.from:sp.to:sp.to]
		cv.Jobs[sp.id] = sp.job
	}

	hold.start()
	cv.Queue = c.queue.Memberships()
	hold.stop()
	cv.LongestHold = hold.longest
	return cv
}

// Options returns the options the cache was built with, defaults applied.
// They must not be modified.
func (c *SchedulerCache) Options() Options { return c.opts }

// Metrics returns the metrics the cache reports to.
func (c *SchedulerCache) Metrics() *metrics.Metrics { return c.metrics }

// WantCap is the cap a node should have by the caps set: its own, an
// all-zero one when it has none under RequireNodeCaps, nil for uncapped.
func (v *View) WantCap(node string) *resources.Resource {
	if limit := v.Caps[node]; limit != nil {
		return limit
	}
	if v.RequireCaps {
		return noGrant
	}
	return nil
}
