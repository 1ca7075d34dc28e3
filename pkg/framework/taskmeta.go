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

package framework

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// The getters below are how code outside the cache reads a task's pod
// identity, metadata and lifecycle. They name what is read of a pod that
// is on a node, so that the cache can keep, for bound pods, a compact
// record of those fields instead of the whole v1.Pod (the memory goal of
// issue 38): a reader that goes through them does not change when the
// storage does. Their names follow metav1.Object, which makes a task a
// klog.KMetadata: log a task with klog.KObj(t).

// GetName returns the pod's name.
func (t *TaskInfo) GetName() string {
	if t.rec != nil {
		return t.rec.name
	}
	return t.Pod.Name
}

// GetNamespace returns the pod's namespace.
func (t *TaskInfo) GetNamespace() string {
	if t.rec != nil {
		return t.rec.namespace
	}
	return t.Pod.Namespace
}

// GetUID returns the pod's UID.
func (t *TaskInfo) GetUID() types.UID {
	if t.uid != "" {
		return t.uid
	}
	if t.rec != nil {
		return t.rec.uid
	}
	return t.Pod.UID
}

// GetResourceVersion returns the resource version of the pod the task
// was built from.
func (t *TaskInfo) GetResourceVersion() string {
	if t.rec != nil {
		return t.rec.resourceVersion
	}
	return t.Pod.ResourceVersion
}

// GetCreationTimestamp returns when the pod was created.
func (t *TaskInfo) GetCreationTimestamp() metav1.Time {
	if t.rec != nil {
		return t.rec.creationTimestamp
	}
	return t.Pod.CreationTimestamp
}

// GetDeletionTimestamp returns when the pod's deletion was requested,
// nil while it is not terminating.
func (t *TaskInfo) GetDeletionTimestamp() *metav1.Time {
	if t.rec != nil {
		return t.rec.deletionTimestamp
	}
	return t.Pod.DeletionTimestamp
}

// GetLabels returns the pod's labels, shared: do not modify them.
func (t *TaskInfo) GetLabels() map[string]string {
	if t.rec != nil {
		return t.rec.labels
	}
	return t.Pod.Labels
}

// GetAnnotations returns the pod's annotations, shared: do not modify
// them.
func (t *TaskInfo) GetAnnotations() map[string]string {
	if t.rec != nil {
		return t.rec.annotations
	}
	return t.Pod.Annotations
}

// Phase returns the pod's status.phase.
func (t *TaskInfo) Phase() v1.PodPhase {
	if t.rec != nil {
		return t.rec.phase
	}
	return t.Pod.Status.Phase
}

// StartTime returns the pod's status.startTime: when the kubelet
// acknowledged it, nil before.
func (t *TaskInfo) StartTime() *metav1.Time {
	if t.rec != nil {
		return t.rec.startTime
	}
	return t.Pod.Status.StartTime
}

// Priority returns the pod's priority, zero when spec.priority is unset
// (as corev1helpers.PodPriority).
func (t *TaskInfo) Priority() int32 {
	if t.rec != nil {
		if t.rec.priority != nil {
			return *t.rec.priority
		}
		return 0
	}
	return corev1helpers.PodPriority(t.Pod)
}

// Affinity returns the pod's spec.affinity, shared: do not modify it.
func (t *TaskInfo) Affinity() *v1.Affinity {
	if t.rec != nil {
		return t.rec.Affinity()
	}
	return t.Pod.Spec.Affinity
}

// Containers returns the pod's spec.containers as the informers' transform
// keeps them (names, images, ports, resources), shared: do not modify
// them.
func (t *TaskInfo) Containers() []v1.Container {
	if t.rec != nil {
		return t.rec.containers
	}
	return t.Pod.Spec.Containers
}

// InitContainers returns the pod's spec.initContainers as Containers
// does.
func (t *TaskInfo) InitContainers() []v1.Container {
	if t.rec != nil {
		return t.rec.InitContainers()
	}
	return t.Pod.Spec.InitContainers
}

// MayHoldHostPorts is MayHoldHostPorts of t's pod.
func (t *TaskInfo) MayHoldHostPorts() bool {
	return mayHoldHostPorts(t.Containers(), t.InitContainers())
}

// Volumes returns the pod's spec.volumes that bear on placement (the
// informers' transform drops the others), shared: do not modify them.
func (t *TaskInfo) Volumes() []v1.Volume {
	if t.rec != nil {
		return t.rec.Volumes()
	}
	return t.Pod.Spec.Volumes
}

// ResourceClaims returns the pod's spec.resourceClaims, shared: do not
// modify them.
func (t *TaskInfo) ResourceClaims() []v1.PodResourceClaim {
	if t.rec != nil {
		return t.rec.ResourceClaims()
	}
	return t.Pod.Spec.ResourceClaims
}

// SchedulingGroup returns the pod's spec.schedulingGroup (the native
// PodGroup it belongs to), nil for none.
func (t *TaskInfo) SchedulingGroup() *v1.PodSchedulingGroup {
	if t.rec != nil {
		return t.rec.SchedulingGroup()
	}
	return t.Pod.Spec.SchedulingGroup
}

// schedulingGroupOf returns the spec.schedulingGroup of pod, a *v1.Pod or
// a *TaskInfo; nil for any other PodMeta.
func schedulingGroupOf(pod PodMeta) *v1.PodSchedulingGroup {
	switch p := pod.(type) {
	case *v1.Pod:
		return p.Spec.SchedulingGroup
	case *TaskInfo:
		return p.SchedulingGroup()
	}
	return nil
}

// PodMeta is what rules that read a pod's metadata only (its queue, its
// gang's declarations, affinity terms and disruption budgets matching
// it) need of a pod: a *v1.Pod, or a *TaskInfo for a pod on a node.
type PodMeta interface {
	GetNamespace() string
	GetName() string
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}

var (
	_ PodMeta = (*v1.Pod)(nil)
	_ PodMeta = (*TaskInfo)(nil)
)

// PodObject returns the task's pod: Pod for a pending or assumed task, a
// pod made anew from the record of a bound one (see PodRecord.Pod), for
// the callers that need a pod object. Prefer the getters.
func (t *TaskInfo) PodObject() *v1.Pod {
	if t.Pod != nil || t.rec == nil {
		return t.Pod
	}
	return t.rec.Pod()
}

// Record returns the record of a bound task, nil for a pending or assumed
// one.
func (t *TaskInfo) Record() *PodRecord { return t.rec }

// taskGroup is what a task of a gang says of its group.
type taskGroup struct {
	kind             GroupKind
	object, conflict string
}

// GroupKind is the kind of object that defines the task's gang, empty for
// a single pod.
func (t *TaskInfo) GroupKind() GroupKind {
	if t.group == nil {
		return ""
	}
	return t.group.kind
}

// GroupObject is the name of the object that defines the task's gang, in
// the pod's namespace (see GroupRef); empty for a single pod.
func (t *TaskInfo) GroupObject() string {
	if t.group == nil {
		return ""
	}
	return t.group.object
}

// GroupConflict, when set, says that the pod names different groups in
// different dialects; its gang is not scheduled.
func (t *TaskInfo) GroupConflict() string {
	if t.group == nil {
		return ""
	}
	return t.group.conflict
}
