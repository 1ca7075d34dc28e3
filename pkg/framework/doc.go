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

// Package framework defines what a scheduling plugin is and what it sees:
// the extension points a scheduling cycle runs (QueueSort, PreFilter,
// Filter, PreScore, Score, Reserve, Permit, PostFilter, Bind), their
// results (Status),
// the per-cycle state, and the scheduler's model of the cluster that plugins
// read: nodes and what is accounted to them (NodeInfo), jobs and their tasks
// (JobInfo, TaskInfo, Job), queued jobs (QueuedJob), and the cluster events
// after which a rejected job may fit (ClusterEvent, with queueing hints).
//
// It is a leaf: it imports nothing of this project but pkg/resources. The
// cache, the scheduling queue, the event handlers, the plugins and the
// runtime that runs them (package framework/runtime) all import it, never
// the other way round.
//
// It holds no rules that match a pod to a gang: those are pkg/dialects',
// which imports it. The framework names the dialects' labels and
// annotations and keeps the types (GroupRef, Membership, OwnerKinds); a
// GroupResolver reads a pod's groups through the GroupMatcher it is
// handed (a dialects.Table) and matches no group without one, so every
// caller that needs a pod's gang says explicitly by which rules: the
// cache by its handler's table, tests by dialects.Resolver(), and the
// scheduling cycle, preemption and the nominator by the job they already
// know (NewAssumedTaskInfo).
//
// A cycle schedules one job. PreFilter and Permit see the whole job, so a
// gang is placed all or nothing; Filter, Score, Reserve and Bind see one
// pod at a time. PostFilter runs only for a job the cycle could not
// place: its plugins bring a policy (which pods may go) and make room
// through the RoomMaker of the preemption library (framework/preemption)
// that the scheduler hands them.
package framework
