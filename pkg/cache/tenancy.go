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
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
)

// The tenant queues (Queue objects, docs/queues.md) are pkg/tenancy's: the
// cache holds a *tenancy.Tenants, feeds it every change of a job's tasks
// (changeJobLocked) and the capacity the tenant queues share
// (capacityLocked), and hands it what handlers report. Not to be confused
// with the scheduling queue of pending jobs (Queue), which the cache also
// owns.

// SetTenantQueue implements eventhandlers.TenantQueueCache: see
// tenancy.Tenants.SetQueue.
func (c *SchedulerCache) SetTenantQueue(source, name string, spec *framework.QueueSpec) {
	c.tenants.SetQueue(source, name, spec)
}

// WatchTenantQueues implements eventhandlers.TenantQueueCache.
func (c *SchedulerCache) WatchTenantQueues() { c.tenants.Watch() }

// Tenants returns the tenant queues the cache feeds.
func (c *SchedulerCache) Tenants() *tenancy.Tenants { return c.tenants }

// changeJobLocked runs change, a change of job's task uid (or of its
// group policy, uid ""), keeping the tenant queues' usage in step (see
// tenancy.Tenants.ChangeJob). The caller holds mu for writing.
func (c *SchedulerCache) changeJobLocked(job *framework.JobInfo, uid types.UID, change func()) {
	c.tenants.ChangeJob(job, uid, change)
}

// TenantQueueSnapshot returns the tenant queues as a scheduling cycle sees
// them (see tenancy.Tenants.Snapshot), or nil while no tenant queue
// exists.
func (c *SchedulerCache) TenantQueueSnapshot() *framework.QueueSnapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tenants.Snapshot(c.capacityFuncLocked())
}

// TenantQueueStatuses returns every tenant queue in force with its state
// or why it is left out, for the status writer and the metrics (see
// tenancy.Tenants.Statuses).
func (c *SchedulerCache) TenantQueueStatuses() []tenancy.QueueStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tenants.Statuses(c.capacityFuncLocked())
}

// capacityFuncLocked is the capacity the tenant queues share, as
// pkg/tenancy asks for it: it reads the nodes, so the caller holds mu
// (for reading or writing) until Tenants returns.
func (c *SchedulerCache) capacityFuncLocked() func() resources.Resource { return c.capacityLocked }
