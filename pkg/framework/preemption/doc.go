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

// Package preemption is the preemption library beside the framework: the
// machinery with which PostFilter plugins make room for a job the cycle
// could not place, by evicting running pods.
//
// The scheduler builds one Engine and hands each cycle's PostFilter
// plugins its framework.RoomMaker (Engine.RoomMaker). A plugin brings a
// Policy (which pods may go, within what budget, over how many nodes, and
// how its outcome reads) and runs it with an Evaluator; DefaultPreemption
// and Reclaim are two such plugins. The engine then:
//
//	waits while the job's last victims are still on their nodes;
//	simulates on the cycle's snapshot: each pending pod through the
//	    cycle's own filter path (frameworkruntime.Framework.FilterPod),
//	    else on the best node where victims make room (whole victim gangs
//	    and sub-gangs, PodDisruptionBudgets spared where it can), a
//	    multi-level job's sub-group by sub-group (one below its quorum
//	    undone with its victims, as the cycle trims it), then the Permit
//	    plugins;
//	nominates the pods to their nodes (a Nominator: pkg/schedulingqueue's);
//	evicts the victims through the Eviction API, off the scheduling loop.
//
// The package knows the cache, the queue and the scheduler only through
// its own interfaces (Snapshot, JobLister, Nominator, Background). See
// docs/preemption.md.
package preemption
