package cache

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/queue"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Sizes of the sections in which copyForVerify copies nodes and jobs, each
// under its own hold of the cache's lock.
const (
	verifyNodeChunk = 64
	verifyJobChunk  = 1024
)

// cacheView is the consistency checker's copy of the cache. TaskInfos and
// Nodes are immutable and shared; everything the cache changes in place is
// copied. It is taken in sections, so its parts may be from slightly
// different moments; the checker's re-checks absorb that.
type cacheView struct {
	nodes    map[string]*nodeView // listed, placeholders included
	outside  map[string]*nodeView
	excluded map[string]bool
	tasks    map[types.UID]*framework.TaskInfo
	// assumedPending: the assumed task's pod is still reported pending
	// (and so queued).
	assumedPending map[types.UID]bool
	jobs           map[framework.JobID][]*framework.TaskInfo
	external       map[string]externalUsage
	caps           map[string]*resources.Resource
	requireCaps    bool
	capExceeded    map[string]bool
	queue          map[framework.JobID]queue.Membership

	longestHold time.Duration
}

// nodeView is a copy of a NodeInfo.
type nodeView struct {
	name                                    string
	placeholder                             bool
	node                                    *v1.Node
	schedulable, requested, external, owned resources.Resource
	cap                                     *resources.Resource
	externalKeys                            []string
	pods                                    []*framework.TaskInfo
}

func viewOf(n *framework.NodeInfo) *nodeView {
	return &nodeView{
		name:         n.Name(),
		placeholder:  n.Placeholder,
		node:         n.Node,
		schedulable:  n.Schedulable.Clone(),
		requested:    n.Requested.Clone(),
		external:     n.External.Clone(),
		owned:        n.OwnRequested.Clone(),
		cap:          n.Cap, // shared, never modified
		externalKeys: n.ExternalKeys,
		pods:         slices.Clone(n.Pods),
	}
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

// copyForVerify copies the cache and its queue for the checker, holding
// the cache's read lock in sections: the small maps and the names of
// nodes and jobs, the tasks, then chunks of nodes and of jobs. The queue is
// copied under its own lock, after.
func (c *SchedulerCache) copyForVerify() *cacheView {
	var hold holdTimer
	cv := &cacheView{}

	// The slices filled under the lock are allocated before, so that no
	// allocation (and no garbage-collection assist) lengthens a hold.
	c.mu.RLock()
	nNodes, nTasks, nJobs := len(c.nodes), len(c.tasks), len(c.jobs)
	c.mu.RUnlock()
	slack := func(n int) int { return n + n/16 + 16 }
	nodeNames := make([]string, 0, slack(nNodes))
	tasks := make([]*framework.TaskInfo, 0, slack(nTasks))
	jobIDs := make([]framework.JobID, 0, slack(nJobs))

	hold.start()
	c.mu.RLock()
	cv.outside = make(map[string]*nodeView, len(c.outside))
	for name, info := range c.outside {
		cv.outside[name] = viewOf(info)
	}
	cv.excluded = make(map[string]bool, len(c.excluded))
	for name := range c.excluded {
		cv.excluded[name] = true
	}
	cv.external = make(map[string]externalUsage, len(c.external))
	for key, u := range c.external {
		cv.external[key] = externalUsage{node: u.node, usage: u.usage.Clone()}
	}
	cv.caps = make(map[string]*resources.Resource, len(c.caps))
	for name, limit := range c.caps {
		cv.caps[name] = limit
	}
	cv.requireCaps = c.requireCaps
	cv.capExceeded = make(map[string]bool, len(c.capExceeded))
	for name := range c.capExceeded {
		cv.capExceeded[name] = true
	}
	cv.assumedPending = make(map[types.UID]bool, len(c.assumed))
	for uid, a := range c.assumed {
		cv.assumedPending[uid] = a.pending != nil
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
	cv.tasks = make(map[types.UID]*framework.TaskInfo, len(tasks))
	for _, t := range tasks {
		cv.tasks[t.Pod.UID] = t
	}

	hold.start()
	c.mu.RLock()
	for id := range c.jobs {
		jobIDs = append(jobIDs, id)
	}
	c.mu.RUnlock()
	hold.stop()

	cv.nodes = make(map[string]*nodeView, len(nodeNames))
	for chunk := range slices.Chunk(nodeNames, verifyNodeChunk) {
		hold.start()
		c.mu.RLock()
		for _, name := range chunk {
			// A node removed since its name was taken is simply not
			// copied; one added since is not seen. Re-checks settle both.
			if item, ok := c.nodes[name]; ok {
				cv.nodes[name] = viewOf(item.info)
			}
		}
		c.mu.RUnlock()
		hold.stop()
	}

	// The jobs' tasks go into one buffer, allocated before, each job
	// recording its span of it.
	type span struct {
		id       framework.JobID
		from, to int
	}
	buf := make([]*framework.TaskInfo, 0, slack(nTasks))
	spans := make([]span, 0, len(jobIDs))
	for chunk := range slices.Chunk(jobIDs, verifyJobChunk) {
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
			spans = append(spans, span{id: id, from: from, to: len(buf)})
		}
		c.mu.RUnlock()
		hold.stop()
	}
	cv.jobs = make(map[framework.JobID][]*framework.TaskInfo, len(spans))
	for _, sp := range spans {
		cv.jobs[sp.id] = buf[sp.from:sp.to:sp.to]
	}

	hold.start()
	cv.queue = c.queue.Memberships()
	hold.stop()
	cv.longestHold = hold.longest
	return cv
}
