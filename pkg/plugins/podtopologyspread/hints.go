package podtopologyspread

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// EventsToRegister implements framework.EnqueueExtensions.
//
//   - An assigned pod going away (AssignedPodDelete) helps when it was in
//     a pending pod's namespace and matched one of its constraints: its
//     domain's count drops (podDeletedHint).
//   - An assigned pod added (AssignedPodAdd: bound by any scheduler,
//     this one included, or created bound) may help when it is in a
//     pending pod's namespace and matches one of its constraints: it may
//     raise the global minimum, or count in a domain that minDomains
//     needs (podAddedHint). Whether it does depends on its node and the
//     other counts; answering Queue when it does not only costs an
//     attempt.
//   - An assigned pod's labels changing (AssignedPodUpdate) may help when
//     it starts or stops matching one of a pending pod's constraints, in
//     that pod's namespace (podLabelsChangedHint).
//   - A node added, or whose labels or taints changed, helps when it has
//     (or had) all the topology keys of a pending pod's constraints and the
//     change may add or move a domain or change which nodes count
//     (nodeHint).
func (*PodTopologySpread) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		{Event: framework.EventAssignedPodAdd, QueueingHintFn: podAddedHint},
		{Event: framework.EventAssignedPodLabelChange, QueueingHintFn: podLabelsChangedHint},
		{Event: framework.EventNodeAdd, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeLabelChange, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeTaintChange, QueueingHintFn: nodeHint},
	}
}

// podDeletedHint is the queueing hint of framework.EventAssignedPodDelete,
// raised with the pod that went away as oldObj.
func podDeletedHint(logger klog.Logger, job *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, ok := oldObj.(*v1.Pod)
	if !ok || gone == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the deleted *v1.Pod of an assigned pod deletion, got %T", oldObj)
	}
	for _, pod := range job.Pods {
		if pod.Namespace != gone.Namespace {
			continue
		}
		cs, err := hardConstraints(pod)
		if err != nil {
			return framework.Queue, err
		}
		for i := range cs {
			if cs[i].selector.Matches(labels.Set(gone.Labels)) {
				logger.V(5).Info("A deleted pod was counted by a pending pod's topology spread constraint", "pod", klog.KObj(pod), "deletedPod", klog.KObj(gone))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// podAddedHint is the queueing hint of framework.EventAssignedPodAdd,
// raised with the added pod as newObj.
func podAddedHint(logger klog.Logger, job *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	added, ok := newObj.(*v1.Pod)
	if !ok || added == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the added *v1.Pod of an assigned pod addition, got %T", newObj)
	}
	for _, pod := range job.Pods {
		if pod.Namespace != added.Namespace {
			continue
		}
		cs, err := hardConstraints(pod)
		if err != nil {
			return framework.Queue, err
		}
		for i := range cs {
			if cs[i].selector.Matches(labels.Set(added.Labels)) {
				logger.V(5).Info("An added pod is counted by a pending pod's topology spread constraint", "pod", klog.KObj(pod), "addedPod", klog.KObj(added))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// podLabelsChangedHint is the queueing hint of
// framework.EventAssignedPodLabelChange, raised with the old and the new
// pod: Queue when, in a pending pod's namespace, the pod started or
// stopped matching one of its constraints, changing a domain's count.
func podLabelsChangedHint(logger klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	oldPod, ok := oldObj.(*v1.Pod)
	if !ok || oldPod == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the old *v1.Pod of an assigned pod label change, got %T", oldObj)
	}
	newPod, ok := newObj.(*v1.Pod)
	if !ok || newPod == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the new *v1.Pod of an assigned pod label change, got %T", newObj)
	}
	for _, pod := range job.Pods {
		if pod.Namespace != newPod.Namespace {
			continue
		}
		cs, err := hardConstraints(pod)
		if err != nil {
			return framework.Queue, err
		}
		for i := range cs {
			if cs[i].selector.Matches(labels.Set(oldPod.Labels)) != cs[i].selector.Matches(labels.Set(newPod.Labels)) {
				logger.V(5).Info("A relabelled pod changed what a pending pod's topology spread constraint counts", "pod", klog.KObj(pod), "relabelledPod", klog.KObj(newPod))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// nodeHint is the queueing hint of node additions (oldObj nil) and of
// label and taint changes.
func nodeHint(_ klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
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
		cs, err := hardConstraints(pod)
		if err != nil {
			return framework.Queue, err
		}
		if len(cs) == 0 {
			continue
		}
		newMatch := hasAllTopologyKeys(newNode.Labels, cs)
		if oldNode == nil {
			if newMatch {
				return framework.Queue, nil
			}
			continue
		}
		oldMatch := hasAllTopologyKeys(oldNode.Labels, cs)
		if oldMatch != newMatch {
			return framework.Queue, nil
		}
		if !newMatch {
			continue
		}
		for i := range cs {
			if oldNode.Labels[cs[i].topologyKey] != newNode.Labels[cs[i].topologyKey] {
				return framework.Queue, nil
			}
		}
		// Other labels and taints change which nodes the inclusion
		// policies admit.
		if !equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) ||
			!equality.Semantic.DeepEqual(oldNode.Labels, newNode.Labels) {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}
