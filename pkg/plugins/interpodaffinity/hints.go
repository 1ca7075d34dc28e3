package interpodaffinity

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// EventsToRegister implements framework.EnqueueExtensions.
//
//   - An assigned pod going away (AssignedPodDelete) helps when a pending
//     pod's anti-affinity matched it, or its own anti-affinity matched a
//     pending pod (podDeletedHint).
//   - A node added, or whose labels changed (NodeAdd, NodeLabelChange),
//     helps when it has, or moves between domains of, a topology key of a
//     pending pod's terms (nodeHint).
//
// Terms whose namespace selectors need namespace labels are treated as
// matching in hints: answering Queue needlessly only costs an attempt.
func (*InterPodAffinity) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		{Event: framework.EventNodeAdd, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeLabelChange, QueueingHintFn: nodeHint},
	}
}

// hintMatches reports whether pod may be selected by t, for a hint: a
// namespace selector that would need namespace labels counts as selecting.
func hintMatches(t *term, pod *v1.Pod) bool {
	return t.matches(pod, nil) || (t.nsSelector != nil && t.selector.Matches(labels.Set(pod.Labels)))
}

// podDeletedHint is the queueing hint of framework.EventAssignedPodDelete,
// raised with the pod that went away as oldObj.
func podDeletedHint(logger klog.Logger, job *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, ok := oldObj.(*v1.Pod)
	if !ok || gone == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the deleted *v1.Pod of an assigned pod deletion, got %T", oldObj)
	}
	goneAnti, err := parseTerms(gone, "podAntiAffinity", requiredAntiAffinity(gone))
	if err != nil {
		return framework.Queue, err
	}
	for _, pod := range job.Pods {
		anti, err := parseTerms(pod, "podAntiAffinity", requiredAntiAffinity(pod))
		if err != nil {
			return framework.Queue, err
		}
		for i := range anti {
			if hintMatches(&anti[i], gone) {
				logger.V(5).Info("A deleted pod matched a pending pod's anti-affinity", "pod", klog.KObj(pod), "deletedPod", klog.KObj(gone))
				return framework.Queue, nil
			}
		}
		for i := range goneAnti {
			if hintMatches(&goneAnti[i], pod) {
				logger.V(5).Info("A deleted pod's anti-affinity matched a pending pod", "pod", klog.KObj(pod), "deletedPod", klog.KObj(gone))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// nodeHint is the queueing hint of a node added (oldObj nil) or whose
// labels changed: Queue when the node gains, or changes the value of, a
// topology key of a pending pod's affinity, or, for anti-affinity, is new,
// loses such a key or changes its value.
func nodeHint(logger klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	newNode, ok := newObj.(*v1.Node)
	if !ok || newNode == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the new *v1.Node of a node event, got %T", newObj)
	}
	var oldNode *v1.Node
	if oldObj != nil {
		if oldNode, ok = oldObj.(*v1.Node); !ok || oldNode == nil {
			return framework.Queue, fmt.Errorf("queueing hint: want the old *v1.Node of a node update, got %T", oldObj)
		}
	}
	for _, pod := range job.Pods {
		for _, t := range requiredAffinity(pod) {
			newV, newOK := newNode.Labels[t.TopologyKey]
			if !newOK {
				continue
			}
			if oldNode == nil {
				return framework.Queue, nil
			}
			if oldV, oldOK := oldNode.Labels[t.TopologyKey]; !oldOK || oldV != newV {
				return framework.Queue, nil
			}
		}
		for _, t := range requiredAntiAffinity(pod) {
			if oldNode == nil {
				return framework.Queue, nil
			}
			oldV, oldOK := oldNode.Labels[t.TopologyKey]
			newV, newOK := newNode.Labels[t.TopologyKey]
			if oldOK && (!newOK || oldV != newV) {
				return framework.Queue, nil
			}
		}
		// The anti-affinity of existing pods can only be escaped by
		// moving the node out of their domains: any label change of a
		// node may do that, and a new node may be outside them.
		if oldNode == nil || labelsChangedOrRemoved(oldNode.Labels, newNode.Labels) {
			logger.V(5).Info("A node may have left the domain of existing pods' anti-affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// labelsChangedOrRemoved reports whether some label of old is missing
// from, or different in, cur.
func labelsChangedOrRemoved(old, cur map[string]string) bool {
	for k, v := range old {
		if cv, ok := cur[k]; !ok || cv != v {
			return true
		}
	}
	return false
}
