package cache

import (
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
// node's cap where there is one. The pod count is left out.
func (c *SchedulerCache) ceilingLocked() resources.Resource { return c.usableLocked(false) }

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
		n := item.info
		if n.Placeholder {
			continue
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
		total.Add(free)
	}
	return total
}

func clampNegative(r *resources.Resource) {
	r.MilliCPU, r.Memory, r.EphemeralStorage, r.Pods = max(r.MilliCPU, 0), max(r.Memory, 0), max(r.EphemeralStorage, 0), max(r.Pods, 0)
	for k, v := range r.Scalar {
		if v < 0 {
			r.Scalar[k] = 0
		}
	}
}
