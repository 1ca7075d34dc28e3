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

package defaulthandler

import (
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// podState says where the handler keeps a pod: the framework's rule,
// shared with the cache's informer filter and its checker (see the package
// comment).
type podState = framework.PodState

const (
	untracked = framework.PodUntracked
	pending   = framework.PodPending
	assigned  = framework.PodAssigned
	gated     = framework.PodGated
)

// lentPods hold the pods the handler lends, one per record of an event
// (see podOf).
var lentPods = sync.Pool{New: func() any { return new(v1.Pod) }}

// podOf returns obj as a pod, and whether it is lent: the record of a
// bound pod (framework.PodRecord) is made into a pod from lentPods, to be
// handed back with giveBack once the event is handled, rather than into a
// new one. Every change of every bound pod comes as records, and a pod
// made of one is a kilobyte of garbage; at start-up, 150,000 of them were
// most of what the initial sync allocated after the decoding.
//
// Only a handler whose pods nothing keeps past the event lends them
// (lendsPods): one without a pod policy (whose hook may keep what it is
// given), over a cache that takes records (eventhandlers.PodRecordCache,
// whose contract is to keep nothing of a lent pod; it keeps the record).
// The rest of what the handler does with a pod reads it during the call:
// classifying it, the gang hook, and the events it raises, whose hints
// must not keep their objects (framework.QueueingHintFn).
func (h *Handler) podOf(obj any) (pod *v1.Pod, lent, ok bool) {
	if rec, isRec := obj.(*framework.PodRecord); isRec && rec != nil && h.lendsPods {
		pod = lentPods.Get().(*v1.Pod)
		rec.FillPod(pod)
		return pod, true, true
	}
	pod, ok = objectAs[v1.Pod](obj)
	return pod, false, ok
}

// giveBack returns pod to lentPods if podOf lent it, emptied: nothing of
// the record stays reachable from the pool.
func giveBack(pod *v1.Pod, lent bool) {
	if lent {
		*pod = v1.Pod{}
		lentPods.Put(pod)
	}
}

// seePod returns pod as the policy lets the scheduler see it, or nil.
func (h *Handler) seePod(pod *v1.Pod) *v1.Pod {
	seen := h.TrackedPod(pod)
	if seen == nil {
		klog.V(5).InfoS("Pod ignored by the handler's policy", "pod", klog.KObj(pod))
	}
	return seen
}

// stateOf classifies pod, as the policy returned it (nil: ignored, so
// untracked), by framework.ClassifyPod.
func (h *Handler) stateOf(pod *v1.Pod) podState {
	return framework.ClassifyPod(pod, h.cache.IsResponsibleFor)
}

// AddPod puts an assigned pod in the cache (raising EventAssignedPodAdd
// unless it finished) and a pending pod of this scheduler in the
// scheduling queue, and ignores any other pod.
func (h *Handler) AddPod(obj any) {
	raw, lent, ok := h.podOf(obj)
	if !ok {
		return
	}
	defer giveBack(raw, lent)
	defer h.noteGang(raw)
	pod := h.seePod(raw)
	switch h.stateOf(pod) {
	case assigned:
		h.addAssigned(pod, h.recordOf(obj, pod))
	case pending:
		h.addPending(pod)
	case gated:
		logGated(pod)
	default:
		h.logUntracked(obj)
	}
}

// UpdatePod forwards an update within a state, and moves a pod that changes
// state (typically pending to assigned, when it is bound, or gated to
// pending, when its last scheduling gate is removed). A pod that becomes
// assigned raises EventAssignedPodAdd (unless it already finished); an
// assigned pod whose labels change raises EventAssignedPodLabelChange, and
// one that finishes raises EventAssignedPodDelete.
func (h *Handler) UpdatePod(oldObj, newObj any) {
	newRaw, newLent, ok := h.podOf(newObj)
	if !ok {
		return
	}
	defer giveBack(newRaw, newLent)
	defer h.noteGang(newRaw)
	oldRaw, oldLent, ok := h.podOf(oldObj)
	if !ok {
		return
	}
	defer giveBack(oldRaw, oldLent)
	if sameVersion(oldRaw.ResourceVersion, newRaw.ResourceVersion) {
		return
	}
	oldPod, newPod := h.seePod(oldRaw), h.seePod(newRaw)
	from, to := h.stateOf(oldPod), h.stateOf(newPod)
	if from != to {
		klog.V(4).InfoS("Pod changed state", "pod", klog.KObj(newRaw), "from", from, "to", to)
	}
	switch {
	case from == assigned && to == assigned:
		if err := h.updateAssigned(oldPod, newPod, h.recordOf(newObj, newPod)); err != nil {
			klog.ErrorS(err, "Failed to update assigned pod in the cache", "pod", klog.KObj(newPod), "node", newPod.Spec.NodeName)
		}
		switch oldCounted, newCounted := framework.PodCountedOnNode(oldPod), framework.PodCountedOnNode(newPod); {
		case oldCounted && !newCounted:
			h.raise(framework.EventAssignedPodDelete, oldPod, newPod)
		case !oldCounted && newCounted:
			// Not possible through the API server (a finished pod stays
			// finished), but a broken source counts the pod again.
			h.raise(framework.EventAssignedPodAdd, nil, newPod)
		case newCounted && !maps.Equal(oldPod.Labels, newPod.Labels):
			h.raise(framework.EventAssignedPodLabelChange, oldPod, newPod)
		}
		if framework.PodCountedOnNode(newPod) && requestsShrank(oldPod, newPod) {
			h.raise(framework.EventAssignedPodScaleDown, oldPod, newPod)
		}
	case to == assigned:
		// Bound (pending before), or newly accepted by the policy: the
		// cache moves a pending or assumed pod to its node itself.
		h.addAssigned(newPod, h.recordOf(newObj, newPod))
	case from == assigned:
		// spec.nodeName cannot be cleared, so this is a broken source, a
		// recreated object, or the policy no longer accepting the pod.
		// Trust the newer object.
		klog.InfoS("Assigned pod is no longer tracked as assigned", "pod", klog.KObj(newRaw), "node", oldPod.Spec.NodeName, "state", to)
		h.deletePod(oldPod)
		if to == pending {
			h.addPending(newPod)
		}
	case from == pending && to == pending:
		if err := h.cache.UpdatePendingPod(oldPod, newPod); err != nil {
			klog.ErrorS(err, "Failed to update pending pod in the queue", "pod", klog.KObj(newPod))
		}
	case from == pending:
		// Finished before it was scheduled, no longer ours, or gated (the
		// API server only lets gates be removed, but a broken source or a
		// policy could add them): it leaves the queue, but it is not
		// deleted.
		if err := h.cache.RemovePendingPod(oldPod); err != nil {
			klog.ErrorS(err, "Failed to remove pending pod from the queue", "pod", klog.KObj(oldPod))
		}
	case to == pending:
		// Ours now, or ungated: it joins the queue.
		h.addPending(newPod)
	case to == gated:
		logGated(newPod)
	default:
		h.logUntracked(newRaw)
	}
}

// DeletePod forgets the pod, wherever the cache holds it. Deleting a pod
// that held resources on a node (assigned and not finished, or placed by
// this scheduler and being bound) raises EventAssignedPodDelete. A gated
// pod was never given to the cache, so deleting it does nothing.
func (h *Handler) DeletePod(obj any) {
	raw, ok := objectAs[v1.Pod](obj)
	if !ok {
		return
	}
	defer h.noteGang(raw)
	pod := h.seePod(raw)
	switch h.stateOf(pod) {
	case untracked:
		h.logUntracked(obj)
		return
	case gated:
		logGated(pod)
		return
	}
	h.deletePod(pod)
}

// addAssigned adds pod, assigned, to the cache and raises
// EventAssignedPodAdd when it uses its node's resources (it did not
// finish): it may be what a waiting pod's pod affinity or spread
// constraint needs. This scheduler's own binds raise it too, when the
// informer reports them, as do the pods listed at start-up (there is
// nothing waiting then, so that is cheap). Like the node events, it is
// raised even if the cache failed: a needless attempt costs little.
func (h *Handler) addAssigned(pod *v1.Pod, rec *framework.PodRecord) {
	var err error
	if rc, ok := h.cache.(eventhandlers.PodRecordCache); ok && rec != nil {
		err = rc.SetPodRecord(rec, pod)
	} else {
		err = h.cache.AddPod(pod)
	}
	if err != nil {
		klog.ErrorS(err, "Failed to add assigned pod to the cache", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	}
	if framework.PodCountedOnNode(pod) {
		h.raise(framework.EventAssignedPodAdd, nil, pod)
	}
}

func (h *Handler) addPending(pod *v1.Pod) {
	if err := h.cache.AddPendingPod(pod); err != nil {
		klog.ErrorS(err, "Failed to add pending pod to the queue", "pod", klog.KObj(pod))
	}
}

// deletePod deletes pod from the cache and raises EventAssignedPodDelete
// when that freed resources. A pod the cache did not have that was
// counted on its node still raises it: the cache may have missed it, but
// its node did not.
func (h *Handler) deletePod(pod *v1.Pod) {
	freed, err := h.cache.DeletePod(pod)
	if err != nil {
		klog.ErrorS(err, "Failed to delete pod from the cache", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
		freed = framework.PodCountedOnNode(pod)
	}
	if freed {
		h.raise(framework.EventAssignedPodDelete, pod, nil)
	}
}

func logGated(pod *v1.Pod) {
	if logger := klog.V(5); logger.Enabled() {
		names := make([]string, 0, len(pod.Spec.SchedulingGates))
		for _, g := range pod.Spec.SchedulingGates {
			names = append(names, g.Name)
		}
		logger.InfoS("Pod has scheduling gates; not queued until they are removed", "pod", klog.KObj(pod), "schedulingGates", names)
	}
}

func (h *Handler) logUntracked(obj any) {
	if logger := klog.V(5); logger.Enabled() {
		if pod, ok := obj.(*v1.Pod); ok {
			logger.InfoS("Ignoring pod this scheduler does not track", "pod", klog.KObj(pod), "schedulerName", pod.Spec.SchedulerName, "phase", pod.Status.Phase)
		}
	}
}

// requestsShrank reports whether newPod requests less of some resource
// than oldPod: an in-place resize down, which frees room on its node. The
// requests are summed only when the containers or the pod-level resources
// are not the same objects: a status update keeps them.
func requestsShrank(oldPod, newPod *v1.Pod) bool {
	if sameElements(oldPod.Spec.Containers, newPod.Spec.Containers) &&
		sameElements(oldPod.Spec.InitContainers, newPod.Spec.InitContainers) &&
		oldPod.Spec.Resources == newPod.Spec.Resources {
		return false
	}
	return !resources.PodRequests(newPod).Fits(resources.PodRequests(oldPod))
}

// sameElements reports whether a and b are the same slice of elements.
func sameElements[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// updateAssigned is the cache's UpdatePod, or SetPodRecord when newPod
// was made from rec, the informers' record of it.
func (h *Handler) updateAssigned(oldPod, newPod *v1.Pod, rec *framework.PodRecord) error {
	if rc, ok := h.cache.(eventhandlers.PodRecordCache); ok && rec != nil {
		return rc.SetPodRecord(rec, newPod)
	}
	return h.cache.UpdatePod(oldPod, newPod)
}

// recordOf returns the framework.PodRecord that obj is (or that its
// tombstone holds) when pod, the pod the handler tracks, is the one made
// from it; nil otherwise: a pod object, or a handler with a pod policy,
// whose pod may differ from the record.
func (h *Handler) recordOf(obj any, pod *v1.Pod) *framework.PodRecord {
	if h.policy.Pod != nil {
		return nil
	}
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	rec, ok := obj.(*framework.PodRecord)
	if !ok || rec == nil || pod == nil || pod.UID != rec.GetUID() || pod.ResourceVersion != rec.GetResourceVersion() {
		return nil
	}
	return rec
}

// TakesPodRecords implements eventhandlers.PodRecordHandler: the pod
// methods take the informers' records of bound pods, and hand them to a
// cache that keeps them (eventhandlers.PodRecordCache). It is true only
// for the handler itself: a type that embeds it may override a pod
// method with code that expects a *v1.Pod, so it is given pods unless it
// says otherwise.
func (h *Handler) TakesPodRecords(registered eventhandlers.Interface) bool {
	self, ok := registered.(*Handler)
	return ok && self == h
}
