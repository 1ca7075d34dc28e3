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
