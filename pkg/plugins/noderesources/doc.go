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

// Package noderesources implements the NodeResourcesFit plugin: one plugin
// that both filters nodes on free resources and scores them on how
// allocated they would be, with the scoring strategy chosen by its args
// (kube-scheduler's design, rather than one plugin per strategy).
//
// PreFilter computes the requests of every pending pod of the job once
// (resources.PodRequests: containers, init containers, sidecars, overhead,
// plus one pod) and keeps them in the CycleState for Filter and Score;
// without it, Filter and Score compute them per call.
//
// Filter rejects a node whose idle resources (framework.NodeInfo.Idle:
// schedulable minus requested minus external usage such as VMs, with the
// pods placed earlier in the cycle counted) cannot hold the pod's requests, with one Unschedulable reason
// per missing resource, as kube-scheduler words them: "Too many pods",
// "Insufficient cpu", "Insufficient memory", "Insufficient
// ephemeral-storage", "Insufficient nvidia.com/gpu", ... Only resources
// the pod requests are checked (and always the pod count), so a pod that
// requests no memory still fits on a node whose memory is over-committed.
// An extended resource backed by DRA (a DeviceClass maps its name; the
// DynamicResources plugin says so in the cycle state, see
// pluginutil.DRAExtended) is not checked on a node that does not list it
// in its allocatable: DynamicResources allocates its devices there. A node
// that lists it serves it by its device plugin and is checked as any
// other. A NodeInfo without a node (a placeholder) is
// UnschedulableAndUnresolvable with "node(s) not found".
//
// Score rates the node from 0 to 100 by the weighted average, over the
// configured resources, of requested-after-placement (the node's requested
// plus its external usage plus the pod's) divided by schedulable:
//
//   - LeastAllocated (default): 100 * (schedulable - requested) /
//     schedulable, so the emptiest node wins and work spreads out;
//   - MostAllocated: 100 * requested / schedulable, so work packs onto the
//     fullest nodes and whole nodes stay free for large gangs.
//
// A resource the node does not have (schedulable 0), and an extended
// resource the pod does not request, are left out of the average, so that
// GPU nodes do not look empty (or full) to CPU-only pods. Scoring uses the
// requests as they are: a pod without requests counts as requesting
// nothing. Scoring a NodeInfo without a node is an Error status (Filter
// should have rejected it).
//
// Args (all optional; the defaults are shown):
//
//	scoringStrategy: LeastAllocated   # or MostAllocated
//	resources:                        # absent or empty: cpu and memory, weight 1
//	- name: cpu
//	  weight: 1                       # 1..100; 0 or absent means 1
//	- name: memory
//	  weight: 1
//
// kube-scheduler's shape of the same args is read too, so that a
// KubeSchedulerConfiguration profile's pluginConfig works unchanged:
//
//	scoringStrategy:
//	  type: MostAllocated
//	  resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
//
// Its requestedToCapacityRatio, ignoredResources and ignoredResourceGroups
// are refused, naming the field.
//
// Unknown fields, an unknown strategy, an invalid or repeated resource name
// and a weight outside 1..100 are errors naming the field.
//
// Events: a deleted (or finished) assigned pod frees resources
// (Pod/Delete); a new node (Node/Add) and a change of a node's allocatable
// (Node/UpdateNodeAllocatable) add capacity; external usage that shrinks,
// stops, moves away or is deleted frees it (eventhandlers.
// EventExternalUsageDecrease).
package noderesources
