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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// dumpFixture builds a cache with a node, a placeholder, a bound gang pod,
// a pending one, a bad gang and an unschedulable single pod.
func dumpFixture(t *testing.T) *SchedulerCache {
	t.Helper()
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("a").Group("train").MinAvailable("2").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "2"}).Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("b").Group("train").MinAvailable("2").Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("orphan").Node("gone").Phase(v1.PodRunning).Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("x").Group("bad").MinAvailable("lots").Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("solo").Priority(-1).Obj()))
	q := c.Queue()
	for range 3 {
		qj, err := q.Pop(t.Context())
		mustNoErr(t, "Pop", err)
		if qj.ID.Name == "solo" {
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "0/1 nodes fit"}))
		} else {
			mustNoErr(t, "AddUnschedulable", q.AddUnschedulable(qj, schedulingqueue.Attempt{Err: errors.New("boom")}))
		}
	}
	return c
}

func TestDump(t *testing.T) {
	c := dumpFixture(t)
	d := c.Dump()

	if len(d.Nodes) != 2 || d.Nodes[0].Name != "gone" || d.Nodes[1].Name != "n1" {
		t.Fatalf("nodes = %+v, want gone and n1, sorted", d.Nodes)
	}
	gone, n1 := d.Nodes[0], d.Nodes[1]
	if !gone.Placeholder || strings.Join(gone.Pods, ",") != "default/orphan" {
		t.Errorf("gone = %+v, want a placeholder holding default/orphan", gone)
	}
	if n1.Placeholder || n1.Requested.MilliCPU != 2000 || n1.Idle.MilliCPU != 8000 || n1.Schedulable.MilliCPU != 10000 ||
		strings.Join(n1.Pods, ",") != "default/a" || n1.Generation == 0 {
		t.Errorf("n1 = %+v", n1)
	}

	var ids []string
	for _, j := range d.Jobs {
		ids = append(ids, j.ID)
	}
	if got := strings.Join(ids, " "); got != "default/bad default/pod:orphan default/pod:solo default/train" {
		t.Fatalf("jobs = %s", got)
	}
	bad, train := d.Jobs[0], d.Jobs[3]
	if !strings.Contains(bad.ValidationError, `min-available="lots"`) || bad.MinAvailable != 0 {
		t.Errorf("bad = %+v", bad)
	}
	if train.MinAvailable != 2 || len(train.Tasks) != 2 ||
		train.Tasks[0] != (TaskDump{Pod: "default/a", UID: "uid-a", Phase: v1.PodRunning, Node: "n1", Status: framework.TaskBound, Counted: true}) ||
		train.Tasks[1] != (TaskDump{Pod: "default/b", UID: "uid-b", Phase: v1.PodPending, Status: framework.TaskPending}) {
		t.Errorf("train = %+v", train)
	}

	if d.Queue.Lengths != (schedulingqueue.Lengths{Backoff: 2, Unschedulable: 1}) {
		t.Errorf("queue lengths = %+v", d.Queue.Lengths)
	}
	if len(d.Queue.Unschedulable) != 1 || d.Queue.Unschedulable[0].ID != "default/pod:solo" || d.Queue.Unschedulable[0].Priority != -1 {
		t.Errorf("unschedulable = %+v", d.Queue.Unschedulable)
	}
	if d.Handlers.Running || d.Handlers.Synced {
		t.Errorf("handlers = %+v before Run", d.Handlers)
	}
}
