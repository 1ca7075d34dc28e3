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

package interpodaffinity

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// EventsToRegister implements framework.EnqueueExtensions.
//
//   - An assigned pod going away (AssignedPodDelete) helps when a pending
//     pod's anti-affinity matched it, or its own anti-affinity matched a
//     pending pod (podDeletedHint).
//   - An assigned pod added (AssignedPodAdd: bound by any scheduler,
//     this one included, or created bound) helps when it matches a
//     pending pod's required affinity term (podAddedHint). It can only
//     add to anti-affinity conflicts, so it never helps otherwise.
//   - An assigned pod's labels changing (AssignedPodUpdate) helps when it
//     starts matching a pending pod's affinity term or stops matching its
//     anti-affinity term (podLabelsChangedHint). The pod's own
//     anti-affinity terms do not change with its labels.
//   - A node added, or whose labels changed (NodeAdd, NodeLabelChange),
//     helps when it has, or moves between domains of, a topology key of a
//     pending pod's terms (nodeHint).
//
// Terms whose namespace selectors need namespace labels are treated as
// matching in hints: answering Queue needlessly only costs an attempt.
func (*InterPodAffinity) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		{Event: framework.EventAssignedPodAdd, QueueingHintFn: podAddedHint},
		{Event: framework.EventAssignedPodLabelChange, QueueingHintFn: podLabelsChangedHint},
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
	gone, err := pluginutil.PodOf(oldObj, "deleted")
	if err != nil {
		return framework.Queue, err
	}
	goneAnti, err := parseTerms(gone.Namespace, "podAntiAffinity", requiredAntiAffinity(gone.Spec.Affinity))
	if err != nil {
		return framework.Queue, err
	}
	for _, pod := range job.Pods {
		anti, err := parseTerms(pod.Namespace, "podAntiAffinity", requiredAntiAffinity(pod.Spec.Affinity))
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

// podAddedHint is the queueing hint of framework.EventAssignedPodAdd,
// raised with the added pod as newObj: Queue when it matches one of a
// pending pod's required affinity terms.
func podAddedHint(logger klog.Logger, job *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	added, err := pluginutil.PodOf(newObj, "added")
	if err != nil {
		return framework.Queue, err
	}
	for _, pod := range job.Pods {
		aff, err := parseTerms(pod.Namespace, "podAffinity", requiredAffinity(pod.Spec.Affinity))
		if err != nil {
			return framework.Queue, err
		}
		for i := range aff {
			if hintMatches(&aff[i], added) {
				logger.V(5).Info("An added pod matched a pending pod's affinity", "pod", klog.KObj(pod), "addedPod", klog.KObj(added))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// podLabelsChangedHint is the queueing hint of
// framework.EventAssignedPodLabelChange, raised with the old and the new
// pod: Queue when the new labels match a pending pod's required affinity
// term the old ones did not, or the old labels matched an anti-affinity
// term the new ones do not. A term that matched both, or neither, saw no
// change: the pod's namespace cannot change.
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
		aff, err := parseTerms(pod.Namespace, "podAffinity", requiredAffinity(pod.Spec.Affinity))
		if err != nil {
			return framework.Queue, err
		}
		for i := range aff {
			if hintMatches(&aff[i], newPod) && !hintMatches(&aff[i], oldPod) {
				logger.V(5).Info("A relabelled pod now matches a pending pod's affinity", "pod", klog.KObj(pod), "relabelledPod", klog.KObj(newPod))
				return framework.Queue, nil
			}
		}
		anti, err := parseTerms(pod.Namespace, "podAntiAffinity", requiredAntiAffinity(pod.Spec.Affinity))
		if err != nil {
			return framework.Queue, err
		}
		for i := range anti {
			if hintMatches(&anti[i], oldPod) && !hintMatches(&anti[i], newPod) {
				logger.V(5).Info("A relabelled pod no longer matches a pending pod's anti-affinity", "pod", klog.KObj(pod), "relabelledPod", klog.KObj(newPod))
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
	oldNode, newNode, err := pluginutil.NodesOf(oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	for _, pod := range job.Pods {
		for _, t := range requiredAffinity(pod.Spec.Affinity) {
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
		for _, t := range requiredAntiAffinity(pod.Spec.Affinity) {
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
