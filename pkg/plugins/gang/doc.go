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

// Package gang implements the Gang plugin, which makes a job's scheduling
// all or nothing.
//
// PreFilter rejects a job that does not yet have enough tasks to ever
// start: when its pending plus bound tasks are fewer than its
// min-available, the job is Unschedulable with "waiting for tasks: 2 of
// min-available 4 exist". It waits in the unschedulable queue without
// holding any capacity, and is retried when its own pods change (the queue
// does that for every job) or after one of the events below. A job whose
// annotations are invalid (Job.Err) already requires all of its tasks, so
// it passes; the scheduler reports the validation error.
//
// Permit rejects the cycle's placements unless the placed tasks plus the
// bound ones reach min-available, with "gang ns/name: 3 of 4 tasks could
// be placed, min-available 4" (Unschedulable); the framework then
// unreserves every placement and binds none.
//
// Args: none; non-empty args are an error.
//
// Events: a Permit rejection happens because some tasks did not pass the
// filters, so Gang registers for every event that can make a task fit
// where it did not: an assigned pod deleted or finished (Pod/Delete), a new
// node (Node/Add), and a node whose allocatable, labels, taints or
// schedulability changed (Node/UpdateNodeAllocatable, UpdateNodeLabel,
// UpdateNodeTaint, UpdateNodeSchedulable), and external usage (a VM) that
// shrank or went away (framework.EventExternalUsageDecrease). It also
// registers Pod/Add: a
// waiting gang needs more tasks, and a task of the gang bound by someone
// else counts towards min-available.
package gang
