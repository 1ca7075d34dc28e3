package eventhandlers

import (
	v1 "k8s.io/api/core/v1"

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
	AssignedPodCache
	PendingPodQueue

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
	// NodeIdle returns a copy of what is still free on the named node: its
	// schedulable capacity minus the requests of the pods counted on it and
	// minus its external usage (see ExternalUsageCache). ok
	// is false for an unknown node or a placeholder.
	NodeIdle(name string) (idle resources.Resource, ok bool)
}

// ExternalUsageCache accounts resources used on nodes by things the
// scheduler does not schedule and that are not pods, such as the
// ExternalWorkloads of an external resource manager.
//
// key identifies the external object, e.g. "externalworkload/<name>"; keys
// are opaque to the cache and must be unique across everything a handler
// accounts. Usage is counted against its node exactly like the requests of
// the pods bound to it: the node's idle capacity (NodeIdle, NodeInfo.Idle)
// shrinks by it. Usage on a node the cache does not know is kept on a
// placeholder, as for pods, until the node arrives.
//
// The cache only accounts: it raises no cluster event. A handler that
// frees or moves usage should call MoveAllToActiveOrBackoffQueue (e.g. with
// EventExternalUsageDecrease) so that waiting jobs retry.
type ExternalUsageCache interface {
	// SetExternalUsage records that the object key uses usage on the node
	// nodeName. Setting a key again replaces its earlier usage, which may
	// have been on another node (the usage moves).
	SetExternalUsage(key string, nodeName string, usage resources.Resource) error
	// RemoveExternalUsage forgets the usage of key. An unknown key is an
	// error wrapping the cache's not-found error.
	RemoveExternalUsage(key string) error
}

// AssignedPodCache holds pods that are bound to a node (spec.nodeName set).
//
// Accounting follows the pod's state: a running or terminating pod is
// counted on its node until it is deleted; a Succeeded or Failed pod is kept
// but no longer counted. A pod whose node is unknown is counted on a
// placeholder node that the real node later fills.
type AssignedPodCache interface {
	AddPod(pod *v1.Pod) error
	UpdatePod(oldPod, newPod *v1.Pod) error
	RemovePod(pod *v1.Pod) error
}

// PendingPodQueue holds pods waiting to be scheduled by this scheduler. Pods
// are grouped into jobs (a gang shares the scheduling.k8s.io/group-name
// annotation; any other pod is a job of one) and a job is queued as one
// unit.
type PendingPodQueue interface {
	AddPendingPod(pod *v1.Pod) error
	UpdatePendingPod(oldPod, newPod *v1.Pod) error
	RemovePendingPod(pod *v1.Pod) error

	// MoveAllToActiveOrBackoffQueue moves jobs that wait in the
	// unschedulable queue, and may be helped by event, to the active queue
	// (or to backoff if their backoff has not expired). preCheck, when not
	// nil, is asked first for each such job with its pending pods; jobs it
	// rejects stay where they are. preCheck runs under the queue's lock: it
	// must be fast and must not call back into the Cache.
	MoveAllToActiveOrBackoffQueue(event ClusterEvent, preCheck PreEnqueueCheck)
}

// PreEnqueueCheck decides whether a job with the given pending pods may be
// moved out of the unschedulable queue. The slice and the pods are read-only.
type PreEnqueueCheck func(pending []*v1.Pod) bool
