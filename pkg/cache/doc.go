// Package cache is the scheduler's state: nodes and what is accounted to
// them, jobs (gangs, and single pods as jobs of one) with all their tasks,
// and the scheduling queue of jobs that have pending pods. It implements
// eventhandlers.Cache, runs the informers, and dispatches every informer
// event to one eventhandlers.Interface, which turns events into calls of
// that Cache API.
//
// # Pieces
//
//   - SchedulerCache (cache.go): NodeInfos, TaskInfos and JobInfos. A pod
//     bound to a node the cache does not know is accounted to a placeholder
//     NodeInfo, which the node fills when it arrives; removing a node that
//     still has pods turns it back into a placeholder. External usage
//     (SetExternalUsage, e.g. ExternalWorkloads) is kept per key under mu
//     and summed into NodeInfo.External, which Idle subtracts; it creates
//     and keeps placeholders like pods do, and a placeholder is deleted
//     only when neither pods nor external usage remain. Every change
//     touches the node, so snapshots see it. The cache raises no event for
//     it; the handler does.
//   - Dispatch (dispatch.go): nativeMethods maps native resources to
//     Interface methods; optionalMethods maps Grant and ExternalWorkload
//     to the optional GrantEventHandler and ExternalWorkloadEventHandler,
//     and Run fails if a custom informer needs one the handler lacks.
//   - Assumed pods (cache.go): the scheduler's placements whose bind is in
//     flight, accounted on their node before the informer reports them
//     bound; see below.
//   - SchedulingQueue (queue.go): active, backoff and unschedulable
//     queues of jobs, one entry per job. A job waits in the unschedulable
//     queue for one of the cluster events its last attempt named.
//   - Snapshot (snapshot.go): clones of the schedulable NodeInfos, updated
//     incrementally through a list of NodeInfos ordered by generation. A
//     scheduling cycle may place pods on the clones tentatively
//     (NodeInfo.AddPod); the next update undoes that.
//   - Run (informers.go, custom.go, dispatch.go): the informers (the
//     native ones limited to Options.Resources), their filters and
//     transform, and the dispatch table that maps a Resource to the
//     handler's methods, counting events and recovering panics; and the
//     expiry of assumed pods.
//   - Dump (dump.go): a JSON picture of all of the above.
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
//   - the pod is deleted: the assumption is dropped with it.
//
// The informer keeps reporting an assumed pod pending until it sees it
// bound, and the default handler then calls RemovePendingPod and AddPod in
// turn. RemovePendingPod therefore keeps an assumed pod assumed (it only
// leaves the scheduling queue), so that its node never looks free in
// between. A delete is recognised by the dispatcher instead, which drops a
// still-assumed pod after the handler has handled its delete event. An
// assumed pod the informer no longer reports pending is never made
// pending again: forgetting or expiring it removes it.
//
// # Lock discipline
//
// There are four locks. Two pairs nest, always in the order given; no
// other lock is ever taken while one of them is held.
//
//  1. SchedulerCache.mu (sync.RWMutex) guards the node, task and job state:
//     the nodes map and the generation-ordered list of nodeItems, the
//     generation counter, the log of removed nodes, the tasks, jobs and
//     assumed-pod maps, and the counters behind the size gauges. It is
//     taken by the eventhandlers.Cache methods, AssumePod, ForgetPod,
//     FinishBinding, NodeInfo, Job, UpdateSnapshot and Dump, by the
//     assumed-pod expiry loop, and by the Pod dispatcher after the handler
//     has returned from DeletePod. While holding it, the cache calls into
//     the SchedulingQueue (taking SchedulingQueue.lock, step 2), reads
//     Options.Clock, logs, and sets Prometheus gauges and counters —
//     nothing else: never the event handler, an informer or a
//     user-supplied function.
//
//  2. SchedulingQueue.lock (sync.Mutex, with a sync.Cond for Pop) guards
//     all queue state: the jobs map, the active and backoff heaps, the
//     unschedulable map and the cycle counters. It is a leaf: nothing
//     called while it is held takes another lock of this package. The
//     LessFunc and every eventhandlers.PreEnqueueCheck run under it, so
//     they must be fast and must not call the Cache or the queue: the
//     Cache would take SchedulerCache.mu after SchedulingQueue.lock, the
//     reverse of the order above, and could deadlock. Pop releases it
//     while it waits.
//
//  3. SchedulerCache.runMu (sync.Mutex) guards the start-up state: whether
//     Run has succeeded, the custom informers and the handler
//     registrations. Run holds it while it wires handlers to informers
//     (which takes the informers' own locks) and while it creates the
//     per-resource statistics (taking dispatchStats.mu, step 4). Readers
//     (HandlersSynced, WaitForHandlersSync, Dump) copy the registrations
//     out and call HasSynced after releasing it.
//
//  4. dispatchStats.mu (sync.Mutex) guards the map from resource to event
//     statistics. It is taken only while wiring and dumping — never on the
//     event path, where each dispatcher holds its statistics directly and
//     counts with atomics and pre-resolved Prometheus counters.
//
// The event path takes no lock of its own: an informer goroutine calls a
// dispatcher, which calls the handler, which calls the Cache (1, then 2)
// or MoveAllToActiveOrBackoffQueue (2 only); for a pod delete the
// dispatcher then takes 1 (and maybe 2) itself, after the handler has
// returned. The scheduling loop calls AssumePod, ForgetPod, FinishBinding,
// Job and UpdateSnapshot (1, then 2) and the queue's own methods (2 only),
// and works on its Snapshot and the NodeInfos in it without locks: they
// are its own. Dump takes 1, 2, 3 and 4 one after the other, never
// nested, so its parts are each consistent but not taken at one instant.
package cache
