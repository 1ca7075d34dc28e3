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
)

// compositeChild is a native PodGroup of minCount whose parent is the
// CompositePodGroup parent.
func compositeChild(ns, name, parent string, minCount int64) map[string]any {
	return podGroup("scheduling.k8s.io/v1beta1", ns, name, map[string]any{
		"parentCompositePodGroupName": parent,
		"workloadRef":                 map[string]any{"workloadName": parent, "templateName": name},
		"schedulingPolicy":            map[string]any{"gang": map[string]any{"minCount": minCount}},
	})
}

// nativePod is a pod of 1 CPU of the native PodGroup group.
func nativePod(ns, name, group string) *v1.Pod {
	p := gangPod(ns, name).Obj()
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// A CompositePodGroup whose gang needs 2 of its 3 child PodGroups (minCount
// 2 each). With room for 3 pods nothing starts and the composite's
// CompositePodGroupInitiallyScheduled condition is False with the pods'
// message; with room for 5 of the 6 pods exactly two children run whole
// and the condition turns True, the third child places none of its pods
// (alone, each child would have placed its pods as they fit); a node
// added starts it. Its pods wait for the composite until it exists. Each
// child's PodGroupInitiallyScheduled condition follows its own pods.
func TestCompositePodGroupGang(t *testing.T) {
	ns, _ := setup(t, 1, "3")
	startScheduler(t)
	for c := range 3 {
		child := fmt.Sprintf("cg-%d", c)
		createObject(t, nativeGVR, ns, compositeChild(ns, child, "cg", 2))
		for i := range 2 {
			createPod(t, nativePod(ns, fmt.Sprintf("%s-%d", child, i), child))
		}
	}
	waitUnschedulable(t, ns, "cg-0-0", "waiting for CompositePodGroup.scheduling.k8s.io "+ns+"/cg to exist")
	stayBound(t, ns, 0, "the composite does not exist yet")
	createObject(t, compositeGVR, ns, map[string]any{
		"apiVersion": "scheduling.k8s.io/v1alpha3",
		"kind":       "CompositePodGroup",
		"metadata":   map[string]any{"name": "cg", "namespace": ns},
		"spec": map[string]any{
			"workloadRef":      map[string]any{"workloadName": "cg", "templateName": "cg"},
			"schedulingPolicy": map[string]any{"gang": map[string]any{"minGroupCount": int64(2)}},
		},
	})
	// Room for 3 pods: no two children fit, and the composite says so.
	waitObject(t, compositeGVR, ns, "cg", "the composite's condition Unschedulable",
		typedConditionIs("CompositePodGroupInitiallyScheduled", "False", "Unschedulable", "CompositePodGroup.scheduling.k8s.io:cg can never start"))
	stayBound(t, ns, 0, "room for 3 pods, two children of 2 needed")
	addNode(t, "2")
	waitBound(t, ns, 4, "two children of 2 pods")
	waitObject(t, compositeGVR, ns, "cg", "the composite's condition Scheduled",
		typedConditionIs("CompositePodGroupInitiallyScheduled", "True", "Scheduled", ""))
	stayBound(t, ns, 4, "the third child has room for one pod of its 2")
	children := map[string]int{}
	for pod := range bound(t, ns) {
		children[pod[:len("cg-0")]]++
	}
	for child, n := range children {
		if n != 2 {
			t.Errorf("child %s runs %d pods, want 2 or none", child, n)
		}
	}
	// Each child's condition says how its own pods fare.
	for c := range 3 {
		child := fmt.Sprintf("cg-%d", c)
		if children[child] == 2 {
			waitObject(t, nativeGVR, ns, child, "condition Scheduled", conditionIs("True", "Scheduled", ""))
		} else {
			waitObject(t, nativeGVR, ns, child, "condition Unschedulable", conditionIs("False", "Unschedulable", ""))
		}
	}
	addNode(t, "1")
	waitBound(t, ns, 6, "room for the third child")
	for c := range 3 {
		waitObject(t, nativeGVR, ns, fmt.Sprintf("cg-%d", c), "condition Scheduled", conditionIs("True", "Scheduled", ""))
	}
}

// A basic CompositePodGroup leaves its children gangs of their own: with
// room for 3 pods, a child of minCount 2 and one of minCount 1 both start.
func TestCompositePodGroupBasic(t *testing.T) {
	ns, _ := setup(t, 1, "3")
	startScheduler(t)
	createObject(t, compositeGVR, ns, map[string]any{
		"apiVersion": "scheduling.k8s.io/v1alpha3",
		"kind":       "CompositePodGroup",
		"metadata":   map[string]any{"name": "cb", "namespace": ns},
		"spec": map[string]any{
			"workloadRef":      map[string]any{"workloadName": "cb", "templateName": "cb"},
			"schedulingPolicy": map[string]any{"basic": map[string]any{}},
		},
	})
	createObject(t, nativeGVR, ns, compositeChild(ns, "cb-a", "cb", 2))
	createObject(t, nativeGVR, ns, compositeChild(ns, "cb-b", "cb", 1))
	for i := range 2 {
		createPod(t, nativePod(ns, fmt.Sprintf("cb-a-%d", i), "cb-a"))
		createPod(t, nativePod(ns, fmt.Sprintf("cb-b-%d", i), "cb-b"))
	}
	waitBound(t, ns, 3, "each child on its own fits")
}
