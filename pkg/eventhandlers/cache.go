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

package eventhandlers

import (
	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Cache is the narrow API of the scheduler cache that event handlers call.
// pkg/cache implements it. Every method is safe for concurrent use and
// returns promptly.
//
// The cache keeps the objects it is given by reference, without copying, and
// never modifies them: at 150,000 pods a second copy of every object would
// double the scheduler's memory. Pass objects straight from the informer
// (which are immutable by client-go's contract), or a fresh copy; never
// modify an object after handing it over.
type Cache interface {
	NodeCache
	ExternalUsageCache
	NodeCapCache
	PodCache

	// MoveAllToActiveOrBackoffQueue raises event: jobs waiting in the
	// unschedulable queue that it may help are retried. A job is moved
	// when a plugin that rejected it registered a matching event and its
	// queueing hint, given oldObj and newObj, answers Queue (see
	// framework.QueueingHintFn); the handler only says what happened, the
	// plugins decide whom it helps. oldObj is nil for an addition, newObj
	// for a deletion. The objects must not be modified afterwards.
	MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any)

	// IsResponsibleFor reports whether this scheduler schedules pod, i.e.
	// whether pod.spec.schedulerName is one of its --scheduler-name values.
	IsResponsibleFor(pod *v1.Pod) bool
}

// NodeCache holds nodes and their accounting.
type NodeCache interface {
	// AddOrUpdateNode records node. A placeholder created earlier for pods
	// that arrived before their node is filled in.
	AddOrUpdateNode(node *v1.Node) error
	// RemoveNode forgets node. Pods still accounted to it stay on a
	// placeholder until they are deleted too.
	RemoveNode(node *v1.Node) error
}

// ExternalUsageCache accounts resources used on nodes by things the
// scheduler does not schedule and that are not pods, such as the
// ExternalWorkloads of an external resource manager.
//
// key identifies the external object, e.g. "externalworkload/<name>"; keys
// are opaque to the cache and must be unique across everything a handler
// accounts. Usage is counted against its node exactly like the requests of
// the pods bound to it: the node's idle capacity (NodeInfo.Idle) shrinks
// by it. Usage on a node the cache does not know is kept on a placeholder,
// as for pods, until the node arrives; usage on a node outside
// --node-selector is kept aside, without a placeholder, and counted if the
// node starts matching.
//
// The cache only accounts: it raises no cluster event. A handler that
// frees or moves usage should raise one (e.g.
// framework.EventExternalUsageDecrease) so that waiting jobs retry.
type ExternalUsageCache interface {
	// SetExternalUsage records that the object key uses usage on the node
	// nodeName. Setting a key again replaces its earlier usage, which may
	// have been on another node (the usage moves).
	SetExternalUsage(key string, nodeName string, usage resources.Resource) error
	// RemoveExternalUsage forgets the usage of key. An unknown key is an
	// error wrapping the cache's not-found error.
	RemoveExternalUsage(key string) error
}

// NodeCapCache caps what this scheduler may use on nodes: under two-level
// scheduling an allocator grants each framework capacity per node, and the
// scheduler must stay inside its grants.
//
// On a capped node, what is idle for this scheduler is the smaller of what
// the node has left (allocatable less every pod and external usage) and
// what the cap has left (the cap less the requests of this scheduler's own
// pods there, framework.TaskInfo.Own). Every resource but the pod count is
// capped; a resource the cap does not name is capped at zero. An uncapped
// node behaves as if there were no cap.
//
// Like ExternalUsageCache, the cache only accounts: a handler that raises
// or lifts a cap raises framework.EventGrantIncrease with a
// *framework.NodeCapChange so that waiting jobs retry.
type NodeCapCache interface {
	// SetNodeCap caps what this scheduler's pods may request in total on
	// nodeName. The node need not be known yet: the cap applies when it
	// arrives.
	SetNodeCap(nodeName string, limit resources.Resource) error
	// RemoveNodeCap lifts the cap on nodeName. Under RequireNodeCaps the
	// node goes back to no grant at all. Removing a cap that is not set is
	// not an error.
	RemoveNodeCap(nodeName string) error
	// RequireNodeCaps makes every node without a cap capped at zero: no
	// pod of this scheduler fits there ("No grant on node"). A two-level
	// handler calls it once, from its factory.
	RequireNodeCaps()
	// CapExceededNodes lists the nodes where this scheduler's pods request
	// more than the cap, sorted by node name: the grant shrank below what
	// runs there. Nothing new of this scheduler fits on them until that
	// clears; the metric batch_scheduler_grant_overcommitted_nodes counts
	// them.
	CapExceededNodes() []CapExceeded
}

// CapExceeded is a node where this scheduler's pods request more than the
// cap (see NodeCapCache.CapExceededNodes).
type CapExceeded struct {
	Node *v1.Node
	// Cap is the cap, Used what this scheduler's pods there request.
	Cap, Used resources.Resource
	// Pods are this scheduler's pods counted on the node, bound or
	// assumed.
	Pods []*v1.Pod
	// Tasks are the cache's tasks of Pods, in the same order (Tasks[i].Pod
	// is Pods[i]): each says the pod's job as the cache files it (its
	// gang, a gang inferred from its owner, or the pod alone), whether it
	// is bound or assumed, and its requests. A handler that must keep
	// gangs whole reads their other members with JobSource.Job. The
	// tasks are shared and immutable (see framework.TaskInfo): never
	// modify them. A Cache that leaves Tasks nil gives no job: a handler
	// then resolves the pods' jobs by its own table of dialects (the
	// groups they name explicitly).
	Tasks []*framework.TaskInfo
}

// PodCache holds the pods the scheduler tracks: assigned ones (spec.nodeName
// set, whoever bound them), which use their node's resources, and pending
// ones of this scheduler, which wait in the scheduling queue grouped into
// jobs (a gang shares the scheduling.k8s.io/group-name annotation; any
// other pod is a job of one). The cache also holds the pods the scheduler
// has placed and is binding (assumed pods), which the informer still
// reports pending.
//
// Accounting follows the pod's state: a running or terminating pod is
// counted on its node until it is deleted; a Succeeded or Failed pod is
// kept but no longer counted. A pod whose node is unknown is counted on a
// placeholder node that the real node later fills.
type PodCache interface {
	// AddPod and UpdatePod record an assigned pod. A pod the cache has as
	// pending or assumed becomes bound to the node newPod names: this is
	// how a pending pod that got bound moves (no RemovePendingPod first).
	AddPod(pod *v1.Pod) error
	UpdatePod(oldPod, newPod *v1.Pod) error

	// AddPendingPod and UpdatePendingPod record a pending pod of this
	// scheduler and queue its job. A pod the cache has assumed stays
	// assumed, with the new object.
	AddPendingPod(pod *v1.Pod) error
	UpdatePendingPod(oldPod, newPod *v1.Pod) error
	// RemovePendingPod takes a pod that is still in the cluster out of the
	// scheduling queue because it is no longer pending for this scheduler
	// (it finished before being scheduled, or is no longer ours). An
	// assumed pod keeps its assumption (its bind may already have
	// succeeded) until the bind fails or the assumption expires.
	RemovePendingPod(pod *v1.Pod) error

	// DeletePod forgets a pod that was deleted from the cluster, whatever
	// the cache holds it as: pending, assumed or bound, found by UID. freed
	// reports whether the pod held resources on a node (it was bound and
	// not finished, or assumed): waiting jobs may fit now, and the handler
	// should raise framework.EventAssignedPodDelete. An unknown pod is an
	// error wrapping the cache's not-found error.
	DeletePod(pod *v1.Pod) (freed bool, err error)
}

// PodRecordCache is an optional interface of a Cache (pkg/cache
// implements it): it records an assigned pod from the record the
// informers keep of it (framework.PodRecord), as AddPod and UpdatePod do
// from the pod made of that record, and keeps the record itself, so that
// the informer's store and the cache hold one record of the pod between
// them.
//
// A Cache that implements it is lent the pods the default handler makes of
// records: it reads the pod given to SetPodRecord, DeletePod and
// MoveAllToActiveOrBackoffQueue during the call only, and keeps nothing
// of it but strings and the record.
type PodRecordCache interface {
	SetPodRecord(rec *framework.PodRecord, pod *v1.Pod) error
}

// GroupPolicyCache is an optional interface of a Cache (pkg/cache
// implements it): it records what the objects that define gangs say, so
// that pods naming a group in a gang dialect get its quorum (see
// pkg/dialects and docs/scheduling.md).
type GroupPolicyCache interface {
	// SetGroupPolicy records what the group object of kind named name in
	// namespace says (nil: it is gone) and raises
	// framework.EventGangGroupChange.
	SetGroupPolicy(kind framework.GroupKind, namespace, name string, p *framework.GroupPolicy)
}

// RuntimeBoundCache is an optional interface of a Cache (pkg/cache
// implements it): it records what the owners of pods (batch Jobs) say
// about when their pods end, which runtime estimates read (see
// framework.RuntimeBound and docs/queues.md, "Reservations and
// backfill").
type RuntimeBoundCache interface {
	// SetRuntimeBound records the bound of the Job named name in
	// namespace; nil: it has none, or is gone.
	SetRuntimeBound(namespace, name string, b *framework.RuntimeBound)
}

// OwnerGangCache is an optional interface of a Cache (pkg/cache
// implements it): it infers gangs from the owners of pods that name no
// group explicitly (see framework.GroupResolver and docs/scheduling.md,
// "Gangs inferred from the owner"). The quorum of such a gang comes from
// the owner object's policy, given with GroupPolicyCache.SetGroupPolicy
// under the owner's kind and name.
type OwnerGangCache interface {
	// SetOwnerGangs sets the owner kinds gangs are inferred from. It must
	// be called before the cache runs (it fails after): a pod's job
	// depends on it.
	SetOwnerGangs(kinds framework.OwnerKinds) error
}

// GroupMatcherCache is an optional interface of a Cache (pkg/cache
// implements it): it puts pods in gangs by the rules of the gang dialects
// given (the default handler gives its table of dialects, pkg/dialects)
// rather than by the built-in ones.
type GroupMatcherCache interface {
	// SetGroupMatcher sets the rules that say which groups a pod names.
	// It must be called before the cache runs (it fails after): a pod's
	// job depends on it.
	SetGroupMatcher(m framework.GroupMatcher) error
}

// JobSource is an optional interface of a Cache (pkg/cache implements it):
// Job returns a copy of the job with id, every task of it (pending,
// assumed and bound), or false when the cache has none. A handler that
// reports on gangs (the default handler writes their PodGroups' status)
// reads them through it.
type JobSource interface {
	Job(id framework.JobID) (*framework.JobInfo, bool)
}

// TenantQueueCache is an optional interface of a Cache (pkg/cache
// implements it, handing the calls to pkg/tenancy): it records the tenant
// queues jobs are divided into (see docs/queues.md), not to be confused
// with the scheduling queue of pending jobs. source names the API the
// tenant queue comes from (tenancy.SourceOwn, tenancy.SourceVolcano; the
// project's own wins when both define a name); spec nil forgets the
// tenant queue of that name. framework.EventQueueChange is raised when
// something changed.
type TenantQueueCache interface {
	SetTenantQueue(source, name string, spec *framework.QueueSpec)
	// WatchTenantQueues tells the cache that tenant queues are watched: a
	// job that names a tenant queue no object defines then waits for one.
	// Until it is called, and while no tenant queue is set, the queue
	// jobs name is ignored.
	WatchTenantQueues()
}
