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

// Package cache is the scheduler's state: nodes and what is accounted to
// them, jobs (gangs, and single pods as jobs of one) with all their tasks,
// and the scheduling queue of jobs that have pending pods. It implements
// eventhandlers.Cache, runs the informers, and dispatches every informer
// event to one eventhandlers.Interface, which turns events into calls of
// that Cache API.
//
// # Pieces
//
//   - SchedulerCache (cache.go, nodes.go, pods.go, external.go): the
//     framework's NodeInfos, TaskInfos and JobInfos. A pod bound to a node
//     the cache does not know is accounted to a placeholder NodeInfo,
//     which the node fills when it arrives; removing a node that still has
//     pods turns it back into a placeholder. External usage
//     (SetExternalUsage, e.g. ExternalWorkloads) is kept per key and
//     summed into NodeInfo.External, which Idle subtracts; it creates and
//     keeps placeholders like pods do, and a placeholder is deleted only
//     when neither pods nor external usage remain. Usage on a node that
//     exists but is outside Options.NodeSelector creates no placeholder:
//     it is kept aside (outside) and counted on the node if the node
//     starts matching. Every change of a listed node touches it, so
//     snapshots see it. The cache raises no event for any of this; the
//     handler does.
//   - Job records (pods.go): every task is in the record of its job but
//     the bound pods of other schedulers that are no gang's members
//     (KeepsJobRecord), most of a large cluster's pods: they are kept as
//     tasks on their nodes only, indexed by name, and Job builds their
//     one-task job when asked (preemption and reclaim read its queue).
//   - Pods leave the cache in one of two ways: DeletePod, for a pod that
//     was deleted, whatever the cache holds it as (pending, assumed,
//     bound), and RemovePendingPod, for a pod that stopped waiting but
//     still exists. A pending or assumed pod that gets bound needs neither:
//     AddPod moves it to its node.
//   - Assumed pods (assume.go): the scheduler's placements whose bind is
//     in flight, accounted on their node before the informer reports them
//     bound; see below.
//   - The scheduling queue (pkg/schedulingqueue), owned by the cache: the
//     cache tells it which pods are pending (PodChanged, PodRemoved) under
//     its own lock, so the queue and the jobs never disagree.
//   - Gangs (groups.go): what group objects say about their gangs
//     (SetGroupPolicy), and the owner kinds whose pods, when they name no
//     group explicitly, are put in their owner's gang (SetOwnerGangs; the
//     rule is framework.GroupResolver, also used by the consistency
//     checker). Tasks are indexed by the owner a gang of theirs would be
//     inferred from, so that an owner's policy reaches every gang it
//     defines and, when it starts or stops
//     making its pods independent (a Job that runs one pod at a time), its
//     pods move between its gang and jobs of their own, pending, assumed
//     or bound. They move too when discovery finds that the scheduler may
//     not list an owner kind's resource (no gang is inferred from it
//     then), or may again.
//   - Snapshot (snapshot.go): clones of the schedulable NodeInfos, updated
//     incrementally through a list of NodeInfos ordered by generation. A
//     scheduling cycle may place pods on the clones tentatively
//     (Snapshot.AddPod); the next update undoes that.
//   - Run (informers.go): the cache hands its filters (whose pods, which
//     nodes) to its informer host (pkg/cache/informerhost), which runs
//     the informers (the native ones limited to Options.Resources, the
//     dynamic ones the handler asks for or would like where served, and
//     the custom ones, all with the same transform and filters) and
//     dispatches their events to the handler; the cache starts its own
//     loops beside it (the queue's flushes, the expiry of assumed pods).
//   - Tenant queues (tenancy.go): the Queue objects that divide the
//     capacity among tenants are pkg/tenancy's (not to be confused with
//     the scheduling queue above). The cache holds a *tenancy.Tenants,
//     hands it the tenant queues handlers report (SetTenantQueue), keeps
//     its usage in step with every task change (changeJobLocked, under
//     mu), and gives it the capacity they share (capacityLocked); cycles
//     read the tenant queues as a framework.QueueSnapshot (CycleJob), and
//     Tenants gives the scheduling queue their order (its OrderPolicy).
//   - Claim devices (claims.go): the devices of pods' own ResourceClaims
//     count against their tenant queues (framework.TaskInfo.ClaimDevices).
//     The informer host passes every ResourceClaim, ResourceClaimTemplate
//     and DeviceClass event through the cache (claimObserver) before the
//     handler: the cache records the objects, and recounts and replaces
//     the tasks that read them, keeping the tenant queues' usage in step.
//   - Device totals (devices.go): the devices published in ResourceSlices
//     that each DeviceClass selects count in the capacity the tenant
//     queues share (capacityLocked), so that weights divide DRA-only
//     devices. ResourceSlice events pass the claim observer too; the
//     cache keeps per slice how many devices each class selects, and
//     sums them when the capacity is recounted.
//   - View (view.go): a copy of all of the above for the tools that
//     inspect the cache, taken in short sections of the lock, and Dump
//     (dump.go), the same rendered as JSON for people. The tools
//     themselves (the consistency checker and the /debug endpoints) live
//     in pkg/cache/debugger and read only View, Dump and the exported
//     readers (StateRules, CustomInformers, JobIDForPod, Options).
//
// # Assumed pods
//
// A task is Pending, Assumed or Bound. The scheduling loop, having placed
// a job, calls AssumePod for each placed pod: the task becomes Assumed and
// counts on its node at once, so the next UpdateSnapshot sees the room
// taken while the bind call is in flight. Then, per pod:
//
//   - the bind fails: ForgetPod takes the pod off the node and makes it
//     Pending again; the loop reports the attempt with AddUnschedulable.
//   - the bind succeeds: FinishBinding starts a timer of
//     Options.AssumedPodTTL. When the informer reports the pod bound
//     (AddPod or UpdatePod), the task becomes Bound, on the node the
//     informer reports. If it does not in time, the assumption expires:
//     the pod is Pending again and its job retried after backoff.
//   - the pod is deleted: DeletePod drops the assumption with it, and
//     reports the room freed.
//
// The informer keeps reporting an assumed pod pending until it sees it
// bound; the handler then calls AddPod, which confirms the assumption in
// one step, so the node never looks free in between. RemovePendingPod of
// an assumed pod (it stopped waiting, but was not deleted) only takes it
// out of the scheduling queue and keeps the assumption: forgetting or
// expiring it then removes the pod instead of making it pending again.
//
// # Lock discipline
//
// There are four locks (and, within the first, the tenant queues' and
// the ceiling's). Two pairs nest, always in the order given; no other
// lock is ever taken while one of them is held.
//
//  1. SchedulerCache.mu (sync.RWMutex) guards the node, task and job state:
//     the nodes map and the generation-ordered list of nodeItems, the
//     generation counter, the log of removed nodes, the tasks, jobs,
//     jobless-task and assumed-pod maps, the group policies, the owner kinds gangs are
//     inferred from and the index of tasks by owner (groups.go), the
//     claims, templates and device classes claim devices are counted from
//     and the index of tasks by claim (claimObjs, claims.go), the device
//     classes and resource slices of the device totals (devices.go), and the
//     counters behind the size gauges. It is
//     taken by the eventhandlers.Cache methods, SetGroupPolicy,
//     SetOwnerGangs, AssumePod, ForgetPod,
//     FinishBinding, NodeInfo, Job, CycleJob, UpdateSnapshot and View, by the
//     assumed-pod expiry loop, by the node selector filter
//     (setNodeExcluded) and by the claim observer (setClaimObject, which
//     raises framework.EventQueueChange in the scheduling queue only after
//     releasing it). While holding it, the cache calls into the
//     scheduling queue (taking its lock, step 2), reads Options.Clock,
//     logs, and sets Prometheus gauges and counters — nothing else: never
//     the event handler, an informer or a user-supplied function.
//
//     Within it, tenancy.Tenants' lock (pkg/tenancy) guards the tenant
//     queues: their specs, usage and the last division of the capacity.
//     The cache takes it through Tenants with mu held: for writing in
//     changeJobLocked, for reading in CycleJob, TenantQueueSnapshot,
//     TenantQueueStatuses and Demand. Tenants takes it alone too
//     (SetTenantQueue, WatchTenantQueues, and CapacityMayGrow from
//     MoveAllToActiveOrBackoffQueue and, after releasing mu,
//     setClaimObject), never taking mu under it; while
//     holding it, Tenants calls only into the scheduling queue (step 2:
//     jobs' tenant queues, the tenant queues' order, the jobs waiting for
//     room, and the event that the shares moved), the capacity function
//     the cache passes (which reads nodes under the mu the caller holds),
//     and its OrderPolicy. SchedulerCache.ceilingMu guards the ceiling
//     (capacity.go); it is taken with mu held, or alone, and nothing is
//     taken under it.
//
//  2. The scheduling queue's lock (pkg/schedulingqueue; a sync.Mutex with
//     a sync.Cond for Pop) guards all queue state: the jobs map, the active
//     and backoff heaps, the unschedulable map and the cycle counters. It
//     is a leaf: nothing called while it is held takes another lock of
//     this project. The LessFunc and the plugins' QueueingHintFns run
//     under it, so they must be fast and must not call the Cache or the
//     queue: the Cache would take SchedulerCache.mu after the queue's
//     lock, the reverse of the order above, and could deadlock. Pop
//     releases it while it waits.
//
//  3. informerhost.Host.runMu (sync.Mutex; the cache's host, see
//     pkg/cache/informerhost) guards the start-up state: whether Run has
//     succeeded, the custom informers, the handler registrations and
//     whether the first discovery is still pending. Run holds it while it
//     wires handlers to informers (which takes the informers' own locks)
//     and while it creates the per-resource statistics (taking
//     informerhost.Dispatchers.mu, step 4); so does the discovery
//     goroutine while it wires an informer for a resource it found served,
//     appending to a copy of the registrations. Readers (HandlersSynced,
//     WaitForHandlersSync, Handlers, EventBacklog, StateRules,
//     CustomInformers) copy what they need and call HasSynced after
//     releasing it. SetOwnerGangs takes it briefly (Host.Running), then
//     releases it before taking 1, and the discovery goroutine tells the
//     cache about owner kinds (taking 1) without holding it: 3 and 1
//     never nest.
//
//  4. informerhost.Dispatchers.mu (sync.Mutex) guards the map from
//     resource to event statistics. It is taken only while wiring and
//     dumping — never on the event path, where each dispatcher holds its
//     statistics directly and counts with atomics and pre-resolved
//     Prometheus counters.
//
// The event path takes no lock of its own: an informer goroutine calls a
// dispatcher (the node filter first takes 1 to record nodes outside the
// selector), which calls the handler, which calls the Cache (1, then 2)
// or MoveAllToActiveOrBackoffQueue (2 only). The scheduling loop calls AssumePod, ForgetPod, FinishBinding,
// Job and UpdateSnapshot (1, then 2) and the queue's own methods (2 only),
// and works on its Snapshot and the NodeInfos in it without locks: they
// are its own. View takes 1 for reading in many short sections (a few
// maps, then nodes and jobs in chunks), then 2, never nested; Dump is a
// View, then 3 and 4, one after the other, so its parts are each
// consistent but not taken at one instant. The debugger's checker takes
// 3 briefly (StateRules, CustomInformers), then Views, and holds no lock
// while it lists or compares.
package cache
