// Package schedulingqueue is the scheduling queue: the jobs (gangs, and
// single pods as jobs of one) that have pending pods, each queued as one
// unit, in an active heap ordered by the profile's QueueSort, a backoff
// heap for jobs whose last attempt failed, and an unschedulable set of jobs
// that wait for a cluster event that may help them.
//
// Which event helps whom is decided by the plugins: the scheduler records,
// for a job it could not place, the events registered by the plugins that
// rejected it (framework.PluginEvent), and MoveAllToActiveOrBackoffQueue
// moves the job only when a raised event matches one of them and that
// plugin's queueing hint answers Queue. A change of one of the job's own
// pending pods always retries it, and a job that waited
// Options.UnschedulableTimeout is retried anyway.
//
// The cache owns the queue's pod membership (PodChanged, PodRemoved,
// AssumptionExpired), calling it under the cache's own lock; the queue's
// lock is therefore a leaf and is never held while calling out, except
// into the LessFunc and the queueing hints, which must not call back.
package schedulingqueue
