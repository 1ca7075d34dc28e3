package defaulthandler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
)

// podState says where the handler keeps a pod; see the package comment.
type podState int

const (
	// untracked: another scheduler's pending pod, or a pod that finished
	// without ever being assigned.
	untracked podState = iota
	// pending: waiting to be scheduled by this scheduler.
	pending
	// assigned: bound to a node (spec.nodeName set).
	assigned
)

func (s podState) String() string {
	switch s {
	case pending:
		return "pending"
	case assigned:
		return "assigned"
	default:
		return "untracked"
	}
}

// stateOf classifies pod. IsResponsibleFor is only asked about pods that
// are not assigned.
func (h *Handler) stateOf(pod *v1.Pod) podState {
	switch {
	case pod.Spec.NodeName != "":
		return assigned
	case finished(pod) || !h.cache.IsResponsibleFor(pod):
		return untracked
	default:
		return pending
	}
}

// finished reports whether pod's containers have all terminated for good.
func finished(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// countedOnNode reports whether pod uses its node's resources: it is
// assigned and not finished. A terminating pod is still counted.
func countedOnNode(pod *v1.Pod) bool {
	return pod.Spec.NodeName != "" && !finished(pod)
}

// AddPod puts an assigned pod in the assigned-pod cache and a pending pod
// of this scheduler in the pending queue, and ignores any other pod.
func (h *Handler) AddPod(obj any) {
	pod, ok := objectAs[v1.Pod](obj)
	if !ok {
		return
	}
	h.enter(pod, h.stateOf(pod))
}

// UpdatePod forwards an update within a state, and moves a pod that changes
// state (typically pending to assigned, when it is bound). An assigned pod
// that finishes raises EventAssignedPodDelete.
func (h *Handler) UpdatePod(oldObj, newObj any) {
	oldPod, ok := objectAs[v1.Pod](oldObj)
	if !ok {
		return
	}
	newPod, ok := objectAs[v1.Pod](newObj)
	if !ok {
		return
	}
	if sameVersion(oldPod.ResourceVersion, newPod.ResourceVersion) {
		return
	}
	from, to := h.stateOf(oldPod), h.stateOf(newPod)
	if from != to {
		if from == assigned {
			// spec.nodeName cannot be cleared, so this is a broken source
			// or a recreated object. Trust the newer object.
			klog.InfoS("Assigned pod is no longer assigned", "pod", klog.KObj(newPod), "node", oldPod.Spec.NodeName, "state", to)
		}
		klog.V(4).InfoS("Pod changed state", "pod", klog.KObj(newPod), "from", from, "to", to)
		h.leave(oldPod, from)
		h.enter(newPod, to)
		return
	}
	switch to {
	case assigned:
		if err := h.cache.UpdatePod(oldPod, newPod); err != nil {
			klog.ErrorS(err, "Failed to update assigned pod in the cache", "pod", klog.KObj(newPod), "node", newPod.Spec.NodeName)
		}
		if countedOnNode(oldPod) && !countedOnNode(newPod) {
			h.moveAll(eventhandlers.EventAssignedPodDelete, nil, newPod)
		}
	case pending:
		if err := h.cache.UpdatePendingPod(oldPod, newPod); err != nil {
			klog.ErrorS(err, "Failed to update pending pod in the queue", "pod", klog.KObj(newPod))
		}
	default:
		klog.V(5).InfoS("Ignoring update of a pod this scheduler does not track", "pod", klog.KObj(newPod), "schedulerName", newPod.Spec.SchedulerName)
	}
}

// DeletePod removes the pod from wherever it is kept. Deleting an assigned
// pod that was still counted on its node raises EventAssignedPodDelete.
func (h *Handler) DeletePod(obj any) {
	pod, ok := objectAs[v1.Pod](obj)
	if !ok {
		return
	}
	h.leave(pod, h.stateOf(pod))
}

// enter starts keeping pod in state s.
func (h *Handler) enter(pod *v1.Pod, s podState) {
	switch s {
	case assigned:
		if err := h.cache.AddPod(pod); err != nil {
			klog.ErrorS(err, "Failed to add assigned pod to the cache", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		}
	case pending:
		if err := h.cache.AddPendingPod(pod); err != nil {
			klog.ErrorS(err, "Failed to add pending pod to the queue", "pod", klog.KObj(pod))
		}
	default:
		klog.V(5).InfoS("Ignoring pod this scheduler does not track", "pod", klog.KObj(pod), "schedulerName", pod.Spec.SchedulerName, "phase", pod.Status.Phase)
	}
}

// leave stops keeping pod, which was in state s. An assigned pod that was
// counted on its node frees resources.
func (h *Handler) leave(pod *v1.Pod, s podState) {
	switch s {
	case assigned:
		if err := h.cache.RemovePod(pod); err != nil {
			klog.ErrorS(err, "Failed to remove assigned pod from the cache", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		}
		if countedOnNode(pod) {
			h.moveAll(eventhandlers.EventAssignedPodDelete, nil, pod)
		}
	case pending:
		if err := h.cache.RemovePendingPod(pod); err != nil {
			klog.ErrorS(err, "Failed to remove pending pod from the queue", "pod", klog.KObj(pod))
		}
	default:
		klog.V(5).InfoS("Ignoring pod this scheduler does not track", "pod", klog.KObj(pod), "schedulerName", pod.Spec.SchedulerName, "phase", pod.Status.Phase)
	}
}
