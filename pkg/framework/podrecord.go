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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// PodRecord is what the scheduler keeps of a pod bound to a node: the
// fields its plugins, preemption, queues and handlers read of a pod
// that is no longer scheduled, without the 1,240-byte v1.Pod around them.
// The slices, maps and pointers are the pod's own, shared, never copied:
// do not modify them.
//
// A PodRecord is a metav1.Object and a runtime.Object, so that an
// informer's store can hold it in place of the pod: the informers'
// transform returns one for every bound pod. Of the metadata it keeps
// the name, namespace, UID, resource version, labels, annotations, owner
// references and the creation and deletion timestamps; the other
// metadata getters return zero values and their setters do nothing
// (nothing the scheduler reads of a bound pod needs them).
//
// The fields most pods set are held in the record itself, which is a
// 256-byte allocation; the ones few bound pods set (affinity, init
// containers, volumes that matter to placement, claims, pod-level
// resources, ...) in a second struct allocated only when one of them is.
// Read them through the methods.
type PodRecord struct {
	name, namespace     string
	uid                 types.UID
	resourceVersion     string
	labels, annotations map[string]string
	ownerReferences     []metav1.OwnerReference
	creationTimestamp   metav1.Time
	deletionTimestamp   *metav1.Time

	nodeName, schedulerName string
	priority                *int32
	containers              []v1.Container
	phase                   v1.PodPhase
	startTime               *metav1.Time
	conditions              []v1.PodCondition

	// rare is nil unless the pod sets one of its fields.
	rare *podRecordRare
}

// podRecordRare holds what few bound pods set.
type podRecordRare struct {
	affinity                    *v1.Affinity
	schedulingGroup             *v1.PodSchedulingGroup
	initContainers              []v1.Container
	volumes                     []v1.Volume
	resourceClaims              []v1.PodResourceClaim
	overhead                    v1.ResourceList
	resources                   *v1.ResourceRequirements
	activeDeadlineSeconds       *int64
	resourceClaimStatuses       []v1.PodResourceClaimStatus
	extendedResourceClaimStatus *v1.PodExtendedResourceClaimStatus
}

// NewPodRecord returns the record of pod.
func NewPodRecord(pod *v1.Pod) *PodRecord {
	spec, status := &pod.Spec, &pod.Status
	r := &PodRecord{
		name: pod.Name, namespace: pod.Namespace, uid: pod.UID, resourceVersion: pod.ResourceVersion,
		labels: pod.Labels, annotations: pod.Annotations, ownerReferences: pod.OwnerReferences,
		creationTimestamp: pod.CreationTimestamp, deletionTimestamp: pod.DeletionTimestamp,
		nodeName: spec.NodeName, schedulerName: spec.SchedulerName, priority: spec.Priority,
		containers: spec.Containers,
		phase:      status.Phase, startTime: status.StartTime, conditions: status.Conditions,
	}
	rare := podRecordRare{
		affinity: spec.Affinity, schedulingGroup: spec.SchedulingGroup,
		initContainers: spec.InitContainers, volumes: spec.Volumes, resourceClaims: spec.ResourceClaims,
		overhead: spec.Overhead, resources: spec.Resources, activeDeadlineSeconds: spec.ActiveDeadlineSeconds,
		resourceClaimStatuses: status.ResourceClaimStatuses, extendedResourceClaimStatus: status.ExtendedResourceClaimStatus,
	}
	if rare.affinity != nil || rare.schedulingGroup != nil || rare.initContainers != nil || rare.volumes != nil ||
		rare.resourceClaims != nil || rare.overhead != nil || rare.resources != nil || rare.activeDeadlineSeconds != nil ||
		rare.resourceClaimStatuses != nil || rare.extendedResourceClaimStatus != nil {
		r.rare = &rare
	}
	return r
}

// Pod returns a v1.Pod of what r holds, allocated anew, for the callers
// that need a pod object (the Eviction API, events, helpers of other
// modules): the fields r does not keep are zero.
func (r *PodRecord) Pod() *v1.Pod {
	pod := new(v1.Pod)
	r.FillPod(pod)
	return pod
}

// FillPod makes *pod the pod Pod returns, in place: for a caller that
// lends one pod struct to the reads of many records rather than
// allocating one each time. Whatever pod held is overwritten.
func (r *PodRecord) FillPod(pod *v1.Pod) {
	*pod = v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: r.name, Namespace: r.namespace, UID: r.uid, ResourceVersion: r.resourceVersion,
			Labels: r.labels, Annotations: r.annotations, OwnerReferences: r.ownerReferences,
			CreationTimestamp: r.creationTimestamp, DeletionTimestamp: r.deletionTimestamp,
		},
		Spec: v1.PodSpec{
			NodeName: r.nodeName, SchedulerName: r.schedulerName, Priority: r.priority,
			Containers: r.containers,
		},
		Status: v1.PodStatus{Phase: r.phase, StartTime: r.startTime, Conditions: r.conditions},
	}
	if x := r.rare; x != nil {
		spec, status := &pod.Spec, &pod.Status
		spec.Affinity, spec.SchedulingGroup = x.affinity, x.schedulingGroup
		spec.InitContainers, spec.Volumes, spec.ResourceClaims = x.initContainers, x.volumes, x.resourceClaims
		spec.Overhead, spec.Resources, spec.ActiveDeadlineSeconds = x.overhead, x.resources, x.activeDeadlineSeconds
		status.ResourceClaimStatuses, status.ExtendedResourceClaimStatus = x.resourceClaimStatuses, x.extendedResourceClaimStatus
	}
}

// rareOrZero returns r.rare, or a zero podRecordRare when r has none.
func (r *PodRecord) rareOrZero() *podRecordRare {
	if r.rare != nil {
		return r.rare
	}
	return &noRare
}

// noRare is what a record without rare fields reads; never modified.
var noRare podRecordRare

// NodeName returns the node the pod is bound to.
func (r *PodRecord) NodeName() string { return r.nodeName }

// SchedulerName returns the pod's spec.schedulerName.
func (r *PodRecord) SchedulerName() string { return r.schedulerName }

// Priority returns the pod's spec.priority (nil when unset).
func (r *PodRecord) Priority() *int32 { return r.priority }

// Containers returns the pod's containers.
func (r *PodRecord) Containers() []v1.Container { return r.containers }

// Phase returns the pod's status.phase.
func (r *PodRecord) Phase() v1.PodPhase { return r.phase }

// StartTime returns the pod's status.startTime.
func (r *PodRecord) StartTime() *metav1.Time { return r.startTime }

// Conditions returns the pod's status.conditions.
func (r *PodRecord) Conditions() []v1.PodCondition { return r.conditions }

// Affinity returns the pod's spec.affinity.
func (r *PodRecord) Affinity() *v1.Affinity { return r.rareOrZero().affinity }

// SchedulingGroup returns the pod's spec.schedulingGroup.
func (r *PodRecord) SchedulingGroup() *v1.PodSchedulingGroup { return r.rareOrZero().schedulingGroup }

// InitContainers returns the pod's init containers.
func (r *PodRecord) InitContainers() []v1.Container { return r.rareOrZero().initContainers }

// Volumes returns the pod's volumes that matter to placement (the
// informers' transform drops the others).
func (r *PodRecord) Volumes() []v1.Volume { return r.rareOrZero().volumes }

// ResourceClaims returns the pod's spec.resourceClaims.
func (r *PodRecord) ResourceClaims() []v1.PodResourceClaim { return r.rareOrZero().resourceClaims }

// Overhead returns the pod's spec.overhead.
func (r *PodRecord) Overhead() v1.ResourceList { return r.rareOrZero().overhead }

// Resources returns the pod's pod-level spec.resources.
func (r *PodRecord) Resources() *v1.ResourceRequirements { return r.rareOrZero().resources }

// ResourceClaimStatuses returns the pod's status.resourceClaimStatuses.
func (r *PodRecord) ResourceClaimStatuses() []v1.PodResourceClaimStatus {
	return r.rareOrZero().resourceClaimStatuses
}

// Metadata the record keeps (metav1.Object).

func (r *PodRecord) GetName() string                              { return r.name }
func (r *PodRecord) SetName(name string)                          { r.name = name }
func (r *PodRecord) GetNamespace() string                         { return r.namespace }
func (r *PodRecord) SetNamespace(namespace string)                { r.namespace = namespace }
func (r *PodRecord) GetUID() types.UID                            { return r.uid }
func (r *PodRecord) SetUID(uid types.UID)                         { r.uid = uid }
func (r *PodRecord) GetResourceVersion() string                   { return r.resourceVersion }
func (r *PodRecord) SetResourceVersion(version string)            { r.resourceVersion = version }
func (r *PodRecord) GetLabels() map[string]string                 { return r.labels }
func (r *PodRecord) SetLabels(labels map[string]string)           { r.labels = labels }
func (r *PodRecord) GetAnnotations() map[string]string            { return r.annotations }
func (r *PodRecord) SetAnnotations(annotations map[string]string) { r.annotations = annotations }
func (r *PodRecord) GetOwnerReferences() []metav1.OwnerReference  { return r.ownerReferences }
func (r *PodRecord) SetOwnerReferences(refs []metav1.OwnerReference) {
	r.ownerReferences = refs
}
func (r *PodRecord) GetCreationTimestamp() metav1.Time           { return r.creationTimestamp }
func (r *PodRecord) SetCreationTimestamp(timestamp metav1.Time)  { r.creationTimestamp = timestamp }
func (r *PodRecord) GetDeletionTimestamp() *metav1.Time          { return r.deletionTimestamp }
func (r *PodRecord) SetDeletionTimestamp(timestamp *metav1.Time) { r.deletionTimestamp = timestamp }

// Metadata the record does not keep: read as unset, set to no effect.

func (r *PodRecord) GetGenerateName() string                       { return "" }
func (r *PodRecord) SetGenerateName(string)                        {}
func (r *PodRecord) GetGeneration() int64                          { return 0 }
func (r *PodRecord) SetGeneration(int64)                           {}
func (r *PodRecord) GetSelfLink() string                           { return "" }
func (r *PodRecord) SetSelfLink(string)                            {}
func (r *PodRecord) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (r *PodRecord) SetDeletionGracePeriodSeconds(*int64)          {}
func (r *PodRecord) GetFinalizers() []string                       { return nil }
func (r *PodRecord) SetFinalizers([]string)                        {}
func (r *PodRecord) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (r *PodRecord) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetObjectKind implements runtime.Object: a record has no kind of its
// own.
func (r *PodRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: a copy of the record that
// shares nothing with it (its pod, made and copied, recorded again).
func (r *PodRecord) DeepCopyObject() runtime.Object { return NewPodRecord(r.Pod().DeepCopy()) }

var (
	_ runtime.Object = (*PodRecord)(nil)
	_ metav1.Object  = (*PodRecord)(nil)
)

// StoredPod returns the pod that obj, an object of a pod informer's
// store, stands for: the pod itself, or, for the PodRecord the
// informers' transform keeps of a bound pod, a pod made from it. ok is
// false for anything else (and for nil).
func StoredPod(obj any) (*v1.Pod, bool) {
	switch o := obj.(type) {
	case *v1.Pod:
		return o, o != nil
	case *PodRecord:
		if o == nil {
			return nil, false
		}
		return o.Pod(), true
	}
	return nil, false
}
