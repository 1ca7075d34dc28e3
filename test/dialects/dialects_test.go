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

package dialects

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func podGroup(apiVersion, ns, name string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": apiVersion,
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}
}

// A Volcano job of 4 pods whose PodGroup says minMember 2 starts with 2
// when only 2 fit, and runs all 4 once there is room.
func TestVolcanoMinMemberBelowReplicas(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	createObject(t, volcanoGVR, ns, podGroup("scheduling.volcano.sh/v1beta1", ns, "vj", map[string]any{"minMember": int64(2)}))
	for i := range 4 {
		createPod(t, gangPod(ns, fmt.Sprintf("vj-%d", i)).Annotation(framework.GroupNameAnnotation, "vj").Obj())
	}
	waitBound(t, ns, 2, "minMember 2 of 4 with room for 2")
	stayBound(t, ns, 2, "no room for a third pod")
	waitObject(t, volcanoGVR, ns, "vj", "phase Running", phaseIs("Running"))
	addNode(t, "2")
	waitBound(t, ns, 4, "room for all 4 after a node was added")
}

// Volcano's own annotation names the same kind of group.
func TestVolcanoAnnotation(t *testing.T) {
	ns, _ := setup(t, 1, "4")
	startScheduler(t)
	createObject(t, volcanoGVR, ns, podGroup("scheduling.volcano.sh/v1beta1", ns, "vv", map[string]any{"minMember": int64(3)}))
	for i := range 2 {
		createPod(t, gangPod(ns, fmt.Sprintf("vv-%d", i)).Annotation(framework.VolcanoGroupNameAnnotation, "vv").Obj())
	}
	waitUnschedulable(t, ns, "vv-0", "waiting for tasks: 2 of min-available 3 exist")
	waitObject(t, volcanoGVR, ns, "vv", "Volcano's Unschedulable condition with the pods' message",
		volcanoConditionIs("True", "waiting for tasks: 2 of min-available 3 exist"))
	stayBound(t, ns, 0, "2 of minMember 3 pods exist")
	createPod(t, gangPod(ns, "vv-2").Annotation(framework.VolcanoGroupNameAnnotation, "vv").Obj())
	waitBound(t, ns, 3, "the third pod arrived")
	waitObject(t, volcanoGVR, ns, "vv", "the Unschedulable condition False", volcanoConditionIs("False", ""))
}

// A scheduler-plugins gang is all or nothing at its minMember.
func TestSchedulerPluginsGang(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	createObject(t, coschedulingGVR, ns, podGroup("scheduling.x-k8s.io/v1alpha1", ns, "sp", map[string]any{"minMember": int64(3)}))
	for i := range 3 {
		createPod(t, gangPod(ns, fmt.Sprintf("sp-%d", i)).Label(framework.CoschedulingPodGroupLabel, "sp").Obj())
	}
	waitUnschedulable(t, ns, "sp-0", "min-available 3")
	stayBound(t, ns, 0, "only 2 of minMember 3 fit")
	waitObject(t, coschedulingGVR, ns, "sp", "phase PreScheduling", phaseIs("PreScheduling"))
	addNode(t, "2")
	waitBound(t, ns, 3, "all 3 fit after a node was added")
	waitObject(t, coschedulingGVR, ns, "sp", "phase Scheduled", phaseIs("Scheduled"))
}

// A pod whose PodGroup does not exist yet waits, with the reason on the
// pod, and is scheduled when the PodGroup appears.
func TestWaitsForItsPodGroup(t *testing.T) {
	ns, _ := setup(t, 1, "4")
	startScheduler(t)
	for i := range 2 {
		createPod(t, gangPod(ns, fmt.Sprintf("late-%d", i)).Label(framework.CoschedulingPodGroupLabel, "late").Obj())
	}
	waitUnschedulable(t, ns, "late-0", "waiting for PodGroup.scheduling.x-k8s.io "+ns+"/late to exist")
	stayBound(t, ns, 0, "no PodGroup yet")
	createObject(t, coschedulingGVR, ns, podGroup("scheduling.x-k8s.io/v1alpha1", ns, "late", map[string]any{"minMember": int64(2)}))
	waitBound(t, ns, 2, "the PodGroup appeared")
}

// A native scheduling.k8s.io/v1beta1 PodGroup gang.
func TestNativePodGroupGang(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	createObject(t, nativeGVR, ns, podGroup("scheduling.k8s.io/v1beta1", ns, "np", map[string]any{
		"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(2)}}}))
	native := func(name string) *v1.Pod {
		p := gangPod(ns, name).Obj()
		group := "np"
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		return p
	}
	createPod(t, native("np-0"))
	waitUnschedulable(t, ns, "np-0", "waiting for tasks: 1 of min-available 2 exist")
	waitObject(t, nativeGVR, ns, "np", "condition Unschedulable", conditionIs("False", "Unschedulable", "waiting for tasks: 1 of min-available 2 exist"))
	createPod(t, native("np-1"))
	waitBound(t, ns, 2, "both pods of minCount 2 exist")
	waitObject(t, nativeGVR, ns, "np", "condition Scheduled", conditionIs("True", "Scheduled", ""))
}

// A Job whose pods opt in is a gang of its parallelism.
func TestJobParallelism(t *testing.T) {
	ns, _ := setup(t, 1, "4")
	startScheduler(t)
	parallelism, completions := int32(3), int32(6)
	suspend := true
	job := &batchv1Job{
		Name: "train", Namespace: ns, Parallelism: parallelism, Completions: completions, Suspend: suspend,
	}
	uid := job.create(t)
	owned := func(name string) *v1.Pod {
		p := gangPod(ns, name).Annotation(framework.JobGangAnnotation, "true").Obj()
		isController := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: uid, Controller: &isController}}
		return p
	}
	createPod(t, owned("train-0"))
	createPod(t, owned("train-1"))
	waitUnschedulable(t, ns, "train-0", "waiting for tasks: 2 of min-available 3 exist")
	stayBound(t, ns, 0, "2 of parallelism 3 pods exist")
	createPod(t, owned("train-2"))
	waitBound(t, ns, 3, "parallelism 3 reached")
}

// Conflicting signals are reported on the pod, and nothing is scheduled.
func TestConflicts(t *testing.T) {
	ns, _ := setup(t, 1, "4")
	// The PodGroup exists before the scheduler starts, so that it is known
	// (the scheduler waits for its informers to sync) before the pods:
	// pods with a valid annotation quorum seen before their PodGroup would
	// be scheduled on the annotation alone.
	createObject(t, volcanoGVR, ns, podGroup("scheduling.volcano.sh/v1beta1", ns, "q", map[string]any{"minMember": int64(2)}))
	startScheduler(t)
	// One pod naming two different groups.
	createPod(t, gangPod(ns, "two").Label(framework.CoschedulingPodGroupLabel, "a").
		Annotation(framework.GroupNameAnnotation, "b").Annotation(framework.MinAvailableAnnotation, "1").Obj())
	waitUnschedulable(t, ns, "two", "names different groups", "label scheduling.x-k8s.io/pod-group=a", "annotation scheduling.k8s.io/group-name=b")
	// A PodGroup whose quorum disagrees with the annotation.
	for i := range 2 {
		createPod(t, gangPod(ns, fmt.Sprintf("q-%d", i)).Group("q").MinAvailable("1").Obj())
	}
	waitUnschedulable(t, ns, "q-0", "conflicting quorums", "PodGroup.scheduling.volcano.sh "+ns+"/q says 2", "scheduling.k8s.io/min-available says 1")
	stayBound(t, ns, 0, "conflicting signals")
}
