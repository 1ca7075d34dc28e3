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

package podtopologyspread

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
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
//   - A node deleted (NodeDelete) helps when it had all the topology keys
//     of a pending pod's constraints: its domain may go with it, and if
//     that domain held the global minimum, the minimum rises and other
//     domains may fit (nodeDeletedHint). A node that lacked a key was in
//     no domain, so its going changes no count.
func (*PodTopologySpread) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		{Event: framework.EventAssignedPodAdd, QueueingHintFn: podAddedHint},
		{Event: framework.EventAssignedPodLabelChange, QueueingHintFn: podLabelsChangedHint},
		{Event: framework.EventNodeAdd, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeLabelChange, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeTaintChange, QueueingHintFn: nodeHint},
		{Event: framework.EventNodeDelete, QueueingHintFn: nodeDeletedHint},
	}
}

// nodeDeletedHint is the queueing hint of framework.EventNodeDelete,
// raised with the deleted node as oldObj. Only nodes with every topology
// key of a pod's constraints make up domains (as PreFilterPod counts
// them), so only such a node's deletion can change what Filter sees.
func nodeDeletedHint(logger klog.Logger, job *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, ok := oldObj.(*v1.Node)
	if !ok || gone == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the deleted *v1.Node of a node event, got %T", oldObj)
	}
	for _, pod := range job.Pods {
		cs, err := hardConstraints(pod)
		if err != nil {
			return framework.Queue, err
		}
		if len(cs) > 0 && hasAllTopologyKeys(gone.Labels, cs) {
			logger.V(5).Info("A deleted node was in a domain of a pending pod's topology spread constraints", "pod", klog.KObj(pod), "node", klog.KObj(gone))
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// podDeletedHint is the queueing hint of framework.EventAssignedPodDelete,
// raised with the pod that went away as oldObj.
func podDeletedHint(logger klog.Logger, job *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, err := pluginutil.PodOf(oldObj, "deleted")
	if err != nil {
		return framework.Queue, err
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
	added, err := pluginutil.PodOf(newObj, "added")
	if err != nil {
		return framework.Queue, err
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
	oldPod, err := pluginutil.PodOf(oldObj, "old")
	if err != nil {
		return framework.Queue, err
	}
	newPod, err := pluginutil.PodOf(newObj, "new")
	if err != nil {
		return framework.Queue, err
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
	oldNode, newNode, err := pluginutil.NodesOf(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
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
