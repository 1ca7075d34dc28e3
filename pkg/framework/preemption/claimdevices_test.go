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

package preemption

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

const claimed v1.ResourceName = "deviceclass.resource.kubernetes.io/gpu.example.com"

// deviceBudget lets each victim's group give up at most max devices of
// claimed: one group, "q".
type deviceBudget struct{ max int64 }

func (deviceBudget) Group(*framework.TaskInfo) string { return "q" }
func (b deviceBudget) Allows(_ string, taken framework.ResourceAmounts) bool {
	return taken[claimed] < b.max
}

// What a victim frees for its queue's budget includes the devices of its
// own claims: a queue that may give up one device loses one pod holding
// a device, not two; charging a victim counts its devices too.
func TestBudgetCountsClaimDevices(t *testing.T) {
	victims := tasks([]int32{0, 0}, 1, 2)
	for i, v := range victims {
		c := *v
		c.ClaimDevices = map[v1.ResourceName]int64{claimed: 1}
		victims[i] = &c
	}
	sim := &simulation{budget: deviceBudget{max: 1}, taken: map[string]framework.ResourceAmounts{}}
	if !sim.withinBudget(&candidate{victims: victims[:1]}) {
		t.Error("one victim holding one device is not within a budget of one device")
	}
	if sim.withinBudget(&candidate{victims: []*framework.TaskInfo{victims[0], tasksInOtherJob(victims[1])}}) {
		t.Error("two victims holding a device each are within a budget of one device")
	}
	sim.charge(victims[0], 1)
	if got := sim.taken["q"][claimed]; got != 1 {
		t.Errorf("charging a victim takes %d devices from its group, want 1", got)
	}
}

// tasksInOtherJob is t in a job of its own, so that the budget is asked
// for it apart.
func tasksInOtherJob(t *framework.TaskInfo) *framework.TaskInfo {
	c := *t
	c.Job = framework.JobID{Namespace: t.GetNamespace(), Name: t.GetName() + "-other"}
	return &c
}
