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

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// node returns the node in obj as the policy lets the scheduler see it,
// or nil when obj is not a node or the policy ignores it.
func (h *Handler) node(obj any) *v1.Node {
	node, ok := objectAs[v1.Node](obj)
	if !ok {
		return nil
	}
	return h.seeNode(node)
}

// seeNode returns node as the policy lets the scheduler see it, or nil.
func (h *Handler) seeNode(node *v1.Node) *v1.Node {
	seen := h.TrackedNode(node)
	if seen == nil {
		klog.V(5).InfoS("Node ignored by the handler's policy", "node", klog.KObj(node))
	}
	return seen
}

// AddNode records the node and raises EventNodeAdd.
func (h *Handler) AddNode(obj any) {
	node := h.node(obj)
	if node == nil {
		return
	}
	h.addNode(node)
}

func (h *Handler) addNode(node *v1.Node) {
	if err := h.cache.AddOrUpdateNode(node); err != nil {
		klog.ErrorS(err, "Failed to add node to the cache", "node", klog.KObj(node))
	}
	h.raise(framework.EventNodeAdd, nil, node)
}

// UpdateNode records the node and raises one labelled event per
// scheduling-relevant change. An update that changes nothing relevant
// raises nothing. A node the policy starts accepting is added; one it
// stops accepting is removed.
func (h *Handler) UpdateNode(oldObj, newObj any) {
	oldNode, ok := objectAs[v1.Node](oldObj)
	if !ok {
		return
	}
	newNode, ok := objectAs[v1.Node](newObj)
	if !ok {
		return
	}
	if sameVersion(oldNode.ResourceVersion, newNode.ResourceVersion) {
		return
	}
	oldSeen, newSeen := h.seeNode(oldNode), h.seeNode(newNode)
	switch {
	case oldSeen == nil && newSeen == nil:
		return
	case oldSeen == nil:
		h.addNode(newSeen)
		return
	case newSeen == nil:
		h.removeNode(oldSeen)
		return
	}
	if err := h.cache.AddOrUpdateNode(newSeen); err != nil {
		klog.ErrorS(err, "Failed to update node in the cache", "node", klog.KObj(newSeen))
	}
	events := NodeUpdateEvents(oldSeen, newSeen)
	if len(events) == 0 {
		klog.V(5).InfoS("Node update changes nothing the scheduler uses", "node", klog.KObj(newSeen))
		return
	}
	for _, event := range events {
		h.raise(event, oldSeen, newSeen)
	}
}

// DeleteNode forgets the node and raises EventNodeDelete with it. Losing a
// node frees no resources, but it can still let waiting work fit: the
// domain it alone made up goes away, which can raise the minimum a pod
// topology spread constraint measures its skew against. Pods still on the
// node are removed by their own delete events.
func (h *Handler) DeleteNode(obj any) {
	if node := h.node(obj); node != nil {
		h.removeNode(node)
	}
}

// removeNode takes node out of the cache and raises EventNodeDelete, the
// old node as oldObj: for the scheduler, a node the policy stops accepting
// is gone as surely as a deleted one. The event is raised even when the
// cache call failed, as for additions and updates.
func (h *Handler) removeNode(node *v1.Node) {
	if err := h.cache.RemoveNode(node); err != nil {
		klog.ErrorS(err, "Failed to remove node from the cache", "node", klog.KObj(node))
	}
	h.raise(framework.EventNodeDelete, node, nil)
}

// nodeChanges lists the node properties the scheduler uses, each with the
// event raised when it changes, in the order they are raised.
var nodeChanges = []struct {
	event   framework.ClusterEvent
	changed func(oldNode, newNode *v1.Node) bool
}{
	{framework.EventNodeBecameSchedulable, func(o, n *v1.Node) bool {
		// Becoming unschedulable helps nobody.
		return o.Spec.Unschedulable && !n.Spec.Unschedulable
	}},
	{framework.EventNodeAllocatableChange, func(o, n *v1.Node) bool {
		// Semantic equality compares quantities by value: "1" == "1000m".
		return !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)
	}},
	{framework.EventNodeLabelChange, func(o, n *v1.Node) bool {
		return !maps.Equal(o.Labels, n.Labels)
	}},
	{framework.EventNodeTaintChange, func(o, n *v1.Node) bool {
		return !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
	}},
	{framework.EventNodeConditionChange, func(o, n *v1.Node) bool {
		return !maps.Equal(conditionStatuses(o), conditionStatuses(n))
	}},
}

// NodeUpdateEvents returns the events an update of oldNode to newNode
// raises, one per scheduling-relevant change; none when nothing relevant
// changed. Embedders that override UpdateNode can use it to keep the
// default mapping.
func NodeUpdateEvents(oldNode, newNode *v1.Node) []framework.ClusterEvent {
	var events []framework.ClusterEvent
	for _, c := range nodeChanges {
		if c.changed(oldNode, newNode) {
			events = append(events, c.event)
		}
	}
	return events
}

// conditionStatuses reduces conditions to type and status, dropping
// heartbeat and transition times, reasons and messages.
func conditionStatuses(node *v1.Node) map[v1.NodeConditionType]v1.ConditionStatus {
	m := make(map[v1.NodeConditionType]v1.ConditionStatus, len(node.Status.Conditions))
	for _, c := range node.Status.Conditions {
		m[c.Type] = c.Status
	}
	return m
}
