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
	"math"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// capacityGrows reports whether event may make the capacity this scheduler
// may use grow: the events the Capacity plugin waits for a job that can
// never start with.
func capacityGrows(event framework.ClusterEvent) bool {
	switch event {
	case framework.EventNodeAdd, framework.EventNodeAllocatableChange, framework.EventGrantIncrease,
		framework.EventAssignedPodDelete, framework.EventExternalUsageDecrease:
		return true
	}
	return false
}

// ceilingAmountsLocked is framework.Job.Ceiling: ceilingLocked as
// amounts, recounted at most every Options.Tenancy.Refresh and after an
// event by which it may grow. The caller holds mu (for reading or
// writing); the result must not be modified.
func (c *SchedulerCache) ceilingAmountsLocked() framework.ResourceAmounts {
	c.ceilingMu.Lock()
	defer c.ceilingMu.Unlock()
	now := c.opts.Clock.Now()
	if c.ceiling == nil || now.Sub(c.ceilingAt) >= c.tenants.Refresh() {
		c.ceiling, c.ceilingAt = framework.AmountsOf(c.ceilingLocked()), now
	}
	return c.ceiling
}

// ceilingLocked is what the scheduler could use with every other pod
// gone: per listed node, its allocatable less external usage, within the
// node's cap where there is one. The pod count is left out. It is kept as
// a sum (ceilingSum) of each node's part, which touchLocked marks stale
// when the node changes and deleteNodeLocked takes out: only the nodes
// changed since the last call are counted again, not all of them (at
// 20,000 nodes a full count took about 6 ms, every Tenancy.Refresh). The
// caller holds mu for writing, or for reading and ceilingMu.
func (c *SchedulerCache) ceilingLocked() resources.Resource {
	for _, item := range c.ceilingStale {
		item.ceilingStale = false
		if c.nodes[item.info.Name()] != item {
			// Deleted: deleteNodeLocked took its part out.
			continue
		}
		c.ceilingSaturated = c.ceilingSaturated || saturated(c.ceilingSum)
		c.ceilingSum.Sub(item.ceilingPart)
		item.ceilingPart = usable(item.info, false)
		c.ceilingSum.Add(item.ceilingPart)
	}
	clear(c.ceilingStale)
	c.ceilingStale = c.ceilingStale[:0]
	if c.ceilingSaturated || saturated(c.ceilingSum) {
		// Sums saturate at the int64 range, and a saturated sum does not
		// give back what is subtracted from it: count it afresh.
		c.ceilingSaturated = false
		c.ceilingSum = resources.Resource{}
		for _, item := range c.nodes {
			item.ceilingPart = usable(item.info, false)
			c.ceilingSum.Add(item.ceilingPart)
		}
	}
	return c.ceilingSum.Clone()
}

// saturated reports whether some amount of r is at the int64 range's
// bounds, where resources.Resource's sums saturate.
func saturated(r resources.Resource) bool {
	at := func(v int64) bool { return v == math.MaxInt64 || v == math.MinInt64 }
	if at(r.MilliCPU) || at(r.Memory) || at(r.EphemeralStorage) || at(r.Pods) {
		return true
	}
	for _, v := range r.Scalar {
		if at(v) {
			return true
		}
	}
	return false
}

// ceilingChangedLocked marks item's part of the ceiling stale: the node
// changed. touchLocked calls it.
func (c *SchedulerCache) ceilingChangedLocked(item *nodeItem) {
	if !item.ceilingStale {
		item.ceilingStale = true
		c.ceilingStale = append(c.ceilingStale, item)
	}
}

// ceilingDeletedLocked takes item's part out of the ceiling: the node
// left. deleteNodeLocked calls it.
func (c *SchedulerCache) ceilingDeletedLocked(item *nodeItem) {
	c.ceilingSaturated = c.ceilingSaturated || saturated(c.ceilingSum)
	c.ceilingSum.Sub(item.ceilingPart)
	item.ceilingPart = resources.Resource{}
}

// capacityLocked is what the scheduler may use: per listed node, its
// allocatable less what others' pods and external usage take, within the
// node's cap where there is one, and the devices published in
// ResourceSlices that each DeviceClass selects (devices.go). The pod
// count is left out. The tenant queues divide it; the ceiling
// (ceilingLocked) leaves the devices out.
func (c *SchedulerCache) capacityLocked() resources.Resource {
	total := c.usableLocked(true)
	c.addDeviceTotalsLocked(&total)
	return total
}

// usableLocked sums, over the listed nodes, allocatable less external
// usage and, with others, less what other schedulers' pods request,
// within each node's cap; the pod count is left out.
func (c *SchedulerCache) usableLocked(others bool) resources.Resource {
	var total resources.Resource
	for _, item := range c.nodes {
		total.Add(usable(item.info, others))
	}
	return total
}

// usable is one node's part of usableLocked: nothing for a placeholder.
func usable(n *framework.NodeInfo, others bool) resources.Resource {
	if n.Placeholder {
		return resources.Resource{}
	}
	free := n.Schedulable.Clone()
	if others {
		theirs := n.Requested.Clone()
		theirs.Sub(n.OwnRequested)
		free.Sub(theirs)
	}
	free.Sub(n.External)
	if n.Cap != nil {
		free = free.Min(*n.Cap)
	}
	clampNegative(&free)
	free.Pods = 0
	return free
}

func clampNegative(r *resources.Resource) {
	r.MilliCPU, r.Memory, r.EphemeralStorage, r.Pods = max(r.MilliCPU, 0), max(r.Memory, 0), max(r.EphemeralStorage, 0), max(r.Pods, 0)
	for k, v := range r.Scalar {
		if v < 0 {
			r.Scalar[k] = 0
		}
	}
}
