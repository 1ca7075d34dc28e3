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

package capacity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// classDevices is the implicit resource name of the devices of class
// gpu.example.com.
const classDevices = v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpu.example.com")

// claimJob is job, whose pods each claim one device of gpu.example.com
// through a template, as the cache fills framework.Job.ClaimDevices.
func claimJob(q string, qs *framework.QueueSnapshot, minAvailable int32, pods ...*v1.Pod) *framework.Job {
	j := job(q, qs, minAvailable, pods...)
	j.ClaimDevices = map[types.UID]resources.Resource{}
	for _, p := range pods {
		j.ClaimDevices[p.UID] = resources.Resource{Scalar: map[v1.ResourceName]int64{classDevices: 1}}
	}
	return j
}

func claimPod(name string) *v1.Pod {
	return st.MakePod().Name(name).UID(name).Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
}

// A queue limited on a device class's implicit resource name stops the
// pods that claim devices of the class: two fit, the third is told that
// the queue is at its limit; a gang of three can never start. Without
// their claim devices the same pods would all pass.
func TestQueueLimitStopsClaimDevices(t *testing.T) {
	ctx := context.Background()
	limited := func() *framework.QueueSnapshot {
		return snapshot(cores(100), queue("a", "", limit(framework.ResourceAmounts{classDevices: 2})))
	}
	p0, p1, p2 := claimPod("p0"), claimPod("p1"), claimPod("p2")

	j := claimJob("a", limited(), 1, p0, p1, p2)
	pl := &Capacity{}
	state := framework.NewCycleState()
	if s := pl.PreFilter(ctx, state, j); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v, want success", s)
	}
	for _, p := range []*v1.Pod{p0, p1} {
		if s := pl.PreFilterPod(ctx, state, p, nil); !s.IsSuccess() {
			t.Fatalf("PreFilterPod(%s) = %v, want success", p.Name, s)
		}
		pl.Reserve(ctx, state, p, "node-1")
	}
	want := "queue a at its limit: " + string(classDevices) + " 2/2"
	if s := pl.PreFilterPod(ctx, state, p2, nil); s.Code() != framework.Unschedulable || s.Message() != want {
		t.Errorf("PreFilterPod(p2) with two pods reserved = %v, want Unschedulable: %q", s, want)
	}

	// The queue's running pods hold both devices already.
	full := snapshot(cores(100), queue("a", "", limit(framework.ResourceAmounts{classDevices: 2}),
		allocated(framework.ResourceAmounts{classDevices: 2})))
	if s := preFilterPod(framework.NewCycleState(), claimJob("a", full, 1, p2), p2); s.Code() != framework.Unschedulable || s.Message() != want {
		t.Errorf("PreFilterPod with the queue's devices in use = %v, want Unschedulable: %q", s, want)
	}
	if s := preFilterPod(framework.NewCycleState(), job("a", full, 1, p2), p2); !s.IsSuccess() {
		t.Errorf("PreFilterPod of a pod without claim devices = %v, want success", s)
	}

	gang := claimJob("a", limited(), 3, p0, p1, p2)
	wantGang := `the job can never start: it needs ` + string(classDevices) + ` 3 but queue "a" is limited to ` + string(classDevices) + ` 2`
	if s := pl.PreFilter(ctx, framework.NewCycleState(), gang); s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != wantGang {
		t.Errorf("PreFilter of a gang of 3 = %v, want UnschedulableAndUnresolvable: %q", s, wantGang)
	}
}
