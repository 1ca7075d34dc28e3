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

package framework_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestPodRules(t *testing.T) {
	ours := func(p *v1.Pod) bool { return p.Spec.SchedulerName == "batch" }
	pod := func(scheduler, node string, phase v1.PodPhase, gated bool) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{SchedulerName: scheduler, NodeName: node}, Status: v1.PodStatus{Phase: phase}}
		if gated {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}}
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		state    framework.PodState
		interest bool
		finished bool
		counted  bool
	}{
		{"ours pending", pod("batch", "", v1.PodPending, false), framework.PodPending, true, false, false},
		{"ours gated", pod("batch", "", v1.PodPending, true), framework.PodGated, true, false, false},
		{"ours finished unbound", pod("batch", "", v1.PodFailed, false), framework.PodUntracked, true, true, false},
		{"ours gated and finished", pod("batch", "", v1.PodSucceeded, true), framework.PodUntracked, true, true, false},
		{"another's pending", pod("other", "", v1.PodPending, false), framework.PodUntracked, false, false, false},
		{"another's running", pod("other", "n1", v1.PodRunning, false), framework.PodAssigned, true, false, true},
		{"ours running", pod("batch", "n1", v1.PodRunning, false), framework.PodAssigned, true, false, true},
		{"bound, phase not yet reported", pod("batch", "n1", "", false), framework.PodAssigned, true, false, true},
		{"bound and succeeded", pod("batch", "n1", v1.PodSucceeded, false), framework.PodAssigned, true, true, false},
		{"another's bound and failed", pod("other", "n1", v1.PodFailed, false), framework.PodAssigned, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := framework.ClassifyPod(tc.pod, ours); got != tc.state {
				t.Errorf("ClassifyPod = %v, want %v", got, tc.state)
			}
			if got := framework.PodOfInterest(tc.pod, ours); got != tc.interest {
				t.Errorf("PodOfInterest = %v, want %v", got, tc.interest)
			}
			if got := framework.PodFinished(tc.pod); got != tc.finished {
				t.Errorf("PodFinished = %v, want %v", got, tc.finished)
			}
			if got := framework.PodCountedOnNode(tc.pod); got != tc.counted {
				t.Errorf("PodCountedOnNode = %v, want %v", got, tc.counted)
			}
			if got := framework.NewTaskInfo(tc.pod, framework.GroupResolver{}); tc.state == framework.PodAssigned && got.Counted != tc.counted {
				t.Errorf("NewTaskInfo(...).Counted = %v, want %v (PodCountedOnNode)", got.Counted, tc.counted)
			}
		})
	}
	if got := framework.ClassifyPod(nil, ours); got != framework.PodUntracked {
		t.Errorf("ClassifyPod(nil) = %v, want untracked", got)
	}
}
