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
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A KAI PodGroup whose gang cannot be placed carries KAI's
// UnschedulableOnNodePool scheduling condition with the scheduler's
// message, next to another pool's entry it leaves alone; a new message
// keeps the transition; placed, the entry is removed; nothing to say,
// nothing is changed.
func TestKAISchedulingCondition(t *testing.T) {
	other := map[string]any{"type": KAIConditionUnschedulableOnNodePool, "nodePool": "gpu-pool", "status": "True", "transitionID": "4"}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "g", "namespace": "ns"},
		"status":   map[string]any{"schedulingConditions": []any{other}},
	}}
	entries := func() (ours []map[string]any, all int) {
		conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "schedulingConditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["nodePool"] == KAINodePool {
				ours = append(ours, m)
			}
		}
		return ours, len(conds)
	}

	if _, changed, _ := KAIStatus(pg, gangState{min: 2, exist: 2}); changed {
		t.Error("changed with nothing to say")
	}
	const msg = "gang ns/g cannot reach its quorum"
	summary, changed, err := KAIStatus(pg, gangState{min: 2, exist: 2, unschedulable: msg})
	if err != nil || !changed || summary == "" {
		t.Fatalf("unschedulable: summary %q changed %v err %v", summary, changed, err)
	}
	ours, all := entries()
	if len(ours) != 1 || all != 2 {
		t.Fatalf("entries %v of %d, want one of ours beside the other pool's", ours, all)
	}
	c := ours[0]
	if c["status"] != "True" || c["reason"] != KAIReasonUnschedulable || c["message"] != msg || c["transitionID"] != "5" {
		t.Errorf("entry %v, want True, %s, %q, transitionID 5", c, KAIReasonUnschedulable, msg)
	}
	if r, _ := c["reasons"].([]any); len(r) != 1 || r[0].(map[string]any)["message"] != msg {
		t.Errorf("reasons %v, want one with the message", c["reasons"])
	}
	if _, changed, _ := KAIStatus(pg, gangState{min: 2, exist: 2, unschedulable: msg}); changed {
		t.Error("changed with the same message")
	}
	const msg2 = "gang ns/g: 1 of 2 sub-groups could reach their quorum"
	if _, changed, _ := KAIStatus(pg, gangState{min: 2, exist: 2, unschedulable: msg2}); !changed {
		t.Fatal("a new message not written")
	}
	if ours, _ := entries(); len(ours) != 1 || ours[0]["message"] != msg2 || ours[0]["transitionID"] != "5" || ours[0]["lastTransitionTime"] != c["lastTransitionTime"] {
		t.Errorf("entries %v after a new message, want one with %q and the same transition", ours, msg2)
	}
	if _, changed, _ := KAIStatus(pg, gangState{min: 2, exist: 2, onNode: 2}); !changed {
		t.Fatal("placed: entry not removed")
	}
	if ours, all := entries(); len(ours) != 0 || all != 1 {
		t.Errorf("entries %v of %d once placed, want only the other pool's", ours, all)
	}
	if _, changed, _ := KAIStatus(pg, gangState{min: 2, exist: 2, onNode: 2}); changed {
		t.Error("placed twice: changed again")
	}
}
