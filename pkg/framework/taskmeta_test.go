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
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// fullPod is a bound pod with every field the task getters answer for
// set to a value of its own.
func fullPod() *v1.Pod {
	created := metav1.NewTime(time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC))
	deleted := metav1.NewTime(created.Add(time.Hour))
	started := metav1.NewTime(created.Add(time.Minute))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p-0", Namespace: "team", UID: "uid-0", ResourceVersion: "42",
			CreationTimestamp: created, DeletionTimestamp: &deleted,
			Labels:      map[string]string{QueueLabel: "q", "role": "worker"},
			Annotations: map[string]string{SubGroupAnnotation: "workers", MinAvailableAnnotation: "3"},
		},
		Spec: v1.PodSpec{
			NodeName:       "n1",
			Priority:       ptr.To[int32](7),
			Affinity:       &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}},
			Containers:     []v1.Container{{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}}},
			InitContainers: []v1.Container{{Name: "i"}},
			Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			ResourceClaims:  []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-0")}},
			SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: ptr.To("pg")},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &started},
	}
}

// The getters answer what the pod says, and a task stands for its pod
// wherever a PodMeta is read. When the cache keeps a compact record of a
// bound pod instead of the pod, this is what the record must still
// answer.
func TestTaskGetters(t *testing.T) {
	pod := fullPod()
	task := NewTaskInfo(pod, GroupResolver{})
	if task.Status != TaskBound {
		t.Fatalf("task of a pod with a node is %s, want %s", task.Status, TaskBound)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"GetName", task.GetName(), pod.Name},
		{"GetNamespace", task.GetNamespace(), pod.Namespace},
		{"GetUID", task.GetUID(), pod.UID},
		{"GetResourceVersion", task.GetResourceVersion(), pod.ResourceVersion},
		{"GetCreationTimestamp", task.GetCreationTimestamp(), pod.CreationTimestamp},
		{"GetDeletionTimestamp", task.GetDeletionTimestamp(), pod.DeletionTimestamp},
		{"GetLabels", task.GetLabels(), pod.Labels},
		{"GetAnnotations", task.GetAnnotations(), pod.Annotations},
		{"Phase", task.Phase(), pod.Status.Phase},
		{"StartTime", task.StartTime(), pod.Status.StartTime},
		{"Priority", task.Priority(), *pod.Spec.Priority},
		{"Affinity", task.Affinity(), pod.Spec.Affinity},
		{"Containers", task.Containers(), pod.Spec.Containers},
		{"InitContainers", task.InitContainers(), pod.Spec.InitContainers},
		{"Volumes", task.Volumes(), pod.Spec.Volumes},
		{"ResourceClaims", task.ResourceClaims(), pod.Spec.ResourceClaims},
		{"SchedulingGroup", task.SchedulingGroup(), pod.Spec.SchedulingGroup},
		{"MayHoldHostPorts", task.MayHoldHostPorts(), MayHoldHostPorts(pod)},
		{"Key", task.Key(), "team/p-0"},
		{"klog.KObj", klog.KObj(task).String(), klog.KObj(pod).String()},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !task.MayHoldHostPorts() {
		t.Error("MayHoldHostPorts = false for a pod with a host port")
	}

	// The rules that read metadata only answer the same for the pod and
	// its task.
	if gq, gv := QueueNameForPod(task); gq != "q" || gv != "label "+QueueLabel {
		t.Errorf("QueueNameForPod(task) = %q, %q", gq, gv)
	}
	if got, want := declaredMinAvailable(task), declaredMinAvailable(pod); got != want || got != "3" {
		t.Errorf("declaredMinAvailable(task) = %q, pod's %q, want 3", got, want)
	}
	rules := []SubGroupRule{{KeyPodGroup: true}, ownSubGroupRule}
	for i := range rules {
		r, k, ok := SubGroupOf(rules[i:], task)
		pr, pk, pok := SubGroupOf(rules[i:], pod)
		if r != pr || k != pk || ok != pok || !ok {
			t.Errorf("SubGroupOf(rules[%d:], task) = %d, %q, %v; of the pod %d, %q, %v", i, r, k, ok, pr, pk, pok)
		}
	}
	if k, _ := rules[0].take(task); k != rules[0].key("pg") {
		t.Errorf("the PodGroup rule keys the task %q, want the key of its PodGroup pg", k)
	}
	// A PodMeta that is neither a pod nor a task names no PodGroup.
	if sg := schedulingGroupOf(&metav1.ObjectMeta{}); sg != nil {
		t.Errorf("schedulingGroupOf(ObjectMeta) = %v, want nil", sg)
	}
}
