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

package tenancy

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

const devices v1.ResourceName = "deviceclass.resource.kubernetes.io/gpu.example.com"

// claimTask is a pending task of this scheduler requesting one CPU whose
// claims hold n devices.
func claimTask(n int64) *framework.TaskInfo {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p"}}
	t := &framework.TaskInfo{Pod: pod, Status: framework.TaskPending, Own: true,
		Requests: resources.Resource{MilliCPU: 1000, Pods: 1}}
	if n > 0 {
		t.ClaimDevices = map[v1.ResourceName]int64{devices: n}
	}
	return t
}

// A task's claim devices count against its queue, pending and running,
// beside its requests, and a change of them alone is a change of demand.
func TestUsageCountsClaimDevices(t *testing.T) {
	var u Usage
	pending := claimTask(2)
	u.AddTask(pending, 1)
	if u.Pending.Scalar[devices] != 2 || u.Pending.MilliCPU != 1000 {
		t.Errorf("pending = %v, want cpu 1 and 2 devices", u.Pending)
	}
	running := *pending
	running.Status, running.NodeName, running.Counted = framework.TaskBound, "n1", true
	u.AddTask(pending, -1)
	u.AddTask(&running, 1)
	if u.Allocated.Scalar[devices] != 2 || u.Pending.Scalar[devices] != 0 {
		t.Errorf("allocated %v, pending %v; want the 2 devices allocated", u.Allocated, u.Pending)
	}
	u.AddTask(&running, -1)
	if !u.Allocated.IsZero() || !u.Pending.IsZero() {
		t.Errorf("usage left after the task went: allocated %v, pending %v", u.Allocated, u.Pending)
	}
	if sameDemand(claimTask(1), claimTask(2)) {
		t.Error("sameDemand of tasks whose claim devices differ = true")
	}
	if !sameDemand(claimTask(2), claimTask(2)) || !sameDemand(claimTask(0), claimTask(0)) {
		t.Error("sameDemand of equal tasks = false")
	}
	if pending.Requests.Scalar != nil {
		t.Errorf("counting claim devices changed the task's requests: %v", pending.Requests)
	}
}

// QueueRequests allocates nothing for a task without claim devices.
func TestQueueRequestsWithoutClaimsAllocatesNothing(t *testing.T) {
	task := claimTask(0)
	if n := testing.AllocsPerRun(100, func() { _ = task.QueueRequests() }); n != 0 {
		t.Errorf("QueueRequests allocates %v times per call, want 0", n)
	}
	with := claimTask(3)
	if r := with.QueueRequests(); r.Scalar[devices] != 3 || r.MilliCPU != 1000 {
		t.Errorf("QueueRequests = %v, want cpu 1 and 3 devices", r)
	}
	if with.Requests.Scalar != nil {
		t.Errorf("QueueRequests changed Requests: %v", with.Requests)
	}
}
