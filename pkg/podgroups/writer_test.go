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

package podgroups

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// testRules are the status rules of the dialects whose status is written,
// as the table of pkg/dialects gives them.
var testRules = Rules{
	framework.GroupKindNative:       NativeCondition,
	framework.GroupKindCoscheduling: CoschedulingPhase,
	framework.GroupKindVolcano:      VolcanoStatus,
	framework.GroupKindKAI:          KAIStatus,
	framework.GroupKindComposite:    CompositeCondition,
}

type jobSource map[framework.JobID]*framework.JobInfo

func (s jobSource) Job(id framework.JobID) (*framework.JobInfo, bool) {
	j, ok := s[id]
	return j, ok
}

// The writer writes a phase once, and not again while nothing changes.
func TestWriterWritesOnlyChanges(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "g", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"minMember": int64(3)},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, pg.DeepCopy())
	j := job(0, 3, 0, 0, 0)
	j.SetGroupPolicy(framework.GroupKindCoscheduling, &framework.GroupPolicy{MinMember: 3})
	w := New(client, jobSource{j.ID: j}, testRules)
	w.ObjectChanged(framework.GroupKindCoscheduling, gvr, pg, false)
	k := Key{Kind: framework.GroupKindCoscheduling, Namespace: "ns", Name: "g"}
	updates := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if err := w.sync(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if n := updates(); n != 1 {
		t.Fatalf("%d status updates, want 1", n)
	}
	got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := currentPhase(got); p != CoschedulingScheduled {
		t.Fatalf("phase %q, want %q", p, CoschedulingScheduled)
	}
	// The informer reports the written object back: nothing to write.
	w.ObjectChanged(framework.GroupKindCoscheduling, gvr, got, false)
	if err := w.sync(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if n := updates(); n != 1 {
		t.Fatalf("%d status updates after the object came back, want 1", n)
	}
}

// A native PodGroup that is a child of a CompositePodGroup gang has no
// job of its own: its condition is written from its own pods in the
// composite's job, against its own quorum.
func TestWriterCompositeChild(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	child := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1"},
			"spec": map[string]any{"parentCompositePodGroupName": "c",
				"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(2)}}},
		}}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, child("a").DeepCopy(), child("b").DeepCopy())
	id := framework.JobID{Namespace: "ns", Name: "c", Gang: true, Owner: framework.GroupKindComposite}
	j := framework.NewJobInfo(id)
	j.SetGroupPolicy(framework.GroupKindComposite, &framework.GroupPolicy{MinMember: 2, SubGroups: []framework.SubGroupRule{
		{KeyPodGroup: true, MinSubGroups: 1, Quorums: map[string]int32{"a": 2, "b": 2}}}})
	m := framework.Membership{Ref: framework.CompositeRef("c", "x")}
	for i, pg := range []string{"a", "a", "b", "b"} {
		group := pg
		name := fmt.Sprintf("%s%d", pg, i)
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Spec: v1.PodSpec{NodeName: "n1", SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: &group}}}
		if i == 3 {
			p.Spec.NodeName = ""
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Message: "no room"}}
		}
		j.SetTask(framework.NewTaskInfoInGroup(p, resources.PodRequests(p), m))
	}
	w := New(client, jobSource{id: j}, testRules)
	for _, name := range []string{"a", "b"} {
		w.ObjectChanged(framework.GroupKindNative, gvr, child(name), false)
		if err := w.sync(context.Background(), Key{Kind: framework.GroupKindNative, Namespace: "ns", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string) string {
		got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == "PodGroupInitiallyScheduled" {
				return fmt.Sprint(c["status"])
			}
		}
		return ""
	}
	// a has both its pods on nodes; b one of its 2, the other waiting.
	if a, b := status("a"), status("b"); a != "True" || b != "False" {
		t.Errorf("conditions a %q, b %q; want True, False", a, b)
	}
}

// A CompositePodGroup gang's own condition counts its children at their
// quorum: four of its pods on nodes, enough in number, are not its
// quorum while child b has 1 of its 2 (a has an elastic extra); it turns
// True once b holds both. A child's sync asks for the composite's.
func TestWriterComposite(t *testing.T) {
	childGVR := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	gvr := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "compositepodgroups"}
	composite := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
		"metadata": map[string]any{"name": "c", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minGroupCount": int64(2)}}},
	}}
	child := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"parentCompositePodGroupName": "c", "schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(2)}}},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "CompositePodGroupList", childGVR: "PodGroupList"}, composite.DeepCopy(), child.DeepCopy())
	id := framework.JobID{Namespace: "ns", Name: "c", Gang: true, Owner: framework.GroupKindComposite}
	build := func(bWaits bool) *framework.JobInfo {
		j := framework.NewJobInfo(id)
		j.SetGroupPolicy(framework.GroupKindComposite, &framework.GroupPolicy{MinMember: 4, SubGroups: []framework.SubGroupRule{
			{KeyPodGroup: true, MinSubGroups: 2, Quorums: map[string]int32{"a": 2, "b": 2}}}})
		m := framework.Membership{Ref: framework.CompositeRef("c", "x")}
		for i, pg := range []string{"a", "a", "a", "b", "b"} {
			group := pg
			name := fmt.Sprintf("%s%d", pg, i)
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
				Spec: v1.PodSpec{NodeName: "n1", SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: &group}}}
			if i == 4 && bWaits {
				p.Spec.NodeName = ""
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Message: "no room"}}
			}
			j.SetTask(framework.NewTaskInfoInGroup(p, resources.PodRequests(p), m))
		}
		return j
	}
	jobs := jobSource{id: build(true)}
	w := New(client, jobs, testRules)
	w.ObjectChanged(framework.GroupKindNative, childGVR, child, false)
	w.queue.Get() // the child's own key
	if err := w.sync(context.Background(), Key{Kind: framework.GroupKindNative, Namespace: "ns", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if k, _ := w.queue.Get(); k != (Key{Kind: framework.GroupKindComposite, Namespace: "ns", Name: "c"}) {
		t.Errorf("after the child's sync the queue holds %v, want the composite", k)
	}
	condition := func() (status, message string) {
		t.Helper()
		got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == CompositeConditionInitiallyScheduled {
				return fmt.Sprint(c["status"]), fmt.Sprint(c["message"])
			}
		}
		return "", ""
	}
	sync := func() {
		t.Helper()
		got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.ObjectChanged(framework.GroupKindComposite, gvr, got, false)
		if err := w.sync(context.Background(), Key{Kind: framework.GroupKindComposite, Namespace: "ns", Name: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	if status, msg := condition(); status != "False" || msg != "no room" {
		t.Errorf("composite condition %s %q with child b short, want False with the pods' message", status, msg)
	}
	jobs[id] = build(false)
	sync()
	if status, _ := condition(); status != "True" {
		t.Errorf("composite condition %s with both children at quorum, want True", status)
	}
}
