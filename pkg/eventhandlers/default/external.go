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
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

var (
	_ eventhandlers.ExternalWorkloadEventHandler = (*Handler)(nil)
	_ eventhandlers.GrantEventHandler            = (*Handler)(nil)
)

// ExternalWorkloadKey is the key under which the handler accounts an
// ExternalWorkload with the cache's ExternalUsageCache:
// "externalworkload/<name>" (ExternalWorkloads are cluster-scoped; a
// namespaced object from a broken source gets "externalworkload/<ns>/<name>").
func ExternalWorkloadKey(w *v1alpha1.ExternalWorkload) string {
	if w.Namespace != "" {
		return "externalworkload/" + w.Namespace + "/" + w.Name
	}
	return "externalworkload/" + w.Name
}

// externalFootprint is what the handler accounts for one ExternalWorkload.
type externalFootprint struct {
	counted bool
	node    string
	usage   resources.Resource
}

// footprintOf says whether and where w, as the policy returned it, is
// counted: not when the policy ignores it (nil), it is Stopped or it names
// no node. The node is the value of the label
// Args.ExternalWorkloadNodeLabel when that is set and the label present
// and non-empty, and spec.nodeName otherwise.
func (h *Handler) footprintOf(w *v1alpha1.ExternalWorkload) externalFootprint {
	if w == nil || w.Status.Phase == v1alpha1.ExternalWorkloadStopped {
		return externalFootprint{}
	}
	node := w.Spec.NodeName
	if h.externalNodeLabel != "" {
		if v := w.Labels[h.externalNodeLabel]; v != "" {
			node = v
		}
	}
	if node == "" {
		return externalFootprint{}
	}
	return externalFootprint{counted: true, node: node, usage: resources.FromList(w.Spec.Resources)}
}

// AddExternalWorkload accounts the workload's spec.resources against its
// node, unless it is Stopped.
func (h *Handler) AddExternalWorkload(obj any) {
	w, ok := objectAs[v1alpha1.ExternalWorkload](obj)
	if !ok {
		return
	}
	seen := h.externalWorkload(w)
	h.applyExternal(w, externalFootprint{}, h.footprintOf(seen), nil, seen)
}

// externalWorkload returns w as the policy lets the scheduler see it, or
// nil when the policy ignores it.
func (h *Handler) externalWorkload(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload {
	seen := h.TrackedExternalWorkload(w)
	if seen == nil {
		klog.V(5).InfoS("External workload ignored by the handler's policy", "externalWorkload", klog.KObj(w))
	}
	return seen
}

// UpdateExternalWorkload re-accounts the workload: its usage is replaced
// (and may move to another node), or removed when it becomes Stopped. When
// usage shrinks, stops or moves, EventExternalUsageDecrease is raised so
// that waiting jobs retry. Resyncs (same resourceVersion) are skipped.
func (h *Handler) UpdateExternalWorkload(oldObj, newObj any) {
	oldW, ok := objectAs[v1alpha1.ExternalWorkload](oldObj)
	if !ok {
		return
	}
	newW, ok := objectAs[v1alpha1.ExternalWorkload](newObj)
	if !ok {
		return
	}
	if sameVersion(oldW.ResourceVersion, newW.ResourceVersion) {
		return
	}
	oldSeen, newSeen := h.externalWorkload(oldW), h.externalWorkload(newW)
	h.applyExternal(newW, h.footprintOf(oldSeen), h.footprintOf(newSeen), oldSeen, newSeen)
}

// DeleteExternalWorkload removes the workload's usage (tombstones
// included) and raises EventExternalUsageDecrease if it was counted.
func (h *Handler) DeleteExternalWorkload(obj any) {
	w, ok := objectAs[v1alpha1.ExternalWorkload](obj)
	if !ok {
		return
	}
	seen := h.externalWorkload(w)
	old := h.footprintOf(seen)
	// Remove whatever the cache holds: the last state seen here may be
	// older than what was accounted.
	if err := h.cache.RemoveExternalUsage(ExternalWorkloadKey(w)); err != nil {
		if old.counted {
			klog.ErrorS(err, "Failed to remove external workload usage from the cache", "externalWorkload", klog.KObj(w))
		} else {
			klog.V(4).InfoS("No usage of a deleted external workload in the cache", "externalWorkload", klog.KObj(w), "err", err)
		}
	}
	if old.counted {
		h.raise(framework.EventExternalUsageDecrease, seen, nil)
	}
}

// applyExternal moves the accounting of w from old to cur; oldSeen and
// newSeen are the objects behind them, as the policy returned them, for
// the event raised when usage decreases.
func (h *Handler) applyExternal(w *v1alpha1.ExternalWorkload, old, cur externalFootprint, oldSeen, newSeen *v1alpha1.ExternalWorkload) {
	key := ExternalWorkloadKey(w)
	switch {
	case cur.counted:
		if err := h.cache.SetExternalUsage(key, cur.node, cur.usage); err != nil {
			klog.ErrorS(err, "Failed to account external workload usage in the cache", "externalWorkload", klog.KObj(w), "node", cur.node)
		}
	case old.counted:
		if err := h.cache.RemoveExternalUsage(key); err != nil {
			klog.ErrorS(err, "Failed to remove external workload usage from the cache", "externalWorkload", klog.KObj(w))
		}
	default:
		klog.V(5).InfoS("Ignoring external workload that uses nothing on a node", "externalWorkload", klog.KObj(w), "phase", w.Status.Phase)
		return
	}
	if old.counted && (!cur.counted || old.node != cur.node || cur.usage.AnyLess(old.usage)) {
		h.raise(framework.EventExternalUsageDecrease, oldSeen, newSeen)
	}
}

// AddGrant does nothing: the default handler ignores Grants. It implements
// eventhandlers.GrantEventHandler so that a custom informer of Grants can
// be run with it (and with handlers embedding it); a two-level handler that
// schedules within granted capacity overrides these methods.
func (h *Handler) AddGrant(obj any) {}

// UpdateGrant does nothing; see AddGrant.
func (h *Handler) UpdateGrant(oldObj, newObj any) {}

// DeleteGrant does nothing; see AddGrant.
func (h *Handler) DeleteGrant(obj any) {}
