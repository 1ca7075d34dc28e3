// Package defaulthandler is the default event handler, registered as
// "default": it turns informer events into scheduler-cache state and wakes
// up waiting jobs when a change may let them fit. It follows the model of
// kube-scheduler's event handlers.
//
// # Pods
//
// Every pod is in one of three states:
//
//   - assigned: spec.nodeName is set. The pod lives in the assigned-pod
//     cache (AddPod, UpdatePod, RemovePod), whoever scheduled it, because it
//     uses its node's resources. Whether it is counted on its node
//     (running, terminating) or not (Succeeded, Failed), and what happens
//     to a pod whose node is not known yet, is decided by the cache.
//   - pending: not assigned, scheduled by this scheduler (Cache.
//     IsResponsibleFor) and not finished. The pod waits in the pending queue
//     (AddPendingPod, UpdatePendingPod, RemovePendingPod).
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
// # Nodes
//
// Adding a node raises framework.EventNodeAdd. An update raises one
// labelled event per scheduling-relevant change: spec.unschedulable going
// from true to false (EventNodeBecameSchedulable), status.allocatable
// (EventNodeAllocatableChange, quantities compared by value), labels
// (EventNodeLabelChange), spec.taints (EventNodeTaintChange) and the type
// and status of conditions (EventNodeConditionChange; heartbeats and
// transition times are ignored). An update that changes none of these, such
// as a heartbeat or an annotation, raises nothing.
//
// Deleting a node raises nothing, as in kube-scheduler: a node going away
// takes capacity away and cannot make waiting work fit.
//
// Node events carry a pre-enqueue check (Handler.PreCheckForNode) so that
// only jobs with at least one pending pod that could run on the node are
// moved: the node is schedulable, or the pod tolerates that; the pod's
// nodeSelector and required node affinity match the node; the pod tolerates
// every NoSchedule and NoExecute taint; and the pod's requests fit what is
// idle on the node.
//
// # Other resources
//
// PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
// CSIDriver, CSIStorageCapacity and PriorityClass events, and events of the
// dynamic resources listed in the configuration, are not kept in the cache:
// each one raises a cluster event for its resource (Add, UpdateGeneric or
// Delete) with no pre-enqueue check. Native events are labelled
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
//
// # Embedding
//
// A vendor handler embeds *Handler and overrides only what it changes; the
// other methods keep the default behaviour, and Handler.Cache gives access
// to the cache:
//
//	type acme struct{ *defaulthandler.Handler }
//
//	func (h *acme) AddNode(obj any) {
//		if node, ok := eventhandlers.ObjectAs[*v1.Node](obj); ok && isAcmeNode(node) {
//			h.Handler.AddNode(obj)
//		}
//	}
//
//	func newAcme(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
//		base, err := defaulthandler.New(ctx, c, cfg, rc)
//		if err != nil {
//			return nil, err
//		}
//		return &acme{Handler: base}, nil
//	}
//
// A vendor whose configuration has fields of its own inlines Args in its
// own type (`yaml:",inline"`), decodes that, and calls NewWithArgs.
package defaulthandler
