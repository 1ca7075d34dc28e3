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
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

func gpuNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "10", v1.ResourceMemory: "10Gi", v1.ResourcePods: "110", gpu: "8"}).Obj()
}

func TestNewNodeInfo(t *testing.T) {
	tests := []struct {
		name        string
		node        *v1.Node
		pods        []*v1.Pod
		wantCPU     int64
		wantGPU     int64
		wantStatus  []framework.TaskStatus
		placeholder bool
	}{
		{name: "empty node", node: gpuNode("n1")},
		{
			name: "bound, placed and finished pods",
			node: gpuNode("n1"),
			pods: []*v1.Pod{
				st.MakePod().Name("bound").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "1", gpu: "2"}).Obj(),
				st.MakePod().Name("placed").Req(res{v1.ResourceCPU: "2"}).Obj(),
				st.MakePod().Name("done").Node("n1").Phase(v1.PodSucceeded).Req(res{v1.ResourceCPU: "4"}).Obj(),
			},
			wantCPU: 3000, wantGPU: 2,
			wantStatus: []framework.TaskStatus{framework.TaskBound, framework.TaskAssumed, framework.TaskBound},
		},
		{
			name:        "nil node is a placeholder",
			pods:        []*v1.Pod{st.MakePod().Name("p").Req(res{v1.ResourceCPU: "1"}).Obj()},
			wantCPU:     1000,
			wantStatus:  []framework.TaskStatus{framework.TaskAssumed},
			placeholder: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := framework.NewNodeInfo(tt.node, tt.pods...)
			if n.Placeholder != tt.placeholder || n.Requested.MilliCPU != tt.wantCPU || n.Requested.Scalar[gpu] != tt.wantGPU {
				t.Errorf("framework.NodeInfo = %+v", n)
			}
			if tt.node != nil && (n.Name() != tt.node.Name || n.Node != tt.node || n.Schedulable.MilliCPU != 10000) {
				t.Errorf("node fields = %q, %v, %v", n.Name(), n.Node, n.Schedulable)
			}
			if len(n.Pods) != len(tt.wantStatus) {
				t.Fatalf("%d pods, want %d", len(n.Pods), len(tt.wantStatus))
			}
			for i, want := range tt.wantStatus {
				if got := n.Pods[i]; got.Status != want || got.NodeName != n.Name() || got.PodObject().Spec.NodeName != n.Name() {
					t.Errorf("pod %d = %+v, want %s on %q", i, got, want, n.Name())
				}
			}
			if tt.node == nil {
				return
			}
			// RemovePod undoes AddPod.
			for _, p := range tt.pods {
				if !n.RemovePod(p.UID) {
					t.Errorf("RemovePod(%s) = false", p.Name)
				}
			}
			if n.RemovePod("nope") || len(n.Pods) != 0 || n.Requested.MilliCPU != 0 || n.Requested.Scalar[gpu] != 0 {
				t.Errorf("after removing every pod: %+v", n)
			}
		})
	}
}

// Tentative placements on snapshot clones never reach the cache, and the
// next UpdateSnapshot undoes them.
func TestSnapshotAddPodIsTentative(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(gpuNode("n1")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(gpuNode("n2")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(gpuNode("n3")))
	running := st.MakePod().Name("running").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "1", gpu: "1"}).Obj()
	mustNoErr(t, "AddPod", c.AddPod(running))
	// Give the cache's Pods slice spare capacity, so that a clone sharing
	// it would write into the cache's array.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("extra").Node("n1").Obj()))
	mustNoErr(t, "RemovePod", deletePod(c, st.MakePod().Name("extra").Obj()))
	s := NewSnapshot()
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	base := s.clones

	placed := st.MakePod().Name("placed").Req(res{v1.ResourceCPU: "2", gpu: "4"}).Obj()
	n1, _ := s.Get("n1")
	s.AddPod("n1", placed)
	s.AddPod("n1", st.MakePod().Name("placed-too").Req(res{v1.ResourceCPU: "1"}).Obj())
	n2, _ := s.Get("n2")
	if s.RemovePod("n2", "nothing") { // not a change
		t.Error("RemovePod of a pod that is not there reported a removal")
	}
	if s.AddPod("gone", placed) {
		t.Error("AddPod on a node the snapshot does not have reported success")
	}
	s.AddPod("n3", st.MakePod().Name("elsewhere").Req(res{v1.ResourceCPU: "1"}).Obj())
	if n1.Requested.MilliCPU != 4000 || n1.Requested.Scalar[gpu] != 5 || len(n1.Pods) != 3 {
		t.Fatalf("n1 in the snapshot = %+v", n1)
	}
	// The cache is untouched.
	ni, _ := c.NodeInfo("n1")
	if ni.Requested.MilliCPU != 1000 || ni.Requested.Scalar[gpu] != 1 || len(ni.Pods) != 1 || ni.Pods[0].GetName() != "running" {
		t.Fatalf("the cache's n1 changed: %+v", ni)
	}
	c.mu.RLock()
	spare := c.nodes["n1"].info.Pods[:cap(c.nodes["n1"].info.Pods)]
	for _, task := range spare[1:] {
		if task != nil {
			t.Errorf("the snapshot wrote %s into the cache's slice of pods", task.Key())
		}
	}
	c.mu.RUnlock()
	checkInvariants(t, c)

	// A clone of a snapshot's framework.NodeInfo is independent of the snapshot.
	n2.Clone().AddPod(placed)
	// n3 leaves the cache.
	mustNoErr(t, "RemoveNode", c.RemoveNode(gpuNode("n3")))

	// The scheduler assumes the first placement only.
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(placed))
	mustNoErr(t, "AssumePod", c.AssumePod(placed, "n1"))
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	n1, _ = s.Get("n1")
	if n1.Requested.MilliCPU != 3000 || n1.Requested.Scalar[gpu] != 5 || len(n1.Pods) != 2 {
		t.Errorf("n1 after the update = %+v, want the running and the assumed pod", n1)
	}
	if _, ok := s.Get("n3"); ok || len(s.NodeInfos()) != 2 {
		t.Errorf("snapshot nodes = %s, want n1,n2", snapshotNames(s))
	}
	if got := s.clones - base; got != 2 {
		t.Errorf("update cloned %d nodes, want 2 (n1 as dirty and as changed)", got)
	}
	// Nothing is dirty any more.
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if got := s.clones - base; got != 2 {
		t.Errorf("a no-op update cloned %d nodes", got-2)
	}

	// A tentative removal is undone too.
	s.RemovePod("n1", running.UID)
	mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(s))
	if n1.Requested.MilliCPU != 3000 || len(n1.Pods) != 2 {
		t.Errorf("n1 after undoing a removal = %+v", n1)
	}
	if got := s.clones - base; got != 3 {
		t.Errorf("%d clones, want 3", got)
	}
}
