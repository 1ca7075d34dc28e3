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

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// inGroup is the task of p in the gang "g" of kind. The tests of the
// status writer give each task its group: the rules that match pods to
// gangs are pkg/dialects', which imports this package.
func inGroup(p *v1.Pod, kind framework.GroupKind) *framework.TaskInfo {
	m := framework.Membership{Ref: framework.GroupRef{Kind: kind, Name: "g", Object: "g", Via: "test"}}
	return framework.NewTaskInfoInGroup(p, resources.PodRequests(p), m)
}

// job builds a gang of pending, bound (onNode) and finished pods; running
// of the bound ones have phase Running.
func job(pending, bound, running, succeeded, failed int) *framework.JobInfo {
	j := framework.NewJobInfo(framework.JobID{Namespace: "ns", Name: "g", Gang: true})
	n := 0
	add := func(node string, phase v1.PodPhase) {
		n++
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + n)), UID: types.UID(rune('a' + n)),
			Labels: map[string]string{framework.CoschedulingPodGroupLabel: "g"}},
			Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: phase}}
		j.SetTask(inGroup(p, framework.GroupKindCoscheduling))
	}
	for range pending {
		add("", v1.PodPending)
	}
	for i := range bound {
		phase := v1.PodPending
		if i < running {
			phase = v1.PodRunning
		}
		add("n1", phase)
	}
	for range succeeded {
		add("n1", v1.PodSucceeded)
	}
	for range failed {
		add("n1", v1.PodFailed)
	}
	return j
}

func TestPhases(t *testing.T) {
	tests := []struct {
		name                               string
		pending, bound, running, succ, bad int
		coscheduling, volcano              string
	}{
		{name: "too few pods", pending: 2, coscheduling: "Pending", volcano: "Pending"},
		{name: "complete, waiting", pending: 3, coscheduling: "PreScheduling", volcano: "Inqueue"},
		{name: "partly placed", pending: 2, bound: 1, coscheduling: "Scheduling", volcano: "Unknown"},
		{name: "quorum placed", bound: 3, coscheduling: "Scheduled", volcano: "Running"},
		{name: "quorum running", bound: 3, running: 3, coscheduling: "Running", volcano: "Running"},
		{name: "all succeeded", succ: 3, coscheduling: "Finished", volcano: "Completed"},
		{name: "failed below quorum", bound: 1, bad: 2, coscheduling: "Failed", volcano: "Unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stateOf(job(tt.pending, tt.bound, tt.running, tt.succ, tt.bad), 3)
			if got := coschedulingPhase(s); got != tt.coscheduling {
				t.Errorf("scheduler-plugins phase %q, want %q", got, tt.coscheduling)
			}
			if got := volcanoPhase(s); got != tt.volcano {
				t.Errorf("Volcano phase %q, want %q", got, tt.volcano)
			}
		})
	}
}

func TestNativeCondition(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "g", "generation": int64(2)}}}
	s := gangState{min: 2, exist: 2, unschedulable: "0/1 nodes are available"}
	cond, ok := nativeCondition(s)
	if !ok || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonUnschedulable || cond.Message != "0/1 nodes are available" {
		t.Fatalf("unschedulable condition %+v %v", cond, ok)
	}
	if !setCondition(u, cond) {
		t.Fatal("setting a new condition changed nothing")
	}
	if setCondition(u, cond) {
		t.Error("setting the same condition again reported a change")
	}
	s.onNode = 2
	cond, _ = nativeCondition(s)
	if cond.Status != metav1.ConditionTrue || cond.Reason != ReasonScheduled || !setCondition(u, cond) {
		t.Fatalf("scheduled condition %+v not set", cond)
	}
	// Once True, never back to False.
	if setCondition(u, metav1.Condition{Type: ConditionInitiallyScheduled, Status: metav1.ConditionFalse, Reason: ReasonUnschedulable}) {
		t.Error("a True condition regressed to False")
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if len(conds) != 1 || conds[0].(map[string]any)["observedGeneration"] != int64(2) {
		t.Errorf("conditions %v, want one with observedGeneration 2", conds)
	}
	if _, ok := nativeCondition(gangState{min: 2, exist: 1}); ok {
		t.Error("a condition without anything to say")
	}
}

// The message a status carries is the first waiting pod's by name, not
// whichever the map of tasks yields first: a status that changed with
// the order of a map would be rewritten on every sync.
func TestUnschedulableMessageIsStable(t *testing.T) {
	j := framework.NewJobInfo(framework.JobID{Namespace: "ns", Name: "g", Gang: true})
	for _, name := range []string{"d", "b", "c", "e", "a"} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionFalse, Message: "message of " + name}}}}
		if name == "a" {
			p.Status.Conditions = nil // waits without a message yet
		}
		j.SetTask(inGroup(p, framework.GroupKindCoscheduling))
	}
	for range 50 {
		if got := stateOf(j, 5).unschedulable; got != "message of b" {
			t.Fatalf("unschedulable %q, want pod b's, the first by name with a message", got)
		}
	}
}
