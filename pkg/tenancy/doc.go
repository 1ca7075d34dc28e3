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

// Package tenancy owns the tenant queues: the Queue objects (the
// project's own, batch-scheduler.io/v1alpha1, and Volcano's) that divide
// the cluster among tenants (docs/queues.md).
//
// # Two kinds of queue
//
// A tenant queue is a Queue object: a share of the capacity, its
// hierarchy, guarantee, limit and weight, and the jobs that name it. The
// scheduling queue (pkg/schedulingqueue, SchedulingQueue) is the queue of
// pending jobs the scheduling loop pops from. In this package, and wherever the
// two meet, "tenant queue" names the first and "scheduling queue" the
// second; framework.QueueSpec, QueueState and QueueSnapshot are tenant
// queues as a cycle sees them.
//
// # Pieces
//
//   - Sources (sources.go): the APIs that define tenant queues, in the
//     order of precedence, and the reader of each object (OwnQueueSpec,
//     VolcanoQueueSpec). Event handlers watch them and report specs to
//     the cache (eventhandlers.TenantQueueCache), which hands them to
//     Tenants.SetQueue.
//   - Usage (usage.go): what the jobs of each tenant queue use and wait
//     for, kept in step with every task change by Tenants.ChangeJob,
//     which the cache calls under its own lock.
//   - Shares (shares.go): the division of the capacity among the tenant
//     queues (pkg/fairshare is the algorithm), recomputed when a tenant
//     queue changes or starts asking, and otherwise at most every 50 ms
//     (demand) or Options.Refresh (capacity); cycles read it as a
//     framework.QueueSnapshot (Snapshot, SnapshotFor).
//   - Order (order.go): the OrderPolicy extension point, a registry by
//     name (OrderPolicies), the default FairShare policy and Unranked. The
//     chosen policy ranks the tenant queues each time the shares are
//     divided, and the ranks go to the scheduling queue.
//   - Status (Statuses, and the subpackage status): every tenant queue in
//     force with its state or why it is left out; status writes the
//     project's own Queues' status and the per-queue metrics.
//
// # Lock
//
// Tenants.mu (sync.Mutex) guards all of Tenants' state: the specs, the
// usage, the generations and the last division of the capacity. It is
// taken alone by SetQueue, Watch, CapacityMayGrow and Usage, and with the
// cache's lock (pkg/cache SchedulerCache.mu) already held by ChangeJob
// (for writing), Snapshot, SnapshotFor and Statuses (for reading), never
// the other way round. While holding it, Tenants calls only the
// scheduling queue (SchedulingQueue, whose lock is a leaf), the capacity
// function the caller passed (which reads the cache's state under the
// lock the caller holds), the OrderPolicy, the clock and the logger. The
// retry that SetQueue raises runs after mu is released.
package tenancy
