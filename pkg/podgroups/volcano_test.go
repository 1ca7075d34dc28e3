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
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// A Volcano PodGroup whose gang cannot be placed carries Volcano's
// Unschedulable condition with the scheduler's message (a gang that can
// never fit says so there at once); placed, the condition turns False.
func TestVolcanoUnschedulableCondition(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "g", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"minMember": int64(2)},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, pg.DeepCopy())
	const never = "the job can never start: it needs cpu 64 but queue \"team-a\" is limited to cpu 32"
	j := volcanoJob(job(2, 0, 0, 0, 0), never)
	jobs := jobSource{j.ID: j}
	w := New(client, jobs, testRules)
	k := Key{Kind: framework.GroupKindVolcano, Namespace: "ns", Name: "g"}
	sync := func() *unstructured.Unstructured {
		t.Helper()
		if err := w.sync(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "g", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.ObjectChanged(framework.GroupKindVolcano, gvr, got, false)
		return got
	}
	condition := func(u *unstructured.Unstructured) map[string]any {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var out map[string]any
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == VolcanoConditionUnschedulable {
				if out != nil {
					t.Errorf("two Unschedulable conditions in %v", conds)
				}
				out = m
			}
		}
		return out
	}

	w.ObjectChanged(framework.GroupKindVolcano, gvr, pg, false)
	got := sync()
	c := condition(got)
	if c == nil || c["status"] != "True" || c["reason"] != VolcanoReasonNotEnoughResources || c["message"] != never {
		t.Fatalf("condition %v, want Unschedulable True with %q", c, never)
	}
	if p := currentPhase(got); p != VolcanoInqueue {
		t.Errorf("phase %q, want %q", p, VolcanoInqueue)
	}

	// Placed: the condition turns False.
	placed := volcanoJob(job(0, 2, 2, 0, 0), "")
	jobs[placed.ID] = placed
	got = sync()
	if c := condition(got); c == nil || c["status"] != "False" || c["reason"] != VolcanoReasonScheduled {
		t.Errorf("condition %v once placed, want Unschedulable False", c)
	}
	if p := currentPhase(got); p != VolcanoRunning {
		t.Errorf("phase %q, want %q", p, VolcanoRunning)
	}
	// Nothing changes: nothing is written.
	before := len(client.Actions())
	sync()
	for _, a := range client.Actions()[before:] {
		if a.GetVerb() == "update" {
			t.Errorf("an update with nothing to change: %v", a)
		}
	}
}

// A gang placed at once gets no Unschedulable condition at all.
func TestVolcanoConditionOnlyOverAnUnschedulableOne(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if setVolcanoCondition(u, "False", VolcanoReasonScheduled, "", metav1.Now().Time) {
		t.Errorf("a False condition was written with no True one before: %v", u.Object)
	}
}

// volcanoJob is j's pods as the pods of a Volcano PodGroup g of quorum 2,
// each with an unschedulable message msg if not empty.
func volcanoJob(j *framework.JobInfo, msg string) *framework.JobInfo {
	out := framework.NewJobInfo(j.ID)
	for _, task := range j.Tasks {
		p := task.PodObject().DeepCopy()
		p.Labels = nil
		p.Annotations = map[string]string{framework.VolcanoGroupNameAnnotation: "g"}
		if msg != "" {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg}}
		}
		out.SetTask(inGroup(p, framework.GroupKindVolcano))
	}
	out.SetGroupPolicy(framework.GroupKindVolcano, &framework.GroupPolicy{MinMember: 2})
	return out
}
