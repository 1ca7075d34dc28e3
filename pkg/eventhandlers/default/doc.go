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

// Package defaulthandler is the default event handler, registered as
// "default": it turns informer events into scheduler-cache state and wakes
// up waiting jobs when a change may let them fit. It follows the model of
// kube-scheduler's event handlers.
//
// # Pods
//
// Every pod is in one of three states:
//
//   - assigned: spec.nodeName is set. The pod lives in the cache (AddPod,
//     UpdatePod), whoever scheduled it, because it uses its node's
//     resources. Whether it is counted on its node
//     (running, terminating) or not (Succeeded, Failed), and what happens
//     to a pod whose node is not known yet, is decided by the cache.
//   - pending: not assigned, scheduled by this scheduler (Cache.
//     IsResponsibleFor) and not finished. The pod waits in the pending queue
//     (AddPendingPod, UpdatePendingPod, RemovePendingPod).
//   - gated: would be pending, but spec.schedulingGates is not empty. The
//     API server refuses to bind such a pod, so it is not given to the
//     cache at all: its job is scheduled as if the pod did not exist yet,
//     and a gang waits for it like for a member not created yet. The
//     update that removes its last gate adds it as pending (AddPendingPod),
//     which queues a new job at once and requeues a waiting one.
//   - untracked: anything else, such as another scheduler's pending pods,
//     or a pod that finished before it was ever scheduled. It is ignored.
//
// An update within one state is forwarded as an update; an update that
// changes state leaves the old state and enters the new one, so a pod that
// gets bound moves from the pending queue to the assigned-pod cache. A
// delete leaves the pod's state.
//
// An assigned pod that stops being counted on its node (it is deleted, or
// its phase becomes Succeeded or Failed) frees resources, so the handler
// raises framework.EventAssignedPodDelete. Deleting a pod that had
// already finished raises nothing: its resources were freed, and the event
// raised, when it finished. This matters for batch workloads, whose finished
// pods are deleted in bulk.
//
// A pod that starts being counted on a node (it is added already bound, by
// another scheduler or as a static or DaemonSet pod, or the informer
// reports a pending pod bound, by this scheduler or another) raises
// framework.EventAssignedPodAdd, and a label change of a counted pod
// raises framework.EventAssignedPodLabelChange: either may satisfy a
// waiting pod's pod affinity or topology spread constraint, or, for a
// label change, lift its anti-affinity. Only jobs rejected by a plugin
// that registered the event run their hints, so the events cost little
// when nothing waits for them.
//
// # Nodes
//
// Adding a node raises framework.EventNodeAdd. An update raises one
// labelled event per scheduling-relevant change: spec.unschedulable going
// from true to false (framework.EventNodeBecameSchedulable), status.allocatable
// (EventNodeAllocatableChange, quantities compared by value), labels
// (EventNodeLabelChange), spec.taints (EventNodeTaintChange) and the type
// and status of conditions (EventNodeConditionChange; heartbeats and
// transition times are ignored). An update that changes none of these, such
// as a heartbeat or an annotation, raises nothing.
//
// Deleting a node, or an update after which the policy no longer accepts
// it, raises framework.EventNodeDelete with the old node. It frees no
// capacity, but it can remove the topology domain that held a spread
// constraint's minimum, so that a pod fits elsewhere; kube-scheduler's
// PodTopologySpread registers node deletions for the same reason. Only
// plugins that register it run their hints.
//
// Every event carries the objects it is about (the old and new node of an
// update), so that the plugins' queueing hints can tell whether it may
// help a job they rejected: the handler raises events, the plugins decide.
//
// # Other resources
//
// PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
// CSIDriver, CSIStorageCapacity, PriorityClass, ResourceClaim,
// ResourceSlice and DeviceClass events, and events of the
// dynamic resources listed in the configuration, are not kept in the cache:
// each one raises a cluster event for its resource (Add, UpdateGeneric or
// Delete) with its objects. Native events are labelled
// "<Resource><Action>", e.g. "PersistentVolumeClaimAdd"; dynamic ones are
// not labelled and render as "<plural>.<version>.<group>/<Action>".
//
// # Robustness
//
// Periodic resyncs are ignored: an update whose old and new objects have the
// same resourceVersion changes nothing. Objects of the wrong type are logged
// and ignored, and cache.DeletedFinalStateUnknown tombstones are unwrapped
// (see eventhandlers.ObjectAs). An error returned by the cache is logged and
// does not stop the handler: the rest of the event is still forwarded and
// its cluster events are still raised, because a missed wake-up leaves work
// waiting until the unschedulable timeout while a spurious one costs one
// scheduling attempt.
//
// # Configuration
//
// The handler's section of the configuration file decodes into Args:
//
//	dynamicResources:
//	- widgets.v1alpha1.example.com
//	ownerGangs: {Job: false}
//
// # Gang dialects and gangs inferred from the owner
//
// What the dialects are, how pods name them and how their objects are
// read is the table of pkg/dialects (dialects.Builtin, or the table of
// WithDialects); the handler holds no dialect knowledge of its own.
// The handler runs no informer of its own. It asks the cache
// (eventhandlers.DiscoveredResourceRequester) to watch, where the API
// server serves them, the objects that define gangs: those of the gang
// dialects (native, scheduler-plugins and Volcano PodGroups, batch/v1
// Jobs; built by New with a rest.Config, or with WithGangDialects; set
// disableGangDialects to turn them off) and those of the owner kinds
// gangs are inferred from (Args.OwnerGangs: Job, RayCluster, JobSet,
// LeaderWorkerSet, MPIJob, PyTorchJob, all on by default), each with a
// transform that keeps only what its policy reads. Their events arrive
// through AddDynamic, UpdateDynamic and DeleteDynamic; the handler gives
// the cache each object's quorum policy (eventhandlers.GroupPolicyCache),
// tells it which owner kinds to infer gangs from
// (eventhandlers.OwnerGangCache) and the table's rules that put pods in
// gangs (eventhandlers.GroupMatcherCache), and writes the PodGroups' status
// (pkg/podgroups) from Run. A policy never panics on an odd object: a
// field of the wrong type or out of range makes the policy an error that
// names the object and the field, and the gang waits. See
// docs/scheduling.md.
//
// # Changing the behaviour: Policy, not overrides
//
// A vendor changes how nodes, pods or external workloads are treated with
// a Policy (WithPolicy): hooks that return the object as the scheduler
// should see it, a modified copy, or nil to ignore it. The handler calls
// them on every path, add, both versions of an update, delete and
// tombstones, so an object the policy rejects never reaches the cache and
// one it stops accepting leaves it. Overriding AddNode in a type that
// embeds *Handler would not do that: Go embedding is not virtual, and the
// embedded UpdateNode and DeleteNode would still call the default code.
//
//	policy := defaulthandler.Policy{
//		Node: func(n *v1.Node) *v1.Node {
//			if n.Labels["pool"] != "acme" {
//				return nil
//			}
//			return n
//		},
//	}
//	h, err := defaulthandler.New(ctx, c, cfg, rc, defaulthandler.WithPolicy(policy))
//
// Embedding is for adding behaviour for a resource the default handler
// only accepts, such as Grants: a type that embeds *Handler and
// implements AddGrant, UpdateGrant and DeleteGrant keeps the default
// behaviour everywhere else; Handler.Cache gives it the cache.
//
// A vendor whose configuration has fields of its own inlines Args in its
// own type (`yaml:",inline"`), decodes that, and calls NewWithArgs.
package defaulthandler
