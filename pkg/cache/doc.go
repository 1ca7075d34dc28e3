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
//     still has pods turns it back into a placeholder.
//   - SchedulingQueue (queue.go): active, backoff and unschedulable
//     queues of jobs, one entry per job.
//   - Snapshot (snapshot.go): clones of the schedulable NodeInfos, updated
//     incrementally through a list of NodeInfos ordered by generation.
//   - Run (informers.go, custom.go, dispatch.go): the informers, their
//     filters and transform, and the dispatch table that maps a Resource to
//     the handler's methods, counting events and recovering panics.
//   - Dump (dump.go): a JSON picture of all of the above.
//
// # Lock discipline
//
// There are four locks. Two pairs nest, always in the order given; no
// other lock is ever taken while one of them is held.
//
//  1. SchedulerCache.mu (sync.RWMutex) guards the node, task and job state:
//     the nodes map and the generation-ordered list of nodeItems, the
//     generation counter, the log of removed nodes, the tasks and jobs
//     maps, and the counters behind the size gauges. It is taken by the
//     eventhandlers.Cache methods, NodeInfo, Job, UpdateSnapshot and Dump.
//     While holding it, the cache calls into the SchedulingQueue (taking
//     SchedulingQueue.lock, step 2), logs, and sets Prometheus gauges —
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
// or MoveAllToActiveOrBackoffQueue (2 only). Dump takes 1, 2, 3 and 4 one
// after the other, never nested, so its parts are each consistent but not
// taken at one instant.
package cache
