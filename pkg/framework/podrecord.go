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
)

// PodRecord is what the scheduler keeps of a pod bound to a node: the
// fields its plugins, preemption, queues and handlers read of a pod
// that is no longer scheduled, without the 1,240-byte v1.Pod around them.
// The slices, maps and pointers are the pod's own, shared, never copied:
// do not modify them.
//
// A PodRecord is a metav1.Object (its ObjectMeta is the pod's, as the
// informers' transform leaves it) and a runtime.Object, so that an
// informer's store can hold it in place of the pod: the transform
// returns one for every bound pod.
type PodRecord struct {
	metav1.ObjectMeta

	NodeName, SchedulerName string
	Priority                *int32
	Affinity                *v1.Affinity
	SchedulingGroup         *v1.PodSchedulingGroup
	Containers              []v1.Container
	InitContainers          []v1.Container
	Volumes                 []v1.Volume
	ResourceClaims          []v1.PodResourceClaim
	Overhead                v1.ResourceList
	Resources               *v1.ResourceRequirements
	ActiveDeadlineSeconds   *int64

	Phase                       v1.PodPhase
	StartTime                   *metav1.Time
	Conditions                  []v1.PodCondition
	ResourceClaimStatuses       []v1.PodResourceClaimStatus
	ExtendedResourceClaimStatus *v1.PodExtendedResourceClaimStatus
}

// NewPodRecord returns the record of pod.
func NewPodRecord(pod *v1.Pod) *PodRecord {
	return &PodRecord{
		ObjectMeta: pod.ObjectMeta,
		NodeName:   pod.Spec.NodeName, SchedulerName: pod.Spec.SchedulerName, Priority: pod.Spec.Priority,
		Affinity: pod.Spec.Affinity, SchedulingGroup: pod.Spec.SchedulingGroup,
		Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers, Volumes: pod.Spec.Volumes,
		ResourceClaims: pod.Spec.ResourceClaims, Overhead: pod.Spec.Overhead, Resources: pod.Spec.Resources,
		ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds,
		Phase:                 pod.Status.Phase, StartTime: pod.Status.StartTime, Conditions: pod.Status.Conditions,
		ResourceClaimStatuses: pod.Status.ResourceClaimStatuses, ExtendedResourceClaimStatus: pod.Status.ExtendedResourceClaimStatus,
	}
}

// Pod returns a v1.Pod of what r holds, allocated anew, for the callers
// that need a pod object (the Eviction API, events, helpers of other
// modules): the fields r does not keep are zero.
func (r *PodRecord) Pod() *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: r.ObjectMeta,
		Spec: v1.PodSpec{
			NodeName: r.NodeName, SchedulerName: r.SchedulerName, Priority: r.Priority,
			Affinity: r.Affinity, SchedulingGroup: r.SchedulingGroup,
			Containers: r.Containers, InitContainers: r.InitContainers, Volumes: r.Volumes,
			ResourceClaims: r.ResourceClaims, Overhead: r.Overhead, Resources: r.Resources,
			ActiveDeadlineSeconds: r.ActiveDeadlineSeconds,
		},
		Status: v1.PodStatus{
			Phase: r.Phase, StartTime: r.StartTime, Conditions: r.Conditions,
			ResourceClaimStatuses: r.ResourceClaimStatuses, ExtendedResourceClaimStatus: r.ExtendedResourceClaimStatus,
		},
	}
}

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
