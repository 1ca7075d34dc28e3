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
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func cpu(millis int64) resources.Resource {
	return resources.Resource{MilliCPU: millis, Memory: 1 << 40}
}

func TestNodeCaps(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch"}})
	snap := NewSnapshot()
	capOf := func(name string) *resources.Resource {
		t.Helper()
		mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(snap))
		n, ok := snap.Get(name)
		if !ok {
			t.Fatalf("node %s not in the snapshot", name)
		}
		return n.Cap
	}
	// A cap set before its node arrives applies when it does.
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(4000)))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n2")))
	if got := capOf("n1"); got == nil || got.MilliCPU != 4000 {
		t.Errorf("n1 cap = %v, want 4 cpu", got)
	}
	if got := capOf("n2"); got != nil {
		t.Errorf("n2 cap = %v before RequireNodeCaps, want none", got)
	}
	c.RequireNodeCaps()
	if got := capOf("n2"); got == nil || !got.IsZero() {
		t.Errorf("n2 cap = %v under RequireNodeCaps, want no grant (all zero)", got)
	}

	// Only this scheduler's pods count against the cap.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("ours").Node("n1").Scheduler("batch").Req(res{"cpu": "3"}).Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("theirs").Node("n1").Scheduler("other").Req(res{"cpu": "5"}).Obj()))
	info, _ := c.NodeInfo("n1")
	if info.OwnRequested.MilliCPU != 3000 || info.Requested.MilliCPU != 8000 {
		t.Errorf("own requested %s, requested %s: want 3 and 8 cpu", info.OwnRequested, info.Requested)
	}
	if idle := info.Idle(); idle.MilliCPU != 1000 {
		t.Errorf("idle cpu = %dm, want 1000m (cap 4 − own 3; the node has 2 left)", idle.MilliCPU)
	}

	// The grant shrinks below what runs: reported, counted, and cleared.
	gauge := func() float64 { return metricstest.GaugeValue(t, c.metrics.GrantOvercommittedNodes) }
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(2000)))
	ex := c.CapExceededNodes()
	if len(ex) != 1 || ex[0].Node.Name != "n1" || ex[0].Used.MilliCPU != 3000 || len(ex[0].Pods) != 1 || ex[0].Pods[0].Name != "ours" {
		t.Errorf("CapExceededNodes = %+v, want n1 with our one pod using 3 cpu", ex)
	}
	if gauge() != 1 {
		t.Errorf("grant_overcommitted_nodes = %v, want 1", gauge())
	}
	if d := c.Dump(); !nodeDump(d, "n1").CapExceeded || nodeDump(d, "n1").Cap.MilliCPU != 2000 {
		t.Errorf("dump of n1 = %+v, want the cap and capExceeded", nodeDump(d, "n1"))
	}
	_, err := c.DeletePod(st.MakePod().Name("ours").Node("n1").Scheduler("batch").Obj())
	mustNoErr(t, "DeletePod", err)
	if ex := c.CapExceededNodes(); len(ex) != 0 || gauge() != 0 {
		t.Errorf("after our pod left: CapExceededNodes = %+v, gauge %v; want none", ex, gauge())
	}

	// Removing the cap under RequireNodeCaps leaves no grant, not no cap.
	mustNoErr(t, "RemoveNodeCap", c.RemoveNodeCap("n1"))
	if got := capOf("n1"); got == nil || !got.IsZero() {
		t.Errorf("n1 cap after RemoveNodeCap = %v, want no grant", got)
	}
	mustNoErr(t, "RemoveNodeCap of nothing", c.RemoveNodeCap("n9"))
	if err := c.SetNodeCap("", cpu(1)); err == nil {
		t.Error("SetNodeCap accepted an empty node name")
	}
}

// An assumed pod is this scheduler's and counts against the cap at once.
func TestAssumedPodsCountAgainstTheCap(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch"}})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(4000)))
	p := st.MakePod().Name("p").Scheduler("batch").Req(res{"cpu": "1"}).Obj()
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	mustNoErr(t, "AssumePod", c.AssumePod(p, "n1"))
	info, _ := c.NodeInfo("n1")
	if info.OwnRequested.MilliCPU != 1000 {
		t.Errorf("own requested after assuming = %s, want 1 cpu", info.OwnRequested)
	}
}

func nodeDump(d *Dump, name string) NodeDump {
	for _, n := range d.Nodes {
		if n.Name == name {
			return n
		}
	}
	return NodeDump{}
}

// CapExceededNodes gives each pod's task, in the order of Pods, filed
// under the job the cache's rule gives it: a handler that keeps gangs
// whole reads the job there, gangs inferred from owners included.
func TestCapExceededCarriesTasks(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch"}})
	mustNoErr(t, "SetOwnerGangs", c.SetOwnerGangs(framework.AllOwnerKinds()))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(1000)))
	tests := []struct {
		name     string
		pod      *v1.Pod
		wantGang bool
		// wantOwner is set for a gang inferred from the pod's owner.
		wantOwner bool
	}{
		{name: "single", pod: st.MakePod().Name("single").Node("n1").Scheduler("batch").Req(res{"cpu": "1"}).Obj()},
		{name: "explicit gang", pod: st.MakePod().Name("member").Node("n1").Scheduler("batch").Group("g").MinAvailable("2").Req(res{"cpu": "1"}).Obj(), wantGang: true},
		{name: "inferred gang", pod: st.MakePod().Name("ray-head").Node("n1").Scheduler("batch").ControlledBy("ray.io/v1", "RayCluster", "rc", "uid-rc").Req(res{"cpu": "1"}).Obj(),
			wantGang: true, wantOwner: true},
	}
	for _, tt := range tests {
		mustNoErr(t, "AddPod", c.AddPod(tt.pod))
	}
	ex := c.CapExceededNodes()
	if len(ex) != 1 || len(ex[0].Pods) != len(tests) || len(ex[0].Tasks) != len(tests) {
		t.Fatalf("CapExceededNodes = %+v, want n1 with %d pods and as many tasks", ex, len(tests))
	}
	byName := map[string]*framework.TaskInfo{}
	for i, task := range ex[0].Tasks {
		if task.GetUID() != ex[0].Pods[i].UID {
			t.Errorf("Tasks[%d] is pod %s, Pods[%d] is %s: want the same order", i, task.GetName(), i, ex[0].Pods[i].Name)
		}
		byName[task.GetName()] = task
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := byName[tt.pod.Name]
			if task == nil {
				t.Fatalf("no task of pod %s", tt.pod.Name)
			}
			if want := c.JobIDForPod(tt.pod); task.Job != want {
				t.Errorf("job %s, want %s (the cache's rule)", task.Job, want)
			}
			if task.Job.Gang != tt.wantGang || (task.Job.Owner != "") != tt.wantOwner {
				t.Errorf("job %+v: gang %v, inferred from an owner %v; want %v, %v", task.Job, task.Job.Gang, task.Job.Owner != "", tt.wantGang, tt.wantOwner)
			}
			if task.Status != framework.TaskBound || task.Requests.MilliCPU != 1000 {
				t.Errorf("task %s: status %s, requests %s; want Bound with 1 cpu", tt.pod.Name, task.Status, task.Requests)
			}
		})
	}
}
