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

package cache

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// AssumePods commits a placement only if the capacity it was decided on
// has not shrunk since the snapshot by more than the room it left, and all
// or nothing. The placement is a 1-cpu pod on each of n1 and n2 (10 cpu
// each), so each node has 9 cpu of room after it.
func TestAssumePods(t *testing.T) {
	tests := []struct {
		name string
		// change runs between the snapshot and the commit.
		change  func(t *testing.T, c *SchedulerCache)
		wantErr error
	}{
		{name: "nothing changed"},
		{
			name: "a cap appears on an uncapped node",
			change: func(t *testing.T, c *SchedulerCache) {
				mustNoErr(t, "SetNodeCap", c.SetNodeCap("n2", cpu(8000)))
			},
			wantErr: ErrCapacityShrank,
		},
		{
			name: "the node's allocatable shrinks within the room left",
			change: func(t *testing.T, c *SchedulerCache) {
				n := st.MakeNode().Name("n1").Capacity(res{v1.ResourceCPU: "1", v1.ResourceMemory: "10Gi", v1.ResourcePods: "110"}).Obj()
				n.ResourceVersion = "2"
				mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(n))
			},
		},
		{
			name: "the node's allocatable shrinks below the placement",
			change: func(t *testing.T, c *SchedulerCache) {
				n := st.MakeNode().Name("n1").Capacity(res{v1.ResourceCPU: "500m", v1.ResourceMemory: "10Gi", v1.ResourcePods: "110"}).Obj()
				n.ResourceVersion = "2"
				mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(n))
			},
			wantErr: ErrCapacityShrank,
		},
		{
			name: "external usage grows within the room left",
			change: func(t *testing.T, c *SchedulerCache) {
				mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("vm-1", "n2", resources.Resource{MilliCPU: 9000}))
			},
		},
		{
			name: "external usage grows beyond the room left",
			change: func(t *testing.T, c *SchedulerCache) {
				mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("vm-1", "n2", resources.Resource{MilliCPU: 9500}))
			},
			wantErr: ErrCapacityShrank,
		},
		{
			name: "external usage grows in a resource the placement does not ask for",
			change: func(t *testing.T, c *SchedulerCache) {
				mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("vm-1", "n2", resources.Resource{Memory: 20 << 30}))
			},
		},
		{
			name: "external usage grows on another node",
			change: func(t *testing.T, c *SchedulerCache) {
				mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n3")))
				mustNoErr(t, "SetExternalUsage", c.SetExternalUsage("vm-1", "n3", resources.Resource{MilliCPU: 500}))
			},
		},
		{
			name: "a pod of the placement is assumed meanwhile",
			change: func(t *testing.T, c *SchedulerCache) {
				j, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "g", Gang: true})
				mustNoErr(t, "AssumePod", c.AssumePod(j.Pending[1], "n1"))
			},
			wantErr: ErrWrongState,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, pods := gangFixture(t, Options{})
			snap := NewSnapshot()
			mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(snap))
			seen := func(node string) *framework.NodeInfo {
				info, _ := snap.Get(node)
				return info
			}
			placements := map[string]string{string(pods[0].UID): "n1", string(pods[1].UID): "n2"}
			// The cycle places the pods on its snapshot.
			for _, p := range pods {
				snap.AddPod(placements[string(p.UID)], p)
			}
			if tt.change != nil {
				tt.change(t, c)
			}
			err := c.AssumePods(pods, placements, seen)
			checkInvariants(t, c)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("AssumePods = %v, want %v", err, tt.wantErr)
			}
			assumed := 0
			for _, p := range pods {
				if taskOf(t, c, p).Status == framework.TaskAssumed {
					assumed++
				}
			}
			switch {
			case err == nil && assumed != 2:
				t.Errorf("%d of 2 pods assumed after a successful commit", assumed)
			case err != nil && tt.wantErr == ErrCapacityShrank && assumed != 0:
				t.Errorf("%d pods assumed after a failed commit; want none", assumed)
			}
		})
	}
}

// A grant that shrinks while a cycle runs: the placement decided under
// the old cap is not committed, so no pod of ours lands above the new one.
func TestAssumePodsAfterCapShrank(t *testing.T) {
	c, _, pods := gangFixture(t, Options{})
	c.RequireNodeCaps()
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(2000)))
	snap := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(snap))
	placements := map[string]string{string(pods[0].UID): "n1", string(pods[1].UID): "n1"}
	for _, p := range pods {
		snap.AddPod("n1", p)
	}
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(1000)))
	err := c.AssumePods(pods, placements, func(node string) *framework.NodeInfo {
		info, _ := snap.Get(node)
		return info
	})
	if !errors.Is(err, ErrCapacityShrank) {
		t.Fatalf("AssumePods = %v, want ErrCapacityShrank", err)
	}
	if info, _ := c.NodeInfo("n1"); info.OwnRequested.MilliCPU != 0 {
		t.Errorf("own requested on n1 = %dm after the failed commit, want 0", info.OwnRequested.MilliCPU)
	}
	// A grant that grows does not stop a commit, nor one that shrinks
	// within what the placement left of it (4 cpu, 2 placed: 2 left).
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(snap))
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(4000)))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(snap))
	for _, p := range pods {
		snap.AddPod("n1", p)
	}
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(2000)))
	mustNoErr(t, "AssumePods", c.AssumePods(pods, placements, func(node string) *framework.NodeInfo {
		info, _ := snap.Get(node)
		return info
	}))
}
