package defaulthandler

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// AddNode records the node and raises EventNodeAdd for the jobs that could
// use it.
func (h *Handler) AddNode(obj any) {
	node, ok := objectAs[v1.Node](obj)
	if !ok {
		return
	}
	if err := h.cache.AddOrUpdateNode(node); err != nil {
		klog.ErrorS(err, "Failed to add node to the cache", "node", klog.KObj(node))
	}
	h.moveAll(eventhandlers.EventNodeAdd, h.PreCheckForNode(node), node)
}

// UpdateNode records the node and raises one labelled event per
// scheduling-relevant change, for the jobs that could use the node. An
// update that changes nothing relevant raises nothing.
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
	if err := h.cache.AddOrUpdateNode(newNode); err != nil {
		klog.ErrorS(err, "Failed to update node in the cache", "node", klog.KObj(newNode))
	}
	events := NodeUpdateEvents(oldNode, newNode)
	if len(events) == 0 {
		klog.V(5).InfoS("Node update changes nothing the scheduler uses", "node", klog.KObj(newNode))
		return
	}
	// One check for all events: it reads the node's idle resources once.
	preCheck := h.PreCheckForNode(newNode)
	for _, event := range events {
		h.moveAll(event, preCheck, newNode)
	}
}

// DeleteNode forgets the node. It raises nothing: losing a node cannot make
// waiting work fit. Pods still on the node are removed by their own delete
// events.
func (h *Handler) DeleteNode(obj any) {
	node, ok := objectAs[v1.Node](obj)
	if !ok {
		return
	}
	if err := h.cache.RemoveNode(node); err != nil {
		klog.ErrorS(err, "Failed to remove node from the cache", "node", klog.KObj(node))
	}
}

// nodeChanges lists the node properties the scheduler uses, each with the
// event raised when it changes, in the order they are raised.
var nodeChanges = []struct {
	event   eventhandlers.ClusterEvent
	changed func(oldNode, newNode *v1.Node) bool
}{
	{eventhandlers.EventNodeBecameSchedulable, func(o, n *v1.Node) bool {
		// Becoming unschedulable helps nobody.
		return o.Spec.Unschedulable && !n.Spec.Unschedulable
	}},
	{eventhandlers.EventNodeAllocatableChange, func(o, n *v1.Node) bool {
		// Semantic equality compares quantities by value: "1" == "1000m".
		return !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)
	}},
	{eventhandlers.EventNodeLabelChange, func(o, n *v1.Node) bool {
		return !maps.Equal(o.Labels, n.Labels)
	}},
	{eventhandlers.EventNodeTaintChange, func(o, n *v1.Node) bool {
		return !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
	}},
	{eventhandlers.EventNodeConditionChange, func(o, n *v1.Node) bool {
		return !maps.Equal(conditionStatuses(o), conditionStatuses(n))
	}},
}

// NodeUpdateEvents returns the events an update of oldNode to newNode
// raises, one per scheduling-relevant change; none when nothing relevant
// changed. Embedders that override UpdateNode can use it to keep the
// default mapping.
func NodeUpdateEvents(oldNode, newNode *v1.Node) []eventhandlers.ClusterEvent {
	var events []eventhandlers.ClusterEvent
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

// PreCheckForNode returns a pre-enqueue check that accepts a job when at
// least one of its pending pods could run on node:
//
//   - the node is schedulable, or the pod tolerates the
//     node.kubernetes.io/unschedulable:NoSchedule taint;
//   - the pod's nodeSelector and required node affinity match the node;
//   - the pod tolerates every NoSchedule and NoExecute taint of the node;
//   - the pod's requests fit what is idle on the node.
//
// The node's idle resources are read from the cache now, once: the check
// runs under the queue's lock and must not call back into the cache. When
// the cache does not know the node, resources are not checked.
func (h *Handler) PreCheckForNode(node *v1.Node) eventhandlers.PreEnqueueCheck {
	idle, known := h.cache.NodeIdle(node.Name)
	if !known {
		klog.V(4).InfoS("Node's idle resources are unknown; not checking resources before requeueing", "node", klog.KObj(node))
	}
	return func(pending []*v1.Pod) bool {
		for _, pod := range pending {
			if reason := unfitReason(pod, node, idle, known); reason != "" {
				klog.V(5).InfoS("Pending pod cannot run on node", "pod", klog.KObj(pod), "node", klog.KObj(node), "reason", reason)
				continue
			}
			return true
		}
		return false
	}
}

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// blocksScheduling selects the taints a pod must tolerate to be scheduled
// onto a node; PreferNoSchedule only lowers the node's score.
func blocksScheduling(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// comparisonOperators makes Lt and Gt tolerations count. The API server only
// accepts them when the cluster enables them, so where they exist they are
// meant to work.
const comparisonOperators = true

// unfitReason says why pod cannot run on node, or returns "" when it may.
// When idleKnown is false resources are not checked.
func unfitReason(pod *v1.Pod, node *v1.Node, idle resources.Resource, idleKnown bool) string {
	logger := klog.Background()
	if node.Spec.Unschedulable &&
		!corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &unschedulableTaint, comparisonOperators) {
		return "node is unschedulable"
	}
	// A malformed affinity matches no node, as in kube-scheduler.
	if match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !match || err != nil {
		return "node selector or required node affinity does not match"
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations,
		blocksScheduling, comparisonOperators); untolerated {
		return "node has an untolerated taint"
	}
	if idleKnown && !idle.Fits(resources.PodRequests(pod)) {
		return "insufficient idle resources"
	}
	return ""
}
