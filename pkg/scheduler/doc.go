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

// Package scheduler is the scheduling loop. It pops one job at a time from
// the cache's queue, takes an incremental snapshot of the nodes, and runs
// the job's profile (a frameworkruntime.Framework) over it:
//
//	PreFilter(job)                       whole job: e.g. gang has all its tasks
//	Placements(job)                      the domains to try (e.g. racks), if
//	                                     a PlacementPlugin has a say; then,
//	                                     per domain until one is admitted:
//	for each pending pod:
//	    Filter(pod, node) on every node  in parallel; a diagnosis per node
//	    Score(pod, feasible nodes)       weighted; the best node wins
//	    Reserve(pod, node)               and the pod is added to the
//	                                     snapshot, so later pods see it
//	Permit(job, placements)              all or nothing: e.g. gang min-available
//	AssumePod(pod, node) in the cache    capacity is taken at once
//	Bind(pod, node)                      asynchronously, bounded, with retries
//
// A job that cannot be placed gets PodScheduled=False/Unschedulable with a
// message that counts the reasons per node, a FailedScheduling event, and
// goes to the unschedulable queue until an event its rejecting plugins
// registered for. A bind that fails after its retries is rolled back
// (ForgetPod, Unreserve) and the job is retried after backoff.
//
// Before such a job is parked, the profile's PostFilter plugins may make
// room for it through the preemption library (pkg/framework/preemption),
// whose engine the scheduler builds and hands each cycle's plugins as a
// framework.RoomMaker: its pods are placed again in the snapshot, through
// the cycle's own filter path (Framework.FilterPod), each where it fits
// or else on the node where the cheapest set of pods the plugin's policy
// allows makes room (a victim gang goes whole unless it keeps its
// quorum), and only if the whole job then fits are the victims evicted
// through the Eviction API and the pods nominated to their nodes. The
// nominations (pkg/schedulingqueue's Nominator) are held against jobs of
// lower or equal priority at the start of each cycle (holdNominated) until
// the pods are placed or the job gives up. See docs/preemption.md.
package scheduler
