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
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// A bound pod costs a record and a task, each sized to a Go size class
// (..., 192, 208, ..., 256, 288): a field added to either costs 16 to
// 32 bytes a pod, 2.4 to 4.8 MB at 150,000, and belongs in podRecordRare
// (or behind a pointer of the task) unless most pods set it.
func TestPodRecordSize(t *testing.T) {
	if size := unsafe.Sizeof(PodRecord{}); size > 256 {
		t.Errorf("PodRecord is %d bytes, more than 256", size)
	}
	if size := unsafe.Sizeof(TaskInfo{}); size > 192 {
		t.Errorf("TaskInfo is %d bytes, more than 192", size)
	}
}

// A record gives back, as a pod, every field it keeps, rare ones
// included, and nothing else; the rare struct is allocated only for a
// pod that sets one of its fields.
func TestPodRecordKeepsWhatItSays(t *testing.T) {
	full := fullPod()
	full.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: "j-uid", Controller: ptr.To(true)}}
	full.Spec.SchedulerName = "batch-scheduler"
	full.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	full.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}
	full.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	full.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	full.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("gpu-0")}}
	full.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext"}

	// What the record does not keep.
	dropped := full.DeepCopy()
	dropped.GenerateName, dropped.Generation = "p-", 3
	dropped.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	dropped.DeletionGracePeriodSeconds = ptr.To[int64](30)
	dropped.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
	dropped.Spec.NodeSelector = map[string]string{"zone": "a"}
	dropped.Status.PodIP = "10.0.0.1"

	rec := NewPodRecord(dropped)
	want := full.DeepCopy()
	want.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	if got := rec.Pod(); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the pod made from the record:\n%+v\nwant\n%+v", got, want)
	}
	if rec.rare == nil {
		t.Error("a pod with affinity, init containers, volumes, claims, overhead and a deadline has no rare fields")
	}
	for name, got := range map[string]any{
		"GetGenerateName": rec.GetGenerateName(), "GetGeneration": rec.GetGeneration(),
		"GetFinalizers": rec.GetFinalizers(), "GetDeletionGracePeriodSeconds": rec.GetDeletionGracePeriodSeconds(),
	} {
		if !equality.Semantic.DeepEqual(got, zeroOf(got)) {
			t.Errorf("%s = %v for metadata the record does not keep", name, got)
		}
	}

	plain := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "q-uid", Labels: map[string]string{"a": "b"}},
		Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c"}}},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	prec := NewPodRecord(plain)
	if prec.rare != nil {
		t.Errorf("a pod with none of the rare fields allocated them: %+v", *prec.rare)
	}
	if prec.Affinity() != nil || prec.Volumes() != nil || prec.InitContainers() != nil || prec.ResourceClaims() != nil ||
		prec.SchedulingGroup() != nil || prec.Overhead() != nil || prec.Resources() != nil {
		t.Error("a record without rare fields answers one of them")
	}
	if !equality.Semantic.DeepEqual(noRare, podRecordRare{}) {
		t.Errorf("the shared zero rare fields were written: %+v", noRare)
	}

	// Stores key it as they key the pod.
	if _, err := meta.Accessor(prec); err != nil {
		t.Errorf("meta.Accessor(record): %v", err)
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(prec); err != nil || key != "ns/q" {
		t.Errorf("the store key of the record is %q, %v; want ns/q", key, err)
	}
}

func zeroOf(v any) any {
	switch v.(type) {
	case string:
		return ""
	case int64:
		return int64(0)
	case []string:
		return []string(nil)
	case *int64:
		return (*int64)(nil)
	}
	return nil
}
